import Foundation
import GondolaDomain

/// Ids for outbox rows: version-7 UUIDs (RFC 9562) in lowercase text, which APNs takes as
/// `apns-id`. The millisecond clock comes first, so rows queued together sit together in
/// the outbox's primary key, and a claim or a batch of answers touches a few pages, not one
/// each; 74 bits are random. The random bytes of up to `idsPerDraw` ids are drawn from the
/// system's generator in one call (`getentropy`), not two calls per id: an announcement
/// queues a hundred thousand rows at once.
struct OutboxIDs {
    /// `getentropy` gives at most 256 bytes a call: 16 ids.
    static let idsPerDraw = 16

    private var random: [UInt8] = []
    private var used = 0
    private var expected: Int

    /// Ids for about `expected` rows (it sizes the first draw; more may be taken).
    init(expected: Int) {
        self.expected = max(1, expected)
    }

    /// The next id, stamped with `now` (milliseconds since 1970).
    mutating func next(now: Int64 = unixMilliseconds()) -> String {
        if used + 16 > random.count { draw() }
        defer {
            used += 16
            expected = max(1, expected - 1)
        }
        return random.withUnsafeBufferPointer { random in
            String(unsafeUninitializedCapacity: 36) { text in
                var written = 0
                for index in 0..<16 {
                    var byte = random[used + index]
                    if index < 6 { byte = UInt8(truncatingIfNeeded: now >> (8 * (5 - index))) }
                    if index == 6 { byte = 0x70 | (byte & 0x0F) }
                    if index == 8 { byte = 0x80 | (byte & 0x3F) }
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[written] = UInt8(ascii: "-")
                        written += 1
                    }
                    text[written] = Self.hexDigits[Int(byte >> 4)]
                    text[written + 1] = Self.hexDigits[Int(byte & 0x0F)]
                    written += 2
                }
                return written
            }
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Fills the random bytes for the ids still expected, at most `idsPerDraw`.
    private mutating func draw() {
        random = [UInt8](repeating: 0, count: min(expected, Self.idsPerDraw) * 16)
        used = 0
        let failed = random.withUnsafeMutableBytes { getentropy($0.baseAddress!, $0.count) } != 0
        // As the standard library's generator does, stop rather than use bytes that are not random.
        if failed { fatalError("the system's random generator failed: errno \(errno)") }
    }
}
