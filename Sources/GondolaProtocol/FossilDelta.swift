/// Fossil's delta format, which Centrifuge clients apply to publications of a subscription
/// that asked for `delta: "fossil"`.
///
/// A delta is text: the target's length, a newline, then commands — `N@O,` copies N bytes
/// of the source from offset O, `N:` followed by N bytes inserts those bytes — and `C;` ends
/// it with a checksum of the target. Numbers are written in base 64 with the digits
/// `0-9 A-Z _ a-z ~`, most significant first.
///
/// The encoder indexes the source in blocks of 16 bytes by a rolling hash, slides the same
/// hash over the target and, where a block matches, extends the match both ways and copies
/// it when the copy command is shorter than the bytes it replaces.
public enum FossilDelta {
    /// Why a delta could not be applied.
    public struct Failure: Error, Equatable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    static let blockSize = 16
    /// Candidate blocks examined per target position, so a source of repeated blocks stays linear.
    static let candidatesPerPosition = 250
    static let digits = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~".utf8)
    static let digitValues: [Int8] = {
        var values = [Int8](repeating: -1, count: 256)
        for (value, digit) in digits.enumerated() { values[Int(digit)] = Int8(value) }
        return values
    }()

    // MARK: Encoding

    /// The delta that turns `source` into `target`. With `keepingUTF8` (both valid UTF-8) no
    /// copy starts or ends inside a character, so every insert is whole characters and the
    /// delta itself is valid UTF-8 — what the JSON encoding needs to carry it in a string.
    public static func encode(from source: [UInt8], to target: [UInt8], keepingUTF8: Bool = false) -> [UInt8] {
        var delta: [UInt8] = []
        delta.reserveCapacity(target.count / 4 + 32)
        putInt(target.count, &delta)
        delta.append(UInt8(ascii: "\n"))
        var base = 0
        if source.count > blockSize {
            let index = BlockIndex(source)
            while base + blockSize < target.count {
                guard let found = index.bestMatch(in: target, from: base),
                    let match = keepingUTF8 ? found.onCharacterBoundaries(in: target, from: base) : found
                else {
                    // No block of the source occurs in the rest: it goes in as one insert.
                    break
                }
                if match.literalBytes > 0 {
                    insert(target[base..<(base + match.literalBytes)], &delta)
                    base += match.literalBytes
                }
                putInt(match.count, &delta)
                delta.append(UInt8(ascii: "@"))
                putInt(match.sourceOffset, &delta)
                delta.append(UInt8(ascii: ","))
                base += match.count
            }
        }
        if base < target.count { insert(target[base...], &delta) }
        putInt(Int(checksum(target)), &delta)
        delta.append(UInt8(ascii: ";"))
        return delta
    }

    private static func insert(_ bytes: ArraySlice<UInt8>, _ delta: inout [UInt8]) {
        putInt(bytes.count, &delta)
        delta.append(UInt8(ascii: ":"))
        delta.append(contentsOf: bytes)
    }

    static func putInt(_ value: Int, _ out: inout [UInt8]) {
        var shift = (digitCount(value) - 1) * 6
        while shift >= 0 {
            out.append(digits[(value >> shift) & 63])
            shift -= 6
        }
    }

    static func digitCount(_ value: Int) -> Int {
        var count = 1
        var rest = value >> 6
        while rest > 0 {
            count += 1
            rest >>= 6
        }
        return count
    }

