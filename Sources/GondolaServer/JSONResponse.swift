import GondolaProtocol
import Hummingbird
import NIOCore

/// JSON bodies in and out of the HTTP endpoints.
enum JSONResponse {
    static func make(_ json: JSON, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status,
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: json.bytes)))
    }

    /// `{"error":{"code":C,"message":"..."}}` with an HTTP status.
    static func error(_ status: HTTPResponse.Status, code: UInt32, _ message: String) -> Response {
        make(["error": ["code": .int(Int64(code)), "message": .string(message)]], status: status)
    }

    /// The request body parsed as a JSON object, or a 400 response naming what is wrong.
    static func object(of request: Request, limit: Int) async -> Result<JSON, ResponseError> {
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
struct ResponseError: HTTPResponseError {
    let response: Response
    init(_ response: Response) { self.response = response }

    var status: HTTPResponse.Status { response.status }

    func response(from request: Request, context: some RequestContext) throws -> Response { response }
}
