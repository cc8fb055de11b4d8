/// Hashes that every node and every run compute alike (Swift's `Hasher` is seeded per
/// process, so it cannot place a key the same way on two nodes).
public enum StableHash {
    /// The 64-bit FNV-1a hash of `text`'s UTF-8 bytes.
    public static func fnv1a(_ text: String) -> UInt64 {
        var hash: UInt64 = 14_695_981_039_346_656_037
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 1_099_511_628_211
        }
        return hash
    }

    /// The member of `candidates` that owns `key` by rendezvous (highest random weight)
    /// hashing: every node given the same candidates picks the same one, and a candidate
    /// leaving moves only the keys it owned. Nil when there is no candidate.
    public static func owner(of key: String, among candidates: some Sequence<String>) -> String? {
        candidates.map { (name: $0, weight: weight($0, key)) }.max { ($0.weight, $0.name) < ($1.weight, $1.name) }?.name
    }

    private static func weight(_ candidate: String, _ key: String) -> UInt64 {
        // A final avalanche step, so that candidates whose names differ only at the end
        // do not get neighbouring weights.
        var hash = fnv1a("\(candidate)\u{0}\(key)")
        hash ^= hash >> 33
        hash = hash &* 0xff51_afd7_ed55_8ccd
        hash ^= hash >> 33
        return hash
    }
}