    /// The target checksum the format ends with: the bytes summed as big-endian 32-bit words
    /// (in four lanes), the last partial word padded with zeros.
    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var sums: (UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0)
        var position = 0
        let whole = bytes.count & ~3
        while position < whole {
            sums.0 &+= UInt32(bytes[position])
            sums.1 &+= UInt32(bytes[position + 1])
            sums.2 &+= UInt32(bytes[position + 2])
            sums.3 &+= UInt32(bytes[position + 3])
            position += 4
        }
        var total = sums.3 &+ (sums.2 << 8) &+ (sums.1 << 16) &+ (sums.0 << 24)
        let tail = bytes.count - whole
        if tail >= 3 { total &+= UInt32(bytes[whole + 2]) << 8 }
        if tail >= 2 { total &+= UInt32(bytes[whole + 1]) << 16 }
        if tail >= 1 { total &+= UInt32(bytes[whole]) << 24 }
        return total
    }

    /// A copy found by the encoder: `literalBytes` of the target to insert first, then
    /// `count` bytes copied from `sourceOffset`.
    struct Match {
        let literalBytes: Int
        let count: Int
        let sourceOffset: Int

        /// The match shrunk so that it neither starts nor ends in the middle of a UTF-8
        /// character (source and target are equal over it, so both ends are boundaries in
        /// both); nil when nothing worth a copy is left.
        func onCharacterBoundaries(in target: [UInt8], from base: Int) -> Match? {
            func continues(_ position: Int) -> Bool { position < target.count && target[position] & 0xC0 == 0x80 }
            var start = base + literalBytes
            var end = start + count
            while start < end, continues(start) { start += 1 }
            while end > start, continues(end) { end -= 1 }
            let shrunk = Match(literalBytes: start - base, count: end - start, sourceOffset: sourceOffset + (start - base - literalBytes))
            let commandBytes = digitCount(shrunk.literalBytes) + digitCount(shrunk.count) + digitCount(shrunk.sourceOffset) + 3
            return shrunk.count >= commandBytes ? shrunk : nil
        }
    }

    /// The source's 16-byte blocks by rolling hash, with chains for blocks sharing a bucket.
    /// Buckets are a power of two (the hash's low bits pick one: no division per position).
    struct BlockIndex {
        let source: [UInt8]
        /// For each bucket, the last block in it (-1 when none).
        var heads: [Int32]
        /// For each block, the previous block of its bucket (-1 at the end of a chain).
        var chains: [Int32]
        let mask: UInt32

        init(_ source: [UInt8]) {
            self.source = source
            let blocks = source.count / blockSize
            var buckets = 1
            while buckets < blocks { buckets <<= 1 }
            mask = UInt32(buckets - 1)
            heads = [Int32](repeating: -1, count: buckets)
            chains = [Int32](repeating: -1, count: blocks)
            for block in 0..<blocks {
                let bucket = Int(RollingHash(source, at: block * blockSize).value & mask)
                chains[block] = heads[bucket]
                heads[bucket] = Int32(block)
            }
        }

        /// The best copy for the target from `base`: the first target position (sliding one
        /// byte at a time) where a block matches, extended both ways, kept when its command is
        /// shorter than the bytes it copies.
        func bestMatch(in target: [UInt8], from base: Int) -> Match? {
            var hash = RollingHash(target, at: base)
            var offset = 0
            while true {
                var best: Match?
                var block = heads[Int(hash.value & mask)]
                var examined = 0
                while block >= 0, examined < candidatesPerPosition {
                    examined += 1
                    let start = Int(block) * blockSize
                    block = chains[Int(block)]
                    var forward = 0
                    while start + forward < source.count, base + offset + forward < target.count,
                        source[start + forward] == target[base + offset + forward]
                    { forward += 1 }
                    guard forward > 0 else { continue }
                    var backward = 0
                    while backward < offset, backward < start, source[start - backward - 1] == target[base + offset - backward - 1] { backward += 1 }
                    let count = forward + backward
                    let literal = offset - backward
                    let commandBytes = digitCount(literal) + digitCount(count) + digitCount(start - backward) + 3
                    if count >= commandBytes, count > (best?.count ?? 0) {
                        best = Match(literalBytes: literal, count: count, sourceOffset: start - backward)
                    }
                }
                if let best { return best }
                guard base + offset + blockSize < target.count else { return nil }
                hash.roll(out: target[base + offset], in: target[base + offset + blockSize])
                offset += 1
            }
        }
    }

    /// Adler-style hash of a 16-byte window that slides one byte at a time.
    struct RollingHash {
        var a: UInt16
        var b: UInt16

        init(_ bytes: [UInt8], at start: Int) {
            a = 0
            b = 0
            for position in start..<(start + blockSize) {
                a &+= UInt16(bytes[position])
                b &+= a
            }
        }

        mutating func roll(out old: UInt8, in new: UInt8) {
            a = a &- UInt16(old) &+ UInt16(new)
            b = b &- UInt16(blockSize) &* UInt16(old) &+ a
        }

        var value: UInt32 { UInt32(a) | UInt32(b) << 16 }
    }

    // MARK: Applying

    /// The target that `delta` makes from `source`; a malformed delta, a copy outside the
    /// source, a length or a checksum that does not match throws.
    public static func apply(_ delta: [UInt8], to source: [UInt8]) throws(Failure) -> [UInt8] {
        var reader = Reader(bytes: delta)
        let length = try reader.int()
        guard reader.next() == UInt8(ascii: "\n") else { throw Failure("the length is not followed by a newline") }
        guard length <= 1 << 30 else { throw Failure("target length \(length) is too large") }
        var target: [UInt8] = []
        target.reserveCapacity(length)
        while !reader.atEnd {
            let count = try reader.int()
            switch reader.next() {
            case UInt8(ascii: "@"):
                let offset = try reader.int()
                guard reader.next() == UInt8(ascii: ",") else { throw Failure("a copy does not end with ','") }
                guard offset <= source.count, count <= source.count - offset else {
                    throw Failure("copy of \(count) bytes at \(offset) is outside the \(source.count)-byte source")
                }
                guard target.count + count <= length else { throw Failure("the copies and inserts exceed the length \(length)") }
                target.append(contentsOf: source[offset..<(offset + count)])
            case UInt8(ascii: ":"):
                guard count <= reader.remaining else { throw Failure("an insert of \(count) bytes runs past the delta") }
                guard target.count + count <= length else { throw Failure("the copies and inserts exceed the length \(length)") }
                target.append(contentsOf: reader.take(count))
            case UInt8(ascii: ";"):
                guard target.count == length else { throw Failure("the target has \(target.count) bytes, the delta says \(length)") }
                guard UInt32(truncatingIfNeeded: count) == checksum(target), count <= Int(UInt32.max) else {
                    throw Failure("checksum mismatch")
                }
                return target
            default:
                throw Failure("unknown command after a number")
            }
        }
        throw Failure("the delta ends without a checksum")
    }

    private struct Reader {
        let bytes: [UInt8]
        var position = 0

        var atEnd: Bool { position >= bytes.count }
        var remaining: Int { bytes.count - position }

        mutating func next() -> UInt8? {
            guard position < bytes.count else { return nil }
            defer { position += 1 }
            return bytes[position]
        }

        mutating func take(_ count: Int) -> ArraySlice<UInt8> {
            defer { position += count }
            return bytes[position..<(position + count)]
        }

        mutating func int() throws(Failure) -> Int {
            var value = 0
            var digits = 0
            while position < bytes.count, case let digit = digitValues[Int(bytes[position])], digit >= 0 {
                guard value < 1 << 50 else { throw Failure("a number is too large") }
                value = value << 6 + Int(digit)
                position += 1
                digits += 1
            }
            guard digits > 0 else { throw Failure("a number was expected at byte \(position)") }
            return value
        }
    }
}
