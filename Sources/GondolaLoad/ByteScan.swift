/// Light scans over received bytes, for the fields the load generator needs
/// (send stamps, reply ids) without decoding whole messages.
public enum ByteScan {
    /// Where `marker` first starts in `bytes` at or after `start`.
    public static func find<Bytes: RandomAccessCollection>(_ marker: [UInt8], in bytes: Bytes, from start: Bytes.Index) -> Bytes.Index?
    where Bytes.Element == UInt8 {
        guard let first = marker.first else { return start }
        var index = start
        while index < bytes.endIndex {
            if bytes[index] == first {
                var candidate = index
                var matched = 0
                while matched < marker.count, candidate < bytes.endIndex, bytes[candidate] == marker[matched] {
                    matched += 1
                    candidate = bytes.index(after: candidate)
                }
                if matched == marker.count { return index }
                if candidate == bytes.endIndex { return nil }
            }
            index = bytes.index(after: index)
        }
        return nil
    }

    /// The unsigned decimal integer starting at `index`, and where it ends; nil without a digit.
    public static func integer<Bytes: RandomAccessCollection>(in bytes: Bytes, at index: Bytes.Index) -> (value: Int64, end: Bytes.Index)?
    where Bytes.Element == UInt8 {
        var value: Int64 = 0
        var cursor = index
        while cursor < bytes.endIndex, bytes[cursor] >= 0x30, bytes[cursor] <= 0x39, value < Int64.max / 10 {
            value = value * 10 + Int64(bytes[cursor] - 0x30)
            cursor = bytes.index(after: cursor)
        }
        return cursor == index ? nil : (value, cursor)
    }

    /// Every integer that follows an occurrence of `marker`, in order.
    public static func integers<Bytes: RandomAccessCollection>(after marker: [UInt8], in bytes: Bytes, _ each: (Int64) -> Void)
    where Bytes.Element == UInt8 {
        var index = bytes.startIndex
        while let found = find(marker, in: bytes, from: index) {
            let start = bytes.index(found, offsetBy: marker.count)
            if let (value, end) = integer(in: bytes, at: start) {
                each(value)
                index = end
            } else {
                index = start
            }
        }
    }

    /// How many times `marker` occurs.
    public static func count<Bytes: RandomAccessCollection>(_ marker: [UInt8], in bytes: Bytes) -> Int where Bytes.Element == UInt8 {
        var count = 0
        var index = bytes.startIndex
        while let found = find(marker, in: bytes, from: index) {
            count += 1
            index = bytes.index(found, offsetBy: marker.count)
        }
        return count
    }
}
