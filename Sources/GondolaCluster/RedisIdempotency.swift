import GondolaProtocol
import GondolaRedis

/// Idempotency keys of publications on the Redis engine, kept on the channel's shard:
/// `RedisKeys.idempotency`, `<prefix>:{<channel>}:result:<key>`, holds the position the first publication with the
/// key answered (`offset:epoch`, empty without a stream) for `lifetime`, Centrifugo's
/// five minutes, and expires then (Redis keeps no more keys than five minutes of
/// publications bring). Streams check keys in their append script; publications without
/// a stream in `publishOnce`.
enum RedisIdempotency {
    static let lifetimeSeconds: Int64 = 300

    /// KEYS: the key's result. ARGV: lifetime s, bus channel, message. Publishes the
    /// message with `command` (`RedisKeys.publishCommand`) unless the key was taken within its
    /// lifetime; answers 1 when published.
    static func publishOnceSource(publishing command: String) -> String {
        """
        if redis.call('SET', KEYS[1], '', 'NX', 'EX', ARGV[1]) then
          redis.call('\(command)', ARGV[2], ARGV[3])
          return 1
        end
        return 0
        """
    }
}
