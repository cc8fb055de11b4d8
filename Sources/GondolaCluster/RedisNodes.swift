import Foundation
@_spi(Engine) import GondolaHub
import GondolaProtocol
import GondolaRESP
import GondolaRedis

/// The live nodes of a cluster on Redis: each node writes its heartbeat (name,
/// version, start time and figures) every second into a hash, with the time in a
/// sorted set. A node without a heartbeat for `nodeTimeout` is not listed; one
/// silent for twelve times that is deleted by the next reader.
///
/// Keys are `RedisKeys.nodes`: `<prefix>:nodes` (uid → JSON) and `<prefix>:nodes-seen` (uid → last heartbeat, ms).
public final class RedisNodes: Sendable {
    public let redis: any RedisCommands
    public let nodeTimeout: Duration
    private let beatScript: RedisScript
    private let listScript: RedisScript
    private let leaveScript: RedisScript
    private let keys: [[UInt8]]

    public init(redis: any RedisCommands, nodeTimeout: Duration = .seconds(5), keys: RedisKeys = RedisKeys()) {
        self.redis = redis
        self.nodeTimeout = nodeTimeout
        self.keys = keys.nodes
        beatScript = RedisScript(redis: redis, source: Self.beatSource)
        listScript = RedisScript(redis: redis, source: Self.listSource)
        leaveScript = RedisScript(redis: redis, source: Self.leaveSource)
    }

    /// Writes the node's heartbeat at `now` (nil: Redis's clock, as every node uses); `startedAt`
    /// gives its uptime to readers.
    public func beat(_ node: ClusterNodeInfo, startedAt: Date, now: Date? = nil) async throws(HubError) {
        let stats = node.stats
        let entry: JSON = [
            "uid": .string(node.uid), "name": .string(node.name), "version": .string(node.version),
            "started": .int(RedisArgument.milliseconds(startedAt)), "clients": .int(Int64(stats.clients)), "users": .int(Int64(stats.users)),
            "channels": .int(Int64(stats.channels)), "subscriptions": .int(Int64(stats.subscriptions)),
        ]
        _ = try await RedisScript.answering(
            beatScript, keys: keys,
            arguments: [
                Array(node.uid.utf8), entry.bytes, RedisArgument.instant(now),
            ], what: "node registry")
    }

    /// The nodes with a heartbeat within `nodeTimeout` of `now` (nil: Redis's clock), by name then uid.
    public func nodes(now: Date? = nil) async throws(HubError) -> [ClusterNodeInfo] {
        let nowMilliseconds = RedisArgument.milliseconds(now ?? Date())
        let timeout = Int64(nodeTimeout.components.seconds * 1000)
        let answer = try await RedisScript.answering(
            listScript, keys: keys, arguments: [RedisArgument.number(timeout), RedisArgument.instant(now)], what: "node registry")
        guard let entries = answer.elements else { throw .internalError("the node registry answered \(answer)") }
        var nodes: [ClusterNodeInfo] = []
        for entry in entries {
            guard let bytes = entry.bytes, let json = try? JSONParser.parse(bytes),
                case let .string(uid)? = json["uid"], case let .string(name)? = json["name"], case let .string(version)? = json["version"],
                case let .int(started)? = json["started"]
            else {
                throw .internalError("a node registry entry is not one Gondola wrote")
            }
            func count(_ key: String) -> Int { if case let .int(value)? = json[key] { Int(value) } else { 0 } }
            nodes.append(
                ClusterNodeInfo(
                    uid: uid, name: name, version: version,
                    stats: NodeStats(
                        clients: count("clients"), users: count("users"), channels: count("channels"), subscriptions: count("subscriptions"),
                        queuedBytes: 0, uptimeSeconds: Int((nowMilliseconds - started) / 1000))))
        }
        return nodes.sorted { ($0.name, $0.uid) < ($1.name, $1.uid) }
    }

    /// Removes the node (a graceful stop).
    public func leave(uid: String) async throws(HubError) {
        _ = try await RedisScript.answering(leaveScript, keys: keys, arguments: [Array(uid.utf8)], what: "node registry")
    }

    /// KEYS: entries, seen. ARGV: uid, entry, now (ms; empty: Redis's clock).
    static let beatSource =
        RedisLua.now(from: "ARGV[3]") + """
            redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
            redis.call('ZADD', KEYS[2], now, ARGV[1])
            return 1
            """

    /// KEYS: entries, seen. ARGV: the node timeout (ms), now (ms; empty: Redis's clock). Answers
    /// the entries seen within the timeout, and forgets those unseen for twelve of them.
    static let listSource =
        RedisLua.now(from: "ARGV[2]") + RedisLua.dropMembers(scoredBelow: "now - 12 * tonumber(ARGV[1])") + """
            local live = redis.call('ZRANGEBYSCORE', KEYS[2], now - tonumber(ARGV[1]), '+inf')
            if #live == 0 then return {} end
            local entries = redis.call('HMGET', KEYS[1], unpack(live))
            local found = {}
            for _, entry in ipairs(entries) do
              if entry then table.insert(found, entry) end
            end
            return found
            """

    /// KEYS: entries, seen. ARGV: uid.
    static let leaveSource = RedisLua.removeMember
}
