import GondolaDomain
import GondolaHub
import GondolaProtocol
import Hummingbird
import Logging
import Synchronization

/// Logs every request an HTTP route refuses, the domains' routes included: an answer in the
/// 4xx range, returned or thrown. A line says who (`peer`), what (`method` and the matched
/// `route`, a pattern such as `/api/shared/crash/{token}`, so no secret in a path reaches the
/// log; `(no route)` and the `path` when none matched) and why (`status`, and the `code` and
/// `reason` of Gondola's JSON error body, read as the body is written). At most one line per
/// route and status every few seconds (`RefusalLog`).
///
/// It wraps only the routes added after it: the client transports and the server API, which
/// log their refusals themselves with more to say (the limit reached, the API method's code),
/// are added before it. The admin page's API logs its own too, and is wrapped with the page's
/// sign-in, so a refused admin API call gets both lines.
struct RefusedRequestLog: RouterMiddleware {
    typealias Context = HTTPRequestContext

    let refusals: RefusalLog

    init(logger: Logger) { refusals = RefusalLog(logger: logger) }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let who = Self.who(request, context)
        let response: Response
        do {
            response = try await next(request, context)
        } catch let error as HTTPResponseError where Self.isRefusal(error.status) {
            log(who, status: error.status, reason: "\(error)")
            throw error
        }
        guard Self.isRefusal(response.status) else { return response }
        guard response.body.contentLength != 0 else {
            log(who, status: response.status, reason: nil)
            return response
        }
        var refused = response
        let first = FirstWrite()
        let status = response.status
        refused.body = response.body.map { [self] buffer in
            if first.claim() { log(who, status: status, reason: Self.reason(in: buffer)) }
            return buffer
        }
        return refused
    }

    /// The peer, the method and the matched route; when none matched, `(no route)` (so that
    /// every such path is one kind of refusal) and the path.
    private static func who(_ request: Request, _ context: Context) -> Logger.Metadata {
        var who: Logger.Metadata = ["peer": "\(context.clientAddress)", "method": "\(request.method)"]
        if let route = context.endpointPath {
            who["route"] = "\(route)"
        } else {
            who["route"] = "(no route)"
            who["path"] = "\(request.uri.path.prefix(200))"
        }
        return who
    }

    private func log(_ who: Logger.Metadata, status: HTTPResponse.Status, reason: (code: String?, text: String)?) {
        var metadata = who
        metadata["status"] = "\(status.code)"
        if let code = reason?.code { metadata["code"] = "\(code)" }
        if let text = reason?.text { metadata["reason"] = "\(text)" }
        refusals.log("\(who["method"] ?? "") \(who["route"] ?? "") \(status.code)", "HTTP request refused", metadata: metadata)
    }

    private func log(_ who: Logger.Metadata, status: HTTPResponse.Status, reason: String) {
        log(who, status: status, reason: (nil, reason))
    }

    private static func isRefusal(_ status: HTTPResponse.Status) -> Bool { status.kind == .clientError }

    /// The code and message of Gondola's JSON error body (`{"error":{"code":…,"message":…}}`),
    /// else the body's first 200 bytes as text.
    static func reason(in buffer: ByteBuffer) -> (code: String?, text: String) {
        let bytes = Array(buffer.readableBytesView)
        if let error = (try? JSONParser.parse(bytes))?["error"], case let .string(message)? = error["message"] {
            let code: String? = if case let .int(code)? = error["code"] { "\(code)" } else { nil }
            return (code, message)
        }
        return (nil, String(decoding: bytes.prefix(200), as: UTF8.self))
    }
}

/// True for the first caller of `claim` only: the first buffer of a body is the one read.
private final class FirstWrite: Sendable {
    private let claimed = Atomic(false)
    func claim() -> Bool { !claimed.exchange(true, ordering: .relaxed) }
}
