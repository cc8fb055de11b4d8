/// The names of everything the Redis engine keeps in Redis, under one prefix (`redis_prefix`,
/// `gondola` by default) so that several clusters, or other applications, can share a server.
///
/// Every name carries a hash tag in braces, which is all Redis Cluster hashes, so that the
/// keys one script uses together are in one slot:
/// - on servers the engine shards itself, a channel's keys carry its name
///   (`<prefix>:{<channel>}:stream`), and Pub/Sub channels none (`<prefix>:bus`);
/// - on a Redis Cluster, every name of a partition carries the partition's tag
///   (`<prefix>:{<tag>}:<channel>:stream`, `<prefix>:{<tag>}:bus`), so that a script can
///   append to a channel's stream and publish on its partition's shard channel at once.
public struct RedisKeys: Sendable, Hashable {
    /// What every key and Pub/Sub channel starts with (without the `:` that follows it).
    public let prefix: String
    /// The Redis Cluster partition's hash tag, in every name; nil off Redis Cluster.
    public let hashTag: String?

    public init(prefix: String = "gondola", hashTag: String? = nil) {
        self.prefix = prefix
        self.hashTag = hashTag
    }

    /// The same names in the Redis Cluster slot of `tag` (unchanged for nil).
    public func inSlot(of tag: String?) -> RedisKeys { RedisKeys(prefix: prefix, hashTag: tag) }

    /// The command that publishes on these Pub/Sub channels: a partition's are shard channels.
    public var publishCommand: String { hashTag == nil ? "PUBLISH" : "SPUBLISH" }

    /// The Pub/Sub channel every node publishes to and listens on.
    public var bus: [UInt8] { shared("bus") }

    /// The Pub/Sub channel of a region's events, heard only by the nodes following it.
    public func region(_ region: String) -> [UInt8] { shared("region:\(region)") }

    /// A channel's stream of publications and the hash of its top offset and epoch.
    public func stream(_ channel: String) -> [[UInt8]] { [key(channel, "stream"), key(channel, "meta")] }

    /// A channel's presence: the hash of client id → info and the sorted set of expiries.
    public func presence(_ channel: String) -> [[UInt8]] { [key(channel, "presence"), key(channel, "presence-expiry")] }

    /// The position a publication with an idempotency key answered on a channel.
    public func idempotency(channel: String, key name: String) -> [UInt8] { key(channel, "result:\(name)") }

    /// The node registry: uid → heartbeat entry, and uid → last heartbeat time (ms).
    public var nodes: [[UInt8]] { [shared("nodes"), shared("nodes-seen")] }

    /// A name that belongs to no channel.
    private func shared(_ name: String) -> [UInt8] {
        Array((hashTag.map { "\(prefix):{\($0)}:\(name)" } ?? "\(prefix):\(name)").utf8)
    }

    /// One of a channel's keys.
    private func key(_ channel: String, _ name: String) -> [UInt8] {
        Array((hashTag.map { "\(prefix):{\($0)}:\(channel):\(name)" } ?? "\(prefix):{\(channel)}:\(name)").utf8)
    }
}
