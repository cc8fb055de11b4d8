import Foundation

/// Writes JSON values compactly as UTF-8 bytes.
///
/// Strings are escaped so that the output never contains a raw newline, which
/// keeps every value on one line of a newline-delimited frame.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []

    public init(reservingCapacity capacity: Int = 64) {
        bytes.reserveCapacity(capacity)
    }

    public mutating func write(_ value: JSON) {
        switch value {
        case .null: appendASCII("null")
        case let .bool(flag): appendASCII(flag ? "true" : "false")
        case let .int(number): appendInteger(number)
        case let .double(number): writeDouble(number)
        case let .string(text): writeString(text)
        case let .array(elements):
            bytes.append(UInt8(ascii: "["))
            for (position, element) in elements.enumerated() {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case let .object(members):
            bytes.append(UInt8(ascii: "{"))
            for (position, member) in members.enumerated() {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                writeString(member.key)
                bytes.append(UInt8(ascii: ":"))
                write(member.value)
            }
            bytes.append(UInt8(ascii: "}"))
        case let .raw(raw):
            // A raw newline can only be white space between tokens; it would end the frame's line.
            // memchr looks for it many bytes at a time: a nearby frame carries a few kilobytes.
            let hasNewline = raw.bytes.withUnsafeBufferPointer { bytes in
                bytes.baseAddress.map { memchr($0, 0x0A, bytes.count) != nil } ?? false
            }
            if hasNewline {
                bytes.append(contentsOf: raw.bytes.lazy.filter { $0 != 0x0A })
            } else {
                bytes.append(contentsOf: raw.bytes)
            }
        }
    }

    /// Appends text the caller knows to be JSON syntax needing no escaping:
    /// punctuation and member names such as `{"lat":`. Writers of hot paths use it
    /// with `writeString` and `writeNumber` to write a value without building a `JSON` tree.
    public mutating func writeSyntax(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Appends bytes written earlier by a `JSONWriter` (a fragment kept to be copied
    /// into many documents).
    public mutating func writeBytes(_ fragment: [UInt8]) {
        bytes.append(contentsOf: fragment)
    }

    /// Writes a number the way `write(.double(number))` does.
    public mutating func writeNumber(_ number: Double) { writeDouble(number) }

    /// Writes an integer the way `write(.int(number))` does.
    public mutating func writeNumber(_ number: Int64) { appendInteger(number) }

    private mutating func writeDouble(_ number: Double) {
        guard number.isFinite else {
            appendASCII("null")
            return
        }
        if number == number.rounded(), abs(number) < 1e15 {
            appendInteger(Int64(number))
        } else {
            appendASCII(number.description)
        }
    }

    private mutating func appendASCII(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// The decimal digits of `number`, as `String(number)` spells them.
    private mutating func appendInteger(_ number: Int64) {
        if number < 0 { bytes.append(UInt8(ascii: "-")) }
        var rest = number.magnitude
        guard rest >= 10 else {
            bytes.append(UInt8(ascii: "0") + UInt8(rest))
            return
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = digits.count
            while rest > 0 {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    public mutating func writeString(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        // Most strings need no escaping: copied in one go.
        let copied = text.utf8.withContiguousStorageIfAvailable { utf8 in
            guard !utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else { return false }
            bytes.append(contentsOf: utf8)
            return true
        }
        if copied == true {
            bytes.append(UInt8(ascii: "\""))
            return
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0x08: bytes.append(contentsOf: [0x5C, UInt8(ascii: "b")])
            case 0x0C: bytes.append(contentsOf: [0x5C, UInt8(ascii: "f")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
