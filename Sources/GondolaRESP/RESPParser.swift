/// Why bytes from a Redis server are not RESP; the connection cannot go on after it.
public struct RESPProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public var description: String { "RESP: \(message)" }
}

/// Reads RESP2 and RESP3 values from bytes as they arrive: a value split across
/// reads answers nil until the rest is there. Limits keep a broken or hostile
/// stream from taking memory: bulk strings up to `maxBulkBytes`, aggregates up to
/// `maxElements`, nesting up to `maxDepth`.
public struct RESPParser: Sendable {
    public var maxBulkBytes = 64 << 20
    public var maxElements = 1 << 20
    public var maxDepth = 32

    public init() {}

    /// The first whole value in `bytes` and how many bytes it took; nil when the bytes end inside it.
    public func parse(_ bytes: UnsafeRawBufferPointer) throws(RESPProtocolError) -> (value: RESPValue, length: Int)? {
        var cursor = 0
        guard let value = try value(bytes, &cursor, depth: 0) else { return nil }
        return (value, cursor)
    }

    /// `parse` over an array.
    public func parse(_ bytes: [UInt8]) throws(RESPProtocolError) -> (value: RESPValue, length: Int)? {
        do {
            return try bytes.withUnsafeBytes { buffer in try parse(buffer) }
        } catch let error as RESPProtocolError {
            throw error
        } catch {
            throw RESPProtocolError(message: "\(error)")
        }
    }

    private func fail(_ message: String) -> RESPProtocolError { RESPProtocolError(message: message) }

    /// The line from `cursor` to CRLF (exclusive), moving the cursor past it; nil when incomplete.
    private func line(_ bytes: UnsafeRawBufferPointer, _ cursor: inout Int) throws(RESPProtocolError) -> Range<Int>? {
        var index = cursor
        while index + 1 < bytes.count {
            if bytes[index] == 13 {
                guard bytes[index + 1] == 10 else { throw fail("CR without LF at byte \(index)") }
                defer { cursor = index + 2 }
                return cursor..<index
            }
            if bytes[index] == 10 { throw fail("LF without CR at byte \(index)") }
            index += 1
        }
        return nil
    }

    private func text(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    private func number(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, _ what: String) throws(RESPProtocolError) -> Int64 {
        guard !range.isEmpty, range.count <= 20, let value = Int64(text(bytes, range)) else {
            throw fail("\(what) '\(text(bytes, range.prefix(24)))' is not an integer")
        }
        return value
    }

    private func value(_ bytes: UnsafeRawBufferPointer, _ cursor: inout Int, depth: Int) throws(RESPProtocolError) -> RESPValue? {
        guard cursor < bytes.count else { return nil }
        guard depth <= maxDepth else { throw fail("values nested deeper than \(maxDepth)") }
        let type = bytes[cursor]
        var next = cursor + 1
        guard let header = try line(bytes, &next) else { return nil }
        let result: RESPValue
        switch type {
        case UInt8(ascii: "+"): result = .simpleString(text(bytes, header))
        case UInt8(ascii: "-"): result = .error(text(bytes, header))
        case UInt8(ascii: ":"): result = .integer(try number(bytes, header, "integer"))
        case UInt8(ascii: "_"):
            guard header.isEmpty else { throw fail("null with content") }
            result = .null
        case UInt8(ascii: "#"):
            switch text(bytes, header) {
            case "t": result = .boolean(true)
            case "f": result = .boolean(false)
            case let other: throw fail("boolean '\(other.prefix(24))' is not t or f")
            }
        case UInt8(ascii: ","):
            let written = text(bytes, header)
            let spelled = ["inf": Double.infinity, "-inf": -Double.infinity, "nan": Double.nan][written]
            guard let value = spelled ?? Double(written) else { throw fail("double '\(written.prefix(24))' is not a number") }
            result = .double(value)
        case UInt8(ascii: "("):
            let digits = text(bytes, header)
            let unsigned = digits.hasPrefix("-") ? digits.dropFirst() : Substring(digits)
            guard !unsigned.isEmpty, unsigned.allSatisfy({ $0.isASCII && $0.isNumber }) else {
                throw fail("big number '\(digits.prefix(24))' is not an integer")
            }
            result = .bigNumber(digits)
        case UInt8(ascii: "$"), UInt8(ascii: "!"), UInt8(ascii: "="):
            let length = try number(bytes, header, "length")
            if length == -1, type == UInt8(ascii: "$") {
                result = .null
                break
            }
            guard (0...Int64(maxBulkBytes)).contains(length) else { throw fail("string length \(length) is outside 0...\(maxBulkBytes)") }
            let end = next + Int(length)
            guard end + 2 <= bytes.count else { return nil }
            guard bytes[end] == 13, bytes[end + 1] == 10 else { throw fail("string of \(length) bytes is not followed by CRLF") }
            let body = next..<end
            next = end + 2
            switch type {
            case UInt8(ascii: "$"): result = .bulkString(Array(UnsafeRawBufferPointer(rebasing: bytes[body])))
            case UInt8(ascii: "!"): result = .error(text(bytes, body))
            default:
                guard body.count >= 4, bytes[body.lowerBound + 3] == UInt8(ascii: ":") else { throw fail("verbatim string without a format") }
                result = .verbatim(
                    format: text(bytes, body.lowerBound..<(body.lowerBound + 3)), text: text(bytes, (body.lowerBound + 4)..<body.upperBound))
            }
        case UInt8(ascii: "*"), UInt8(ascii: "~"), UInt8(ascii: ">"), UInt8(ascii: "%"), UInt8(ascii: "|"):
            let count = try number(bytes, header, "count")
            if count == -1, type == UInt8(ascii: "*") {
                result = .null
                break
            }
            guard (0...Int64(maxElements)).contains(count) else { throw fail("aggregate of \(count) elements is outside 0...\(maxElements)") }
            let isMap = type == UInt8(ascii: "%") || type == UInt8(ascii: "|")
            var items: [RESPValue] = []
            items.reserveCapacity(min(Int(count) * (isMap ? 2 : 1), 1024))
            for _ in 0..<(Int(count) * (isMap ? 2 : 1)) {
                guard let item = try value(bytes, &next, depth: depth + 1) else { return nil }
                items.append(item)
            }
            switch type {
            case UInt8(ascii: "*"): result = .array(items)
            case UInt8(ascii: "~"): result = .set(items)
            case UInt8(ascii: ">"): result = .push(items)
            case UInt8(ascii: "%"): result = .map(stride(from: 0, to: items.count, by: 2).map { RESPPair(key: items[$0], value: items[$0 + 1]) })
            default:
                // An attribute describes the value that follows it; the value is what counts.
                guard let described = try value(bytes, &next, depth: depth + 1) else { return nil }
                result = described
            }
        default:
            throw fail("unknown type byte 0x\(String(type, radix: 16)) at byte \(cursor)")
        }
        cursor = next
        return result
    }
}

/// Writes commands as RESP arrays of bulk strings, as every Redis command is sent.
public enum RESPCommand {
    /// The bytes of one command.
    public static func encode(_ arguments: [[UInt8]], into output: inout [UInt8]) {
        output.append(UInt8(ascii: "*"))
        output.append(contentsOf: String(arguments.count).utf8)
        output.append(contentsOf: [13, 10])
        for argument in arguments {
            output.append(UInt8(ascii: "$"))
            output.append(contentsOf: String(argument.count).utf8)
            output.append(contentsOf: [13, 10])
            output.append(contentsOf: argument)
            output.append(contentsOf: [13, 10])
        }
    }
}
