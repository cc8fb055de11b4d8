import GondolaRESP
import NIOCore

/// Where a client finds the Redis server it works with: one fixed address, the master that
/// a group of Sentinels names (and names anew after a failover), or the master of a Redis
/// Cluster that serves one hash slot now (and another after a failover or a resharding).
public enum RedisServer: Sendable, Hashable, CustomStringConvertible {
    case address(RedisAddress)
    case sentinel(RedisSentinel)
    case cluster(RedisClusterSlot)

    /// The address to connect to now: the fixed one, or the master the Sentinels name.
    func currentAddress(on group: any EventLoopGroup) async throws(RedisError) -> RedisAddress {
        switch self {
        case let .address(address): address
        case let .sentinel(sentinel): try await sentinel.resolve(on: group)
        case let .cluster(slot): try await slot.resolve(on: group)
        }
    }

    /// The hash tag every key and shard channel on this server carries: a Redis Cluster slot's; nil otherwise.
    public var hashTag: String? {
        if case let .cluster(slot) = self { slot.tag } else { nil }
    }

    /// Whether Pub/Sub takes Redis Cluster's shard channels (`SSUBSCRIBE`, `SPUBLISH`), which
    /// reach only the nodes serving the channel's slot, instead of channels every node hears.
    public var shardedPubSub: Bool { hashTag != nil }

    /// What logs, `/health` and metrics call it: the address, or the master's name (which
    /// stays the same across failovers); never the credentials.
    public var description: String {
        switch self {
        case let .address(address): address.description
        case let .sentinel(sentinel): sentinel.description
        case let .cluster(slot): slot.description
        }
    }
}

/// A master monitored by Redis Sentinel: the `sentinels` to ask (each with its own password,
/// if any) and the `master`'s name, credentials, database and TLS. The master's host is its
/// name as the Sentinels know it, resolved to an address before every connection; a
/// connection is only used once `ROLE` says it reached a master, so a client never writes to a
/// replica that a failover demoted.
public struct RedisSentinel: Sendable, Hashable, CustomStringConvertible {
    public let sentinels: [RedisAddress]
    /// The master: `host` is its name; `port` is unused (the Sentinels give it).
    public var master: RedisAddress

    public init(sentinels: [RedisAddress], master: RedisAddress) {
        precondition(!sentinels.isEmpty, "a Sentinel setup needs at least one Sentinel")
        self.sentinels = sentinels
        self.master = master
    }

    public var masterName: String { master.host }

    public var description: String {
        "\(masterName) via Sentinel" + (master.database == 0 ? "" : " /\(master.database)") + (master.tls == nil ? "" : " (TLS)")
    }

    /// The master's address now: the first Sentinel that answers names it (`SENTINEL
    /// get-master-addr-by-name`), with the master's credentials and TLS; throws `unavailable`
    /// with every Sentinel's reason when none does.
    public func resolve(on group: any EventLoopGroup, timeout: TimeAmount = .seconds(1)) async throws(RedisError) -> RedisAddress {
        try await RedisConnection.askInTurn(sentinels, on: group, timeout: timeout, whatFor: "no Sentinel names the master '\(masterName)'") {
            sentinel, connection throws(RedisError) in
            let answer = try await connection.send(["SENTINEL", "get-master-addr-by-name", masterName])
            guard let parts = answer.elements, parts.count == 2, let host = parts[0].string, let port = parts[1].string.flatMap({ Int($0) })
            else { return .failure("\(sentinel) does not know a master named '\(masterName)'") }
            return .success(master.moved(to: host, port: port))
        }
    }

    /// Checks that `connection` reached a master (`ROLE`); throws `unavailable` when it reached a replica.
    static func confirmMaster(_ connection: RedisConnection) async throws(RedisError) {
        let role = try await connection.send(["ROLE"])
        guard let kind = role.elements?.first?.string, kind == "master" else {
            throw .unavailable("\(connection.address) is not the master (ROLE answered \(role.elements?.first?.string ?? "\(role)"))")
        }
    }

    /// The new master's host and port when a Sentinel's `+switch-master` message (`<name> <old
    /// ip> <old port> <new ip> <new port>`) is about this master; nil otherwise.
    func switchedTo(_ payload: [UInt8]) -> (host: String, port: Int)? {
        let words = String(decoding: payload, as: UTF8.self).split(separator: " ")
        guard words.count == 5, words[0] == masterName, let port = Int(words[4]) else { return nil }
        return (String(words[3]), port)
    }
}
