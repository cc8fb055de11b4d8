/// An error sent in a reply (`{"error":{"code":C,"message":"..."}}`).
public struct ProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: UInt32
    public var message: String
    /// Tells SDKs the call may succeed when retried.
    public var temporary: Bool

    public init(code: UInt32, message: String, temporary: Bool = false) {
        self.code = code
        self.message = message
        self.temporary = temporary
    }

    public var description: String { "\(code): \(message)" }

    public static let internalError = ProtocolError(code: 100, message: "internal server error", temporary: true)
    public static let unauthorized = ProtocolError(code: 101, message: "unauthorized")
    public static let unknownChannel = ProtocolError(code: 102, message: "unknown channel")
    public static let permissionDenied = ProtocolError(code: 103, message: "permission denied")
    public static let methodNotFound = ProtocolError(code: 104, message: "method not found")
    public static let alreadySubscribed = ProtocolError(code: 105, message: "already subscribed")
    public static let limitExceeded = ProtocolError(code: 106, message: "limit exceeded")
    public static let badRequest = ProtocolError(code: 107, message: "bad request")
    public static let notAvailable = ProtocolError(code: 108, message: "not available")
    public static let tokenExpired = ProtocolError(code: 109, message: "token expired")
    public static let expired = ProtocolError(code: 110, message: "expired")
    public static let tooManyRequests = ProtocolError(code: 111, message: "too many requests", temporary: true)
    public static let unrecoverablePosition = ProtocolError(code: 112, message: "unrecoverable position")

    /// The same code with a more precise message.
    public func with(message: String) -> ProtocolError {
        ProtocolError(code: code, message: message, temporary: temporary)
    }

    var json: JSON {
        var object = JSONObjectBuilder()
        object.add("code", .int(Int64(code)))
        object.add("message", message)
        object.add("temporary", temporary)
        return object.json
    }

    init(json: JSON) throws(ProtocolDecodingError) {
        let fields = try ProtocolFields(json, path: "error")
        self.init(code: try fields.uint32("code"), message: try fields.protobufString("message"), temporary: try fields.protobufBool("temporary"))
    }
}

/// Why the server closes a connection: the WebSocket close code and reason.
///
/// Codes 3000–3499 let the client reconnect; 3500–3999 are terminal.
public struct DisconnectCode: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: UInt16
    public var reason: String

    public init(code: UInt16, reason: String) {
        self.code = code
        self.reason = reason
    }

    /// Whether the client is expected to reconnect after this disconnect.
    public var reconnect: Bool { code < 3500 }

    public var description: String { "\(code) \(reason)" }

    public func with(reason: String) -> DisconnectCode { DisconnectCode(code: code, reason: reason) }

    /// Not sent: the transport ended (the client went away), so the session closes without telling it.
    public static let transportClosed = DisconnectCode(code: 1000, reason: "closed")
    public static let shutdown = DisconnectCode(code: 3001, reason: "shutdown")
    public static let internalError = DisconnectCode(code: 3004, reason: "internal server error")
    public static let expired = DisconnectCode(code: 3005, reason: "connection expired")
    public static let slow = DisconnectCode(code: 3008, reason: "slow")
    public static let insufficientState = DisconnectCode(code: 3010, reason: "insufficient state")
    public static let forceReconnect = DisconnectCode(code: 3011, reason: "force reconnect")
    public static let noPong = DisconnectCode(code: 3012, reason: "no pong")
    public static let tooManyRequests = DisconnectCode(code: 3013, reason: "too many requests")
    public static let invalidToken = DisconnectCode(code: 3500, reason: "invalid token")
    public static let badRequest = DisconnectCode(code: 3501, reason: "bad request")
    public static let forceDisconnect = DisconnectCode(code: 3503, reason: "force disconnect")
    public static let connectionLimit = DisconnectCode(code: 3504, reason: "connection limit")
    public static let channelLimit = DisconnectCode(code: 3505, reason: "channel limit")
    public static let inappropriateProtocol = DisconnectCode(code: 3506, reason: "inappropriate protocol")
    public static let permissionDenied = DisconnectCode(code: 3507, reason: "permission denied")
    public static let tooManyErrors = DisconnectCode(code: 3509, reason: "too many errors")
}

/// Codes of the `unsubscribe` push.
public enum UnsubscribeCode {
    /// The server removed the subscription; the client should not resubscribe on its own.
    public static let server: UInt32 = 2000
    /// The subscription is lost (for example its stream went away); the client resubscribes.
    public static let insufficientState: UInt32 = 2500
    /// The subscription token expired and no `sub_refresh` came in time; the client subscribes again with a new token.
    public static let expired: UInt32 = 2501
}
