import GondolaProtocol

/// The finite set of ways a hub operation fails, each mapped to a protocol error code.
public enum HubError: Error, Sendable, Equatable, CustomStringConvertible {
    case badRequest(String)
    case unknownChannel(String)
    case permissionDenied(String)
    case methodNotFound(String)
    case alreadySubscribed(String)
    case limitExceeded(String)
    case notAvailable(String)
    case tokenExpired
    case unauthorized(String)
    case tooManyRequests
    case unrecoverablePosition
    case internalError(String)
    /// A part the hub relies on (the engine, a Redis shard, the database) failed or cannot be
    /// reached for now: 100 with the reason, marked temporary so that the SDKs retry, as
    /// Centrifugo answers a broker's failure.
    case unavailable(String)
    /// An error the app's backend chose (its proxy answer's `error`), sent as it is.
    case application(ProtocolError)

    /// The error as sent in a reply.
    public var protocolError: ProtocolError {
        switch self {
        case let .badRequest(message): return ProtocolError.badRequest.with(message: "bad request: \(message)")
        case let .unknownChannel(channel): return ProtocolError.unknownChannel.with(message: "unknown channel: \(channel)")
        case let .permissionDenied(message): return ProtocolError.permissionDenied.with(message: "permission denied: \(message)")
        case let .methodNotFound(method): return ProtocolError.methodNotFound.with(message: "method not found: \(method)")
        case let .alreadySubscribed(channel): return ProtocolError.alreadySubscribed.with(message: "already subscribed: \(channel)")
        case let .limitExceeded(message): return ProtocolError.limitExceeded.with(message: "limit exceeded: \(message)")
        case let .notAvailable(message): return ProtocolError.notAvailable.with(message: "not available: \(message)")
        case .tokenExpired: return .tokenExpired
        case let .unauthorized(message): return ProtocolError.unauthorized.with(message: "unauthorized: \(message)")
        case .tooManyRequests: return .tooManyRequests
        case .unrecoverablePosition: return .unrecoverablePosition
        case .internalError: return .internalError
        case let .unavailable(reason): return ProtocolError.internalError.with(message: "internal server error: \(reason)")
        case let .application(error): return error
        }
    }

    public var description: String { protocolError.message }
}
