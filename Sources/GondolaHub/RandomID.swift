/// Fresh random identifiers: a prefix followed by lowercase hex digits drawn from the
/// system's random source (no file is opened and nothing is allocated beyond the string).
public enum RandomID {
    /// `prefix` and `hexDigits` (1...32) random lowercase hex digits.
    public static func make(_ prefix: String, hexDigits: Int = 16) -> String {
        precondition((1...32).contains(hexDigits), "hexDigits must be 1...32")
        var generator = SystemRandomNumberGenerator()
        var id = prefix
        id.reserveCapacity(prefix.utf8.count + hexDigits)
        var remaining = hexDigits
        while remaining > 0 {
            var bits = generator.next() as UInt64
            for _ in 0..<min(remaining, 16) {
                id.unicodeScalars.append(digits[Int(bits & 0xF)])
                bits >>= 4
            }
            remaining -= 16
        }
        return id
    }

    private static let digits: [Unicode.Scalar] = Array("0123456789abcdef".unicodeScalars)
}
