/// The names of everything the Redis engine keeps in Redis, under one prefix (`redis_prefix`,
/// `gondola` by default) so that several clusters, or other applications, can share a server.
/// A channel's keys carry its name in braces (`<prefix>:{<channel>}:…`): Redis Cluster hashes
/// only what is inside them, so all of a channel's keys are in one slot and one script can use
/// them together.
public struct RedisKeys: Sendable, Hashable {
    /// What every key and Pub/Sub channel starts with (without the `:` that follows it).
    public let prefix: String

    public init(prefix: String = "gondola") {
        self.prefix = prefix
    }

    /// The Pub/Sub channel every node publishes to and listens on.
    public var bus: [UInt8] { Array("\(prefix):bus".utf8) }

    /// The Pub/Sub channel of a region's events, heard only by the nodes following it.
    public func region(_ region: String) -> [UInt8] { Array("\(prefix):region:\(region)".utf8) }

    /// A channel's stream of publications and the hash of its top offset and epoch.
    public func stream(_ channel: String) -> [[UInt8]] {
        [Array("\(prefix):{\(channel)}:stream".utf8), Array("\(prefix):{\(channel)}:meta".utf8)]
    }

    /// A channel's presence: the hash of client id → info and the sorted set of expiries.
    public func presence(_ channel: String) -> [[UInt8]] {
        [Array("\(prefix):{\(channel)}:presence".utf8), Array("\(prefix):{\(channel)}:presence-expiry".utf8)]
    }

    /// The position a publication with an idempotency key answered on a channel.
    public func idempotency(channel: String, key: String) -> [UInt8] {
        Array("\(prefix):{\(channel)}:result:\(key)".utf8)
    }

    /// The node registry: uid → heartbeat entry, and uid → last heartbeat time (ms).
    public var nodes: [[UInt8]] { [Array("\(prefix):nodes".utf8), Array("\(prefix):nodes-seen".utf8)] }
}
