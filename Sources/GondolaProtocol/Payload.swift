import Foundation

/// A payload as its publisher sent it: the bytes pass through the hub, its streams and
/// the cluster's bus untouched, and reach every subscriber as they came.
///
/// A payload from a JSON client, the server API's `data` or a domain is one JSON value
/// (checked on the way in, never rewritten: whitespace, number spellings and escapes
/// stay). A Protobuf client (and the server API's `b64data`) may publish any bytes; bytes
/// that are not one JSON value are binary. How each encoding carries them:
/// - Protobuf connections get the bytes as they are, JSON or binary.
/// - JSON connections get a JSON payload as it is, less its raw newlines (whitespace
///   outside strings; a newline separates the messages of a JSON frame), and a binary
///   payload as a JSON string of its base64 (RFC 4648), since a JSON frame cannot carry
///   other bytes.
public struct Payload: Sendable, Hashable, CustomStringConvertible {
    /// The bytes as published.
    public let bytes: [UInt8]
    /// Whether `bytes` are one JSON value.
    public let isJSON: Bool

    /// A JSON payload: one the hub or a domain wrote, or one checked on the way in (its
    /// bytes as they came).
    public init(_ json: RawJSON) {
        bytes = json.bytes
        isJSON = true
    }

    /// A JSON payload written from a value.
    public init(_ value: JSON) {
        self.init(RawJSON(value))
    }

    /// Bytes as received (a Protobuf field, a stream's row, the bus): JSON when they are
    /// one JSON value, else binary.
    public init(received bytes: [UInt8]) {
        self.bytes = bytes
        isJSON = RawJSON.isValid(bytes)
    }

    /// The payload in a JSON frame: the JSON value as sent (`JSONWriter` drops its raw
    /// newlines), or a binary payload's base64 as a string.
    public var jsonValue: JSON {
        isJSON ? .raw(RawJSON(trusted: bytes)) : .string(base64)
    }

    /// The payload read as JSON; nil for a binary one.
    public var json: JSON? {
        isJSON ? (try? JSONParser.parse(bytes)) : nil
    }

    /// The payload parsed as a JSON client reads it: the JSON value, or a binary
    /// payload's base64 as a string.
    public var value: JSON {
        json ?? .string(base64)
    }

    private var base64: String { Data(bytes).base64EncodedString() }

    public var description: String {
        isJSON ? String(decoding: bytes, as: UTF8.self) : "<\(bytes.count) binary bytes>"
    }
}
