import Foundation
import GondolaRESP
import GondolaRedis
import NIOPosix

/// A Redis master with one replica watched by three Sentinels (Debian's `redis-server` run with
/// `--sentinel`), all on loopback ports and all speaking TLS only with client certificates, as
/// `TestRedis` does (Sentinels that reach their servers over TLS reach each other over TLS too):
/// the master and replica need `TestRedis.password`, the Sentinels `sentinelPassword`. A master
/// unreachable for a second is failed over (two Sentinels agree).
public final class TestSentinel: @unchecked Sendable {
    /// The name the Sentinels monitor the master under.
    public static let masterName = "gondola-main"
    public static let sentinelPassword = "test-sentinel-secret"

    public let master: TestRedis
    public let replica: TestRedis
    public let sentinelPorts: [Int]
    public let folder: String
    private var sentinelPIDs: [pid_t] = []

    /// A group whose master is started with `masterArguments` added.
    public init(masterArguments: [String] = []) throws {
        let certificates = try TestRedis.certificates.get()
        let replication = ["--requirepass", TestRedis.password, "--masterauth", TestRedis.password, "--tls-replication", "yes"]
        master = try TestRedis(arguments: replication + masterArguments, password: TestRedis.password, certificates: certificates)
        replica = try TestRedis(
            arguments: replication + ["--replicaof", "127.0.0.1", "\(master.port)"], password: TestRedis.password, certificates: certificates)
        sentinelPorts = (0..<3).map { _ in TestRedis.freePort() }
        folder = NSTemporaryDirectory() + "gondola-sentinel-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    /// The Sentinels' folder (configurations and logs) goes with the last reference to the group.
    deinit {
        for pid in sentinelPIDs { kill(pid, SIGKILL) }
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// The Sentinels, as the engine reaches them (with their password).
    public var sentinels: [RedisAddress] {
        sentinelPorts.map { RedisAddress(host: "127.0.0.1", port: $0, password: Self.sentinelPassword, tls: master.address.tls) }
    }

    /// The master as a client names it: through the Sentinels, with the data servers' password and TLS.
    public var server: RedisServer {
        var master = master.address
        master = RedisAddress(host: Self.masterName, port: 6379, password: master.password, tls: master.tls)
        return .sentinel(RedisSentinel(sentinels: sentinels, master: master))
    }

    /// Runs `body` with the group started, and stops every process afterwards, also when `body` throws.
    public static func with(masterArguments: [String] = [], _ body: (TestSentinel) async throws -> Void) async throws {
        let group = try TestSentinel(masterArguments: masterArguments)
        do {
            try await group.start()
            try await body(group)
        } catch {
            await group.stop()
            throw error
        }
        await group.stop()
    }

    /// Starts the master, the replica (waiting until it is in sync) and the Sentinels (waiting
    /// until each knows the replica and the other two, so that a failover can happen).
    public func start() async throws {
        try await master.start()
        try await replica.start()
        try await eventually("the replica in sync with the master", within: .seconds(30)) {
            (try? await self.answer(self.replica.address, ["INFO", "replication"]))?.contains("master_link_status:up") == true
        }
        let certificates = try TestRedis.certificates.get()
        for (index, port) in sentinelPorts.enumerated() {
            let configuration = folder + "/sentinel-\(index).conf"
            try Data(
                """
                port 0
                tls-port \(port)
                bind 127.0.0.1
                dir \(folder)
                requirepass \(Self.sentinelPassword)
                tls-replication yes
                tls-cert-file \(certificates.serverCertificateFile)
                tls-key-file \(certificates.serverKeyFile)
                tls-ca-cert-file \(certificates.caFile)
                sentinel monitor \(Self.masterName) 127.0.0.1 \(master.port) 2
                sentinel auth-pass \(Self.masterName) \(TestRedis.password)
                sentinel down-after-milliseconds \(Self.masterName) 1000
                sentinel failover-timeout \(Self.masterName) 5000
                sentinel parallel-syncs \(Self.masterName) 1

                """.utf8
            ).write(to: URL(fileURLWithPath: configuration))
            sentinelPIDs.append(
                try TestProcess.spawn(
                    ["/usr/bin/redis-server", configuration, "--sentinel"], output: folder + "/sentinel-\(index).log",
                    errors: folder + "/sentinel-\(index).log"))
        }
        for sentinel in sentinels {
            try await eventually("Sentinel \(sentinel.port) knowing the replica and the other Sentinels", within: .seconds(60)) {
                let master = (try? await self.answer(sentinel, ["SENTINEL", "master", Self.masterName])) ?? ""
                return master.contains("num-slaves 1") && master.contains("num-other-sentinels 2")
            }
        }
    }

    /// Kills every process (SIGKILL) that still runs.
    public func stop() async {
        for pid in sentinelPIDs {
            kill(pid, SIGKILL)
            _ = try? await TestProcess.exit(of: pid, within: .seconds(10))
        }
        sentinelPIDs = []
        try? await master.stop()
        try? await replica.stop()
    }

    /// The server's answer to one command, flattened to text (`key value` pairs of a map or an array on one line each).
    public func answer(_ address: RedisAddress, _ command: [String]) async throws -> String {
        let connection = try await RedisConnection.connect(to: address, on: MultiThreadedEventLoopGroup.singleton)
        defer { connection.close() }
        let value = try await connection.send(command)
        func text(_ value: RESPValue) -> String { value.string ?? value.integer.map(String.init) ?? "\(value)" }
        switch value {
        case let .map(pairs): return pairs.map { "\(text($0.key)) \(text($0.value))" }.joined(separator: "\n")
        case let .array(items):
            return stride(from: 0, to: items.count - 1, by: 2).map { "\(text(items[$0])) \(text(items[$0 + 1]))" }.joined(separator: "\n")
        default: return text(value)
        }
    }
}
