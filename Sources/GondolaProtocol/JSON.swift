/// A JSON value as parsed from or written to the wire.
///
/// Objects keep their members in source order so that a value written back out
/// reads the same as it came in. `raw` embeds an already-encoded value verbatim,
/// which is how publication payloads travel without being decoded.
public enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([(key: String, value: JSON)])
    case raw(RawJSON)

    public static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.int(a), .int(b)): return a == b
        case let (.double(a), .double(b)): return a == b
        case let (.int(a), .double(b)), let (.double(b), .int(a)): return Double(a) == b
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        case let (.raw(a), .raw(b)): return a == b
        case let (.raw(a), other), let (other, .raw(a)): return a.value == other
        default: return false
        }
    }

    /// The member named `key` of an object, or nil for other values and absent members.
    public subscript(key: String) -> JSON? {
        guard case let .object(members) = self else { return nil }
        return members.last(where: { $0.key == key })?.value
    }

    /// This object with the member `key` set to `value` (replaced where present,
    /// else appended); any other value unchanged.
    public func adding(_ key: String, _ value: JSON) -> JSON {
        guard case var .object(members) = self else { return self }
        if let index = members.lastIndex(where: { $0.key == key }) {
            members[index].value = value
        } else {
            members.append((key, value))
        }
        return .object(members)
    }

    /// Whether the value is `null`, parsed or kept as its bytes.
    public var isNull: Bool {
        switch self {
        case .null: return true
        case let .raw(raw): return raw.isNull
        default: return false
        }
    }

    /// A short name of the value's kind, for error messages.
    public var kindName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .int, .double: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        case let .raw(raw): return raw.value.kindName
        }
    }

    /// The compact UTF-8 encoding of this value.
    public var bytes: [UInt8] {
        var writer = JSONWriter()
        writer.write(self)
        return writer.bytes
    }

    /// The compact encoding as a string.
    public var text: String { String(decoding: bytes, as: UTF8.self) }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByFloatLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(elements.map { (key: $0.0, value: $0.1) })
    }
    public init(nilLiteral: ()) { self = .null }
}

/// An already-encoded JSON value kept as UTF-8 bytes.
///
/// Payload fields of the protocol (`data`, `conn_info`, `chan_info`) are carried
/// as `RawJSON` so that a value is validated once on the way in and its bytes are
/// copied, not re-encoded, into every push that carries it: a value read from input
/// keeps its spelling (white space, number forms, escapes). `JSONWriter` leaves out
/// its raw newlines (white space outside strings), which would end a line of a JSON frame.
public struct RawJSON: Sendable, Hashable, CustomStringConvertible {
    /// UTF-8 encoding of one JSON value.
    public let bytes: [UInt8]

    /// Wraps a parsed value, writing it compactly.
    public init(_ value: JSON) {
        if case let .raw(raw) = value {
            self = raw
        } else {
            self.bytes = value.bytes
        }
    }

    /// The output of `writer`, which wrote exactly one JSON value (see `JSONWriter.writeSyntax`).
    public init(writtenBy writer: JSONWriter) {
        bytes = writer.bytes
    }

    /// Checks that `bytes` are one JSON value and keeps them as they are (without the
    /// white space around the value).
    public init(validating bytes: some Collection<UInt8>) throws(JSONParseError) {
        let span = try JSONParser.valueSpan(of: bytes)
        self.init(trusted: Array(span))
    }

    /// Bytes known to be one JSON value (read back from where a checked value was kept).
    public init(trusted bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Whether `bytes` are one JSON value.
    public static func isValid(_ bytes: some Collection<UInt8>) -> Bool {
        (try? JSONParser.valueSpan(of: bytes)) != nil
    }

    public static let emptyObject = RawJSON(.object([]))

    /// Whether the value is `null`.
    public var isNull: Bool { bytes == Self.null.bytes }

    private static let null = RawJSON(.null)

    /// The value decoded again.
    public var value: JSON {
        // The bytes were written by JSONWriter or checked on the way in, so they always parse.
        (try? JSONParser.parse(bytes)) ?? .null
    }

    public var description: String { String(decoding: bytes, as: UTF8.self) }
}
