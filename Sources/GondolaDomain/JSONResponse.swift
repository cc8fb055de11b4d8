import GondolaHub
import GondolaProtocol
import Hummingbird
import NIOCore

/// JSON bodies in and out of the HTTP endpoints of the server and its domains.
public enum JSONResponse {
    public static func make(_ json: JSON, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status,
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: json.bytes)))
    }

    /// `{"error":{"code":C,"message":"..."}}` with an HTTP status.
    public static func error(_ status: HTTPResponse.Status, code: UInt32, _ message: String) -> Response {
        make(["error": ["code": .int(Int64(code)), "message": .string(message)]], status: status)
    }

    /// The request body parsed as a JSON object, or a 400 (413 when too large) response
    /// naming what is wrong.
    public static func object(
        of request: Request, limit: Int, keepingRaw rawMembers: Set<String> = [], atDepth depth: Int = 1
    ) async -> Result<JSON, ResponseError> {
        await JSONBody.object(of: request, limit: limit, keepingRaw: rawMembers, atDepth: depth).mapError {
            ResponseError(error($0.status, code: 107, $0.message))
        }
    }
}

/// Reads a request body that must be one JSON object.
public enum JSONBody {
    /// The body as one JSON object; its members named in `rawMembers`, in the objects at
    /// nesting `depth` (1: the body's own members), are kept as they were written
    /// (`JSON.raw`: payloads passed on byte for byte).
    public static func object(
        of request: Request, limit: Int, keepingRaw rawMembers: Set<String> = [], atDepth depth: Int = 1
    ) async -> Result<JSON, JSONBodyError> {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch {
            return .failure(JSONBodyError(status: .contentTooLarge, message: "body is larger than \(limit) bytes"))
        }
        if buffer.readableBytes == 0 {
            return .failure(JSONBodyError(status: .badRequest, message: "body is empty, expected a JSON object"))
        }
        let json: JSON
        do {
            json = try JSONParser.parse(buffer.readableBytesView, keepingRaw: rawMembers, atDepth: depth)
        } catch {
            return .failure(JSONBodyError(status: .badRequest, message: "body is not valid JSON: \(error)"))
        }
        guard case .object = json else {
            return .failure(JSONBodyError(status: .badRequest, message: "body must be a JSON object, got \(json.kindName)"))
        }
        return .success(json)
    }
}

/// Why a request body is not a JSON object: the HTTP status that fits and a message.
public struct JSONBodyError: Error, Sendable {
    public let status: HTTPResponse.Status
    public let message: String
}

/// A ready response carried as an error, for early exits; thrown from a route,
/// Hummingbird answers with it.
public struct ResponseError: HTTPResponseError {
    public let response: Response
    public init(_ response: Response) { self.response = response }

    public var status: HTTPResponse.Status { response.status }

    public func response(from request: Request, context: some RequestContext) throws -> Response { response }
}

/// Comparison that takes the same time wherever the strings differ (secrets, keys).
public enum ConstantTime {
    public static func equal(_ lhs: String, _ rhs: String) -> Bool {
        let a = Array(lhs.utf8)
        let b = Array(rhs.utf8)
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

extension JSONResponse {
    /// A hub error as an HTTP response: the protocol's code and message in the body,
    /// with the status that fits it.
    public static func error(_ error: HubError) -> Response {
        let status: HTTPResponse.Status
        switch error {
        case .badRequest: status = .badRequest
        case .unauthorized, .tokenExpired: status = .unauthorized
        case .permissionDenied: status = .forbidden
        case .unknownChannel, .methodNotFound: status = .notFound
        case .limitExceeded, .alreadySubscribed, .notAvailable: status = .conflict
        case .tooManyRequests: status = .tooManyRequests
        case .unrecoverablePosition, .internalError: status = .internalServerError
        case .unavailable: status = .serviceUnavailable
        case .application: status = .badRequest
        }
        let reply = error.protocolError
        return self.error(status, code: reply.code, reply.message)
    }

    /// The response `body` makes, or its hub error as an HTTP error response.
    public static func answering(_ body: () async throws(HubError) -> Response) async -> Response {
        do {
            return try await body()
        } catch {
            return self.error(error)
        }
    }
}

/// The user of an HTTP request that carries a connection token as
/// `Authorization: Bearer <token>`, the same token the WebSocket connect takes.
public struct BearerAuthentication: Sendable {
    let tokens: ConnectionTokens

    public init(tokens: ConnectionTokens) { self.tokens = tokens }

    /// The token's user, or a 401 response naming what is wrong.
    public func user(of request: Request) async -> Result<String, ResponseError> {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else {
            return .failure(ResponseError(JSONResponse.error(.unauthorized, code: 101, "missing Authorization: Bearer <connection token>")))
        }
        do {
            return .success(try await tokens.verify(String(header.dropFirst("Bearer ".count))).user)
        } catch {
            return .failure(ResponseError(JSONResponse.error(.unauthorized, code: error == .expired ? 109 : 101, "token refused: \(error)")))
        }
    }
}
