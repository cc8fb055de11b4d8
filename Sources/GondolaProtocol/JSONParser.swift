/// Why a byte sequence is not one valid JSON value, with the byte offset where parsing stopped.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public let offset: Int
    public let reason: String

    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

/// A strict RFC 8259 parser over UTF-8 bytes, with a nesting limit.
public struct JSONParser {
    /// Deepest nesting of arrays and objects accepted.
    public static let maxDepth = 64

    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0
    /// Members whose values are kept as their bytes (`JSON.raw`) instead of parsed into a tree.
    private let rawMembers: Set<String>
    /// The nesting depth (1: the top object) whose members `rawMembers` names; nil: any.
    private let rawDepth: Int?

    private init(_ bytes: [UInt8], rawMembers: Set<String> = [], rawDepth: Int? = nil) {
        self.bytes = bytes
        self.rawMembers = rawMembers
        self.rawDepth = rawDepth
    }

    /// Parses exactly one JSON value; leading and trailing white space is allowed. The
    /// values of object members named in `rawMembers` (in objects at `depth` only, when
    /// given; 1 is the top object) are checked and kept as they were written (`JSON.raw`),
    /// so that payloads pass on byte for byte.
    public static func parse(
        _ input: some Collection<UInt8>, keepingRaw rawMembers: Set<String> = [],
        atDepth depth: Int? = nil
    ) throws(JSONParseError) -> JSON {
        var parser = JSONParser(Array(input), rawMembers: rawMembers, rawDepth: depth)
        let (value, _) = try parser.parseWhole()
        return value
    }

    /// The bytes of the one JSON value in `input`, without the white space around it;
    /// thrown when `input` is not exactly one JSON value.
    public static func valueSpan(of input: some Collection<UInt8>) throws(JSONParseError) -> ArraySlice<UInt8> {
        var parser = JSONParser(Array(input))
        let (_, span) = try parser.parseWhole()
        return parser.bytes[span]
    }

    private mutating func parseWhole() throws(JSONParseError) -> (JSON, Range<Int>) {
        skipWhitespace()
        let start = index
        let value = try parseValue()
        let end = index
        skipWhitespace()
        guard index == bytes.count else { throw error("unexpected data after the value") }
        return (value, start..<end)
    }

    /// Parses a string's UTF-8 as one JSON value.
    public static func parse(_ text: String) throws(JSONParseError) -> JSON {
        try parse(Array(text.utf8))
    }

    private func error(_ reason: String) -> JSONParseError { JSONParseError(offset: index, reason: reason) }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue() throws(JSONParseError) -> JSON {
        guard index < bytes.count else { throw error("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("unexpected character")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error("unexpected end of input") }
        let matches = literal.withUTF8Buffer { expected in
            (0..<count).allSatisfy { bytes[index + $0] == expected[$0] }
        }
        guard matches else { throw error("invalid literal") }
        index += count
    }

    private mutating func enterContainer() throws(JSONParseError) {
        depth += 1
        guard depth <= Self.maxDepth else { throw error("nesting deeper than \(Self.maxDepth)") }
    }

    private mutating func parseObject() throws(JSONParseError) -> JSON {
        try enterContainer()
        defer { depth -= 1 }
        index += 1
        var members: [(key: String, value: JSON)] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            skipWhitespace()
            if rawMembers.contains(key), rawDepth == nil || rawDepth == depth {
                let start = index
                _ = try parseValue()
                members.append((key: key, value: .raw(RawJSON(trusted: Array(bytes[start..<index])))))
            } else {
                members.append((key: key, value: try parseValue()))
            }
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            } else {
                throw error("expected ',' or '}'")
            }
        }
    }

    private mutating func parseArray() throws(JSONParseError) -> JSON {
        try enterContainer()
        defer { depth -= 1 }
        index += 1
        var elements: [JSON] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            } else {
                throw error("expected ',' or ']'")
            }
        }
    }

    private mutating func parseNumber() throws(JSONParseError) -> JSON {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw error("expected a digit") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("expected a digit after '.'") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("expected a digit in the exponent") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let value = Int64(text) { return .int(value) }
        guard let value = Double(text), value.isFinite else { throw JSONParseError(offset: start, reason: "number out of range") }
        return .double(value)
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func parseString() throws(JSONParseError) -> String {
        index += 1
        let start = index
        // Fast path: no escapes.
        var bits: UInt8 = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = bytes[start..<index]
                index += 1
                return try decodeUTF8(slice, at: start, isASCII: bits < 0x80)
            }
            bits |= byte
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error("control character in string") }
            index += 1
        }
        var scalars = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return try decodeUTF8(scalars[...], at: start, isASCII: false)
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw error("unexpected end of input") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append(0x22)
                case UInt8(ascii: "\\"): scalars.append(0x5C)
                case UInt8(ascii: "/"): scalars.append(0x2F)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"):
                    let scalar = try parseUnicodeEscape()
                    scalars.append(contentsOf: Array(String(Character(scalar)).utf8))
                default:
                    index -= 1
                    throw error("invalid escape")
                }
            default:
                if byte < 0x20 { throw error("control character in string") }
                scalars.append(byte)
                index += 1
            }
        }
        throw error("unterminated string")
    }

    private mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("unexpected end of input") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    private mutating func parseUnicodeEscape() throws(JSONParseError) -> Unicode.Scalar {
        let first = try parseHex4()
        if (0xD800...0xDBFF).contains(first) {
            guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                throw error("unpaired surrogate")
            }
            index += 2
            let second = try parseHex4()
            guard (0xDC00...0xDFFF).contains(second) else { throw error("unpaired surrogate") }
            let combined = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            guard let scalar = Unicode.Scalar(combined) else { throw error("invalid code point") }
            return scalar
        }
        guard let scalar = Unicode.Scalar(first) else { throw error("unpaired surrogate") }
        return scalar
    }

    /// The string of `utf8`; ASCII (most strings) is valid as it stands and is decoded without the
    /// standard library's validation, which runs as unspecialised generic code.
    private func decodeUTF8(_ utf8: ArraySlice<UInt8>, at offset: Int, isASCII: Bool) throws(JSONParseError) -> String {
        if isASCII { return String(decoding: utf8, as: UTF8.self) }
        guard let string = String(validating: utf8, as: UTF8.self) else {
            throw JSONParseError(offset: offset, reason: "string is not valid UTF-8")
        }
        return string
    }
}
