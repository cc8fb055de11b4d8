import GondolaHub

/// Which of several Redis servers holds a channel: Jump consistent hash (Lamping and
/// Veach) of the name's 64-bit FNV-1a hash — the scheme Centrifugo uses for its Redis
/// shards — so a channel always lands on the same shard, and going from n to n + 1
/// shards moves about one channel in n + 1.
enum RedisShards {
    /// The shard (0..<count) of `key`.
    static func index(of key: String, count: Int) -> Int {
        guard count > 1 else { return 0 }
        var hash = StableHash.fnv1a(key)
        var bucket: Int64 = -1
        var next: Int64 = 0
        while next < Int64(count) {
            bucket = next
            hash = hash &* 2_862_933_555_777_941_757 &+ 1
            next = Int64(Double(bucket + 1) * (Double(Int64(1) << 31) / Double((hash >> 33) + 1)))
        }
        return Int(bucket)
    }
}
