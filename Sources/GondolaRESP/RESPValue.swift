/// A value of the Redis serialization protocol, version 3 (RESP3), as a server sends it.
public indirect enum RESPValue: Sendable, Equatable {
    case simpleString(String)
    /// `-ERR …` or a blob error (`!`): the server refused the command.
    case error(String)
    case integer(Int64)
    case bulkString([UInt8])
    case array([RESPValue])
    /// RESP3's `_`, and RESP2's null bulk string and null array.
    case null
    case double(Double)
    case boolean(Bool)
    /// A number too large for 64 bits, as its decimal text.
    case bigNumber(String)
    /// Text with its format (`txt`, `mkd`).
    case verbatim(format: String, text: String)
    /// Key-value pairs in the order the server sent them.
    case map([RESPPair])
    case set([RESPValue])
    /// An out-of-band message (`>`): Pub/Sub deliveries and invalidations.
    case push([RESPValue])

    /// The value as text: simple, bulk and verbatim strings (bulk strings read as UTF-8).
    public var string: String? {
        switch self {
        case let .simpleString(text): text
        case let .bulkString(bytes): String(decoding: bytes, as: UTF8.self)
        case let .verbatim(_, text): text
        default: nil
        }
    }

    /// The bytes of a bulk or simple string.
    public var bytes: [UInt8]? {
        switch self {
        case let .bulkString(bytes): bytes
        case let .simpleString(text): Array(text.utf8)
        default: nil
        }
    }

    /// An integer, or a string holding one (Lua scripts answer both).
    public var integer: Int64? {
        switch self {
        case let .integer(value): value
        case .bulkString, .simpleString: string.flatMap { Int64($0) }
        default: nil
        }
    }

    /// The elements of an array, set or push.
    public var elements: [RESPValue]? {
        switch self {
        case let .array(items), let .set(items), let .push(items): items
        default: nil
        }
    }
}

/// One entry of a RESP3 map.
public struct RESPPair: Sendable, Equatable {
    public let key: RESPValue
    public let value: RESPValue

    public init(key: RESPValue, value: RESPValue) {
        self.key = key
        self.value = value
    }
}
