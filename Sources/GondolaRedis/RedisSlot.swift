/// Redis Cluster's hash slots: a key's slot is the CRC16 (XMODEM) of its hash tag — what is
/// between the first `{` and the next `}`, when that is not empty — or else of the whole key,
/// modulo 16384. Keys (and shard channels) with the same hash tag share a slot, so one script
/// can use them together and one node serves them all.
///
/// Written here because it is a dozen lines of Redis's own specification that no package on
/// this project's list provides.
public enum RedisSlot {
    /// How many slots a Redis Cluster has.
    public static let count = 16_384

    /// The slot of `key`.
    public static func of(_ key: some Collection<UInt8>) -> Int {
        let bytes = Array(key)
        var hashed = bytes[...]
        if let open = bytes.firstIndex(of: UInt8(ascii: "{")),
            let close = bytes[(open + 1)...].firstIndex(of: UInt8(ascii: "}")), close > open + 1
        {
            hashed = bytes[(open + 1)..<close]
        }
        var crc: UInt16 = 0
        for byte in hashed { crc = (crc << 8) ^ table[Int((crc >> 8) ^ UInt16(byte))] }
        return Int(crc) % count
    }

    /// The slot of a text key.
    public static func of(_ key: String) -> Int { of(Array(key.utf8)) }

    /// `count` short hash tags, the i-th in the i-th of `count` equal ranges of slots, so that
    /// channels spread over the tags spread over the nodes of a cluster whose slots are split
    /// in ranges (as `redis-cli --cluster create` splits them). Each tag is the first decimal
    /// number, in order, whose slot is in its range.
    public static func evenTags(count tags: Int) -> [String] {
        precondition((1...count).contains(tags), "between 1 and \(count) tags")
        var found = [String?](repeating: nil, count: tags)
        var missing = tags
        var candidate = 0
        while missing > 0 {
            let tag = String(candidate)
            let range = of(tag) * tags / count
            if found[range] == nil {
                found[range] = tag
                missing -= 1
            }
            candidate += 1
        }
        return found.map { $0! }
    }

    /// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), one entry per byte value.
    private static let table: [UInt16] = (0..<256).map { byte in
        var crc = UInt16(byte) << 8
        for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        return crc
    }
}
