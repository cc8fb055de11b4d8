import Foundation
@_spi(Engine) import GondolaHub
import GondolaProtocol
import GondolaRESP
import GondolaRedis

/// Channel presence kept in Redis, shared by every node: per channel a hash of
/// client id → client info (`conn_info` and `chan_info` kept byte for byte) and a
/// sorted set of client id → the time its entry expires. A node adds its
/// subscribers again before `ttl` runs out; entries of a node that stopped (killed,
/// cut off) expire with it, and readers drop expired entries as they read. Each call
/// is one Lua script, so hash and set never disagree.
///
/// Keys are `RedisKeys.presence`: `<prefix>:{<channel>}:presence` and `<prefix>:{<channel>}:presence-expiry`.
@_spi(Engine) public final class RedisPresence: PresenceManager {
    public let redis: any RedisCommands
    /// How long an entry lasts without being added again.
    public let ttl: Duration
    public let keys: RedisKeys
    private let addScript: RedisScript
    private let removeScript: RedisScript
    private let readScript: RedisScript

    public init(redis: any RedisCommands, ttl: Duration = .seconds(60), keys: RedisKeys = RedisKeys()) {
        self.redis = redis
        self.ttl = ttl
        self.keys = keys
        addScript = RedisScript(redis: redis, source: Self.addSource)
        removeScript = RedisScript(redis: redis, source: Self.removeSource)
        readScript = RedisScript(redis: redis, source: Self.readSource)
    }

    public func addPresence(channel: String, info: ClientInfo) async throws(HubError) {
        try await addPresence(channel: channel, info: info, now: nil)
    }

    /// `addPresence` at `now` (the entry expires `ttl` after it); nil: Redis's clock, as every node uses.
    public func addPresence(channel: String, info: ClientInfo, now: Date?) async throws(HubError) {
        _ = try await RedisScript.answering(
            addScript, keys: keys.presence(channel),
            arguments: [
                Array(info.client.utf8), info.json.bytes, RedisArgument.number(Int64(ttl.components.seconds * 1000)),
                RedisArgument.number(RedisArgument.seconds(ttl)), RedisArgument.instant(now),
            ], what: "presence")
    }

    public func removePresence(channel: String, client: String) async throws(HubError) {
        _ = try await RedisScript.answering(removeScript, keys: keys.presence(channel), arguments: [Array(client.utf8)], what: "presence")
    }

    public func presence(channel: String) async throws(HubError) -> [String: ClientInfo] {
        try await presence(channel: channel, now: nil)
    }

    /// The channel's entries that have not expired at `now` (nil: Redis's clock).
    public func presence(channel: String, now: Date?) async throws(HubError) -> [String: ClientInfo] {
        let answer = try await RedisScript.answering(
            readScript, keys: keys.presence(channel), arguments: [RedisArgument.instant(now)], what: "presence")
        guard let items = answer.elements, items.count % 2 == 0 else { throw .internalError("the presence script answered \(answer)") }
        var entries: [String: ClientInfo] = [:]
        for index in stride(from: 0, to: items.count, by: 2) {
            guard let client = items[index].string, let bytes = items[index + 1].bytes else {
                throw .internalError("a presence entry of \(channel) is not one Gondola wrote")
            }
            do {
                entries[client] = try ClientInfo(json: BusCodec.parse(bytes))
            } catch {
                throw .internalError("a presence entry of \(channel) is not client info: \(error)")
            }
        }
        return entries
    }

    /// KEYS: hash, expiry set. ARGV: client, info, TTL (ms), TTL (s), now (ms; empty: Redis's clock).
    static let addSource =
        RedisLua.now(from: "ARGV[5]") + """
            redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
            redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
            redis.call('EXPIRE', KEYS[1], ARGV[4])
            redis.call('EXPIRE', KEYS[2], ARGV[4])
            return 1
            """

    /// KEYS: hash, expiry set. ARGV: client.
    static let removeSource = RedisLua.removeMember

    /// KEYS: hash, expiry set. ARGV: now (ms; empty: Redis's clock). Drops what expired, answers
    /// the rest as client, info pairs.
    static let readSource =
        RedisLua.now(from: "ARGV[1]") + RedisLua.dropMembers(scoredBelow: "now") + """
            local entries = redis.call('HGETALL', KEYS[1])
            if entries['map'] then
              local pairs_ = {}
              for key, value in pairs(entries['map']) do
                table.insert(pairs_, key)
                table.insert(pairs_, value)
              end
              return pairs_
            end
            return entries
            """
}
