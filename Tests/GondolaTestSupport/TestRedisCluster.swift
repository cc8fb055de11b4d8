import Foundation
import GondolaRESP
import GondolaRedis
import NIOPosix

/// A Redis Cluster of three masters (Debian's `redis-server` with `--cluster-enabled`), on
/// loopback ports, that needs `TestRedis.password` and speaks TLS only with client
/// certificates, between its nodes too (`tls-cluster`). The slots are split in three ranges,
/// as `redis-cli --cluster create` splits them; `moveSlot` moves one as `redis-cli --cluster
/// reshard` does (importing, migrating, `MIGRATE` of its keys, then the new owner).
public final class TestRedisCluster: @unchecked Sendable {
    public let masters: [TestRedis]
    /// Each master's cluster bus port (chosen here: the default, port + 10000, may not exist).
    private let busPorts: [Int]

    public init() throws {
        let certificates = try TestRedis.certificates.get()
        var masters: [TestRedis] = []
        var busPorts: [Int] = []
        for _ in 0..<3 {
            let busPort = TestRedis.freePort()
            busPorts.append(busPort)
            masters.append(
                try TestRedis(
                    arguments: [
                        "--requirepass", TestRedis.password, "--masterauth", TestRedis.password, "--cluster-enabled", "yes",
                        "--cluster-config-file", "nodes.conf", "--cluster-port", "\(busPort)", "--tls-cluster", "yes",
                        "--tls-replication", "yes", "--cluster-node-timeout", "2000",
                    ], password: TestRedis.password, certificates: certificates))
        }
        self.masters = masters
        self.busPorts = busPorts
    }

    /// The nodes a client is given to find the slots.
    public var seeds: [RedisAddress] { masters.map(\.address) }

    /// Runs `body` with the cluster formed, and stops every node afterwards, also when `body` throws.
    public static func with(_ body: (TestRedisCluster) async throws -> Void) async throws {
        let cluster = try TestRedisCluster()
        do {
            try await cluster.start()
            try await body(cluster)
        } catch {
            await cluster.stop()
            throw error
        }
        await cluster.stop()
    }

    /// Starts the nodes, gives each a third of the slots, makes them meet, and waits until every
    /// node says the cluster is ok.
    public func start() async throws {
        for master in masters { try await master.start() }
        let third = RedisSlot.count / 3
        for (index, master) in masters.enumerated() {
            let last = index == 2 ? RedisSlot.count - 1 : (index + 1) * third - 1
            _ = try await command(master.address, ["CLUSTER", "ADDSLOTSRANGE", "\(index * third)", "\(last)"])
        }
        for (index, master) in masters.enumerated().dropFirst() {
            _ = try await command(masters[0].address, ["CLUSTER", "MEET", "127.0.0.1", "\(master.port)", "\(busPorts[index])"])
        }
        for master in masters {
            try await eventually("node \(master.port) seeing the cluster ok", within: .seconds(60)) {
                let info = (try? await self.command(master.address, ["CLUSTER", "INFO"]).string) ?? ""
                return info.contains("cluster_state:ok") && info.contains("cluster_known_nodes:3")
            }
        }
    }

    /// Kills every node.
    public func stop() async {
        for master in masters { try? await master.stop() }
    }

    /// The master that serves `slot` now, as the first node says (`CLUSTER SLOTS`, read as clients read it).
    public func owner(of slot: Int) async throws -> TestRedis {
        let ranges = try await command(masters[0].address, ["CLUSTER", "SLOTS"])
        guard let (_, port) = RedisClusterSlot.master(of: slot, in: ranges), let owner = masters.first(where: { $0.port == port }) else {
            throw TestRedisError("no node serves slot \(slot)")
        }
        return owner
    }

    /// Moves `slot` to `target`: marks it importing there and migrating at its owner, then,
    /// after `migrating` runs (a moment when some of its keys may have moved and others not),
    /// moves every key with `MIGRATE` and tells every node the new owner.
    public func moveSlot(_ slot: Int, to target: TestRedis, migrating: () async throws -> Void = {}) async throws {
        let source = try await owner(of: slot)
        guard source !== target else { return }
        let sourceID = try await command(source.address, ["CLUSTER", "MYID"]).string ?? ""
        let targetID = try await command(target.address, ["CLUSTER", "MYID"]).string ?? ""
        _ = try await command(target.address, ["CLUSTER", "SETSLOT", "\(slot)", "IMPORTING", sourceID])
        _ = try await command(source.address, ["CLUSTER", "SETSLOT", "\(slot)", "MIGRATING", targetID])
        try await migrating()
        while true {
            let keys = try await command(source.address, ["CLUSTER", "GETKEYSINSLOT", "\(slot)", "100"]).elements?.compactMap(\.string) ?? []
            if keys.isEmpty { break }
            try await migrate(keys, from: source, to: target)
        }
        for master in masters { _ = try await command(master.address, ["CLUSTER", "SETSLOT", "\(slot)", "NODE", targetID]) }
    }

    /// Moves the keys of `slot` that `keys` names (a part of them, during a move) from its owner to `target`.
    public func migrate(_ keys: [String], of slot: Int, to target: TestRedis) async throws {
        try await migrate(keys, from: try await owner(of: slot), to: target)
    }

    private func migrate(_ keys: [String], from source: TestRedis, to target: TestRedis) async throws {
        _ = try await command(
            source.address, ["MIGRATE", "127.0.0.1", "\(target.port)", "", "0", "5000", "AUTH", TestRedis.password, "KEYS"] + keys)
    }

    /// One command's answer from the node at `address`.
    public func command(_ address: RedisAddress, _ command: [String]) async throws -> RESPValue {
        let connection = try await RedisConnection.connect(to: address, on: MultiThreadedEventLoopGroup.singleton)
        defer { connection.close() }
        return try await connection.send(command)
    }
}
