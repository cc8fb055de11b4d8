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

    /// The request body parsed as a JSON object, or a 400 response naming what is wrong.
    public static func object(of request: Request, limit: Int) async -> Result<JSON, ResponseError> {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch {
            return .failure(ResponseError(Self.error(.contentTooLarge, code: 107, "body is larger than \(limit) bytes")))
        }
        if buffer.readableBytes == 0 {
            return .failure(ResponseError(error(.badRequest, code: 107, "body is empty, expected a JSON object")))
        }
        let json: JSON
        do {
            json = try JSONParser.parse(buffer.readableBytesView)
        } catch {
            return .failure(ResponseError(self.error(.badRequest, code: 107, "body is not valid JSON: \(error)")))
        }
        guard case .object = json else {
            return .failure(ResponseError(error(.badRequest, code: 107, "body must be a JSON object, got \(json.kindName)")))
        }
        return .success(json)
    }
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
        let a = Array(lhs.utf8), b = Array(rhs.utf8)
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
