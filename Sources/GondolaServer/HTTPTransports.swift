import GondolaDomain
@_spi(Engine) import GondolaHub
import GondolaProtocol
import HTTPTypes
import Hummingbird
import NIOCore

/// The client transports besides the WebSocket that a configuration turns on.
public struct ClientTransports: Sendable, Equatable, ConfigurationDefaults {
    public static var defaults: ClientTransports { ClientTransports() }

    /// `/connection/http_stream`: an HTTP response streaming replies and pushes, commands posted to `/emulation`.
    public var httpStream = true
    /// `/connection/sse`: the same as Server-Sent Events (JSON only).
    public var sse = true
    /// `/connection/uni_websocket`: a WebSocket the client only reads.
    public var uniWebSocket = false
    /// `/connection/uni_sse`: Server-Sent Events the client only reads.
    public var uniSSE = false
    /// `/connection/uni_http_stream`: an HTTP stream of JSON lines the client only reads.
    public var uniHTTPStream = false

    public init() {}

    /// The configuration keys turning each transport on or off.
    static let keys: [ConfigurationKey<ClientTransports>] = [
        .boolean(
            "http_stream", \.httpStream,
            doc: "serve `/connection/http_stream`, with `/emulation` for its commands ([protocol.md](protocol.md#transports))"),
        .boolean("sse", \.sse, doc: "serve `/connection/sse`, with `/emulation` for its commands"),
        .boolean("uni_websocket", \.uniWebSocket, doc: "serve the unidirectional `/connection/uni_websocket`"),
        .boolean("uni_sse", \.uniSSE, doc: "serve the unidirectional `/connection/uni_sse`"),
        .boolean("uni_http_stream", \.uniHTTPStream, doc: "serve the unidirectional `/connection/uni_http_stream`"),
    ]

    /// Whether `/emulation` is served: when a transport that needs it is.
    var emulation: Bool { httpStream || sse }
}

/// The client endpoints served as plain HTTP, for clients behind proxies that break
/// WebSocket and for clients with no SDK (a `curl`, an `EventSource`), as Centrifugo
/// serves them:
/// - `POST /connection/http_stream`: the body carries the first commands (Protobuf when
///   `Content-Type: application/octet-stream`, else JSON); the answer streams replies and
///   pushes as JSON lines or length-prefixed Protobuf messages.
/// - `GET /connection/sse?cf_connect=<commands>` (or a `POST` with them as the body): the
///   same in JSON as Server-Sent Events (`data: <message>` per event).
/// - `POST /emulation`: the later commands of either (`EmulationRequest`), delivered to the
///   session on whichever node holds it; 204 once queued.
/// - `POST /connection/uni_http_stream` and `GET|POST /connection/uni_sse`: unidirectional:
///   the body (or `cf_connect`) is a connect request (`{"token": …, "subs": …}`), the
///   stream starts with a connect push, and the client sends nothing else.
///
/// Each session has the same admission (Origin, connection limits: 403/503 before the
/// stream opens), commands, limits and recovery as a WebSocket one; a stream ends with a
/// disconnect push naming why (none when the client went away). Request bodies are limited
/// to `maxRequestBytes` (413). A reader that stalls is handled like a stalled WebSocket
/// reader: what waits stays in the session's bounded queue (`client_queue_max_bytes`, then
/// 3008), and a write the client has not taken within `writeTimeout` drops the connection.
/// A page of another origin that `allowed_origins` lets in gets the CORS headers it needs.
struct HTTPTransports: Sendable {
    static let maxRequestBytes = 64 * 1024
    static let writeTimeout = TimeAmount.seconds(1)
    static let connectParameter = "cf_connect"

    let node: Node
    let admission: ConnectionAdmission
    let connections: OpenConnections
    /// The opening request's headers sent along with the session's proxy requests (`proxy_http_headers`, lower-cased).
    let forwardedHeaderNames: Set<String>
    let enabled: ClientTransports

    func addRoutes(to router: HTTPRouter) {
        if enabled.httpStream {
            route(router, "/connection/http_stream", methods: [.post]) { request, context in
                let encoding: ProtocolEncoding = request.headers[.contentType] == "application/octet-stream" ? .protobuf : .json
                let commands = try await body(of: request, required: true)
                return open(request, context, encoding: encoding, transport: .emulation, framing: .lines) { session in
                    await session.handle(frame: commands.readableBytesView)
                }
            }
        }
        if enabled.sse {
            route(router, "/connection/sse", methods: [.get, .post]) { request, context in
                let commands = try await connectData(of: request, required: true)
                return open(request, context, encoding: .json, transport: .emulation, framing: .events) { session in
                    await session.handle(frame: commands)
                }
            }
        }
        if enabled.emulation {
            route(router, "/emulation", methods: [.post]) { request, context in
                try await emulate(request)
            }
        }
        if enabled.uniHTTPStream {
            route(router, "/connection/uni_http_stream", methods: [.post]) { request, context in
                let connect = try Self.connectRequest(Array(try await body(of: request, required: false).readableBytesView))
                return open(request, context, encoding: .json, transport: .unidirectional, framing: .lines) { session in
                    await session.connect(unidirectional: connect)
                }
            }
        }
        if enabled.uniSSE {
            route(router, "/connection/uni_sse", methods: [.get, .post]) { request, context in
                let connect = try Self.connectRequest(try await connectData(of: request, required: false))
                return open(request, context, encoding: .json, transport: .unidirectional, framing: .events) { session in
                    await session.connect(unidirectional: connect)
                }
            }
        }
    }

    /// Adds `path` for `methods`, with the CORS preflight (`OPTIONS`) beside them.
    private func route(
        _ router: HTTPRouter, _ path: RouterPath, methods: [HTTPRequest.Method],
        _ handler: @escaping @Sendable (Request, HTTPRequestContext) async throws -> Response
    ) {
        for method in methods {
            router.on(path, method: method) { request, context in
                do {
                    return try await handler(request, context)
                } catch let error as ResponseError {
                    return cors(error.response, request)
                }
            }
        }
        let allowed = (methods + [.options]).map(\.rawValue).joined(separator: ", ")
        router.on(path, method: .options) { request, _ in
            var response = Response(status: .noContent, headers: [.accessControlAllowMethods: allowed, .accessControlMaxAge: "300"])
            response.headers[.accessControlAllowHeaders] = "Content-Type"
            return cors(response, request)
        }
    }

    /// The response with the CORS headers a page of another origin needs to read it, when
    /// the request comes from one that `allowed_origins` lets in.
    private func cors(_ response: Response, _ request: Request) -> Response {
        guard let origin = request.headers[.origin], admission.originRefusal(origin: origin, host: request.head.authority) == nil else {
            return response
        }
        var response = response
        response.headers[.accessControlAllowOrigin] = origin
        response.headers[.accessControlAllowCredentials] = "true"
        response.headers[.vary] = "Origin"
        return response
    }

    // MARK: Requests

    /// The request body, at most `maxRequestBytes` (413 past it); an empty one is refused
    /// (400) when `required`.
    private func body(of request: Request, required: Bool) async throws -> ByteBuffer {
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: Self.maxRequestBytes)
        } catch {
            throw ResponseError(JSONResponse.error(.contentTooLarge, code: 107, "the request body is larger than \(Self.maxRequestBytes) bytes"))
        }
        if required, body.readableBytes == 0 {
            throw ResponseError(JSONResponse.error(.badRequest, code: 107, "the request body is empty: it must carry the connect command"))
        }
        return body
    }

    /// What opens an SSE stream: `cf_connect` of a `GET`, the body of a `POST`.
    private func connectData(of request: Request, required: Bool) async throws -> [UInt8] {
        guard request.method == .get else { return Array(try await body(of: request, required: required).readableBytesView) }
        let parameter = request.uri.formParameter(Self.connectParameter) ?? ""
        if required, parameter.isEmpty {
            throw ResponseError(
                JSONResponse.error(.badRequest, code: 107, "no \(Self.connectParameter) parameter: it must carry the connect command"))
        }
        guard parameter.utf8.count <= Self.maxRequestBytes else {
            throw ResponseError(JSONResponse.error(.uriTooLong, code: 107, "\(Self.connectParameter) is longer than \(Self.maxRequestBytes) bytes"))
        }
        return Array(parameter.utf8)
    }

    /// A unidirectional connection's connect request: a JSON object (`data` kept as
    /// written); empty or `null` reads as an empty request.
    static func connectRequest(_ bytes: [UInt8]) throws(ResponseError) -> ConnectRequest {
        do {
            let json = bytes.isEmpty ? JSON.null : try JSONParser.parse(bytes, keepingRaw: ["data"], atDepth: 1)
            if json == .null { return ConnectRequest() }
            return try ConnectRequest(json: json)
        } catch let error as ProtocolDecodingError {
            throw ResponseError(JSONResponse.error(.badRequest, code: 107, "bad connect request: \(error.message)"))
        } catch {
            throw ResponseError(JSONResponse.error(.badRequest, code: 107, "the connect request is not JSON: \(error)"))
        }
    }

    // MARK: Streams

    /// Opens a session over the response to `request` and streams what it sends; `start`
    /// hands it what the request carried once the response's head is out.
    private func open(
        _ request: Request, _ context: HTTPRequestContext, encoding: ProtocolEncoding, transport: SessionTransport, framing: StreamFraming,
        start: @escaping @Sendable (ClientSession) async -> Void
    ) -> Response {
        if let refusal = admission.refusal(origin: request.headers[.origin], host: request.head.authority, open: connections.value) {
            return cors(JSONResponse.error(.init(code: Int(refusal.status.code)), code: refusal.code, refusal.message), request)
        }
        let forwarded = forwardedHeaderNames.isEmpty ? [] : request.headers.filter { forwardedHeaderNames.contains($0.name.canonicalName) }
        let session = node.accept(
            encoding: encoding, transport: transport, forwardedHeaders: forwarded.map { (name: $0.name.canonicalName, value: $0.value) })
        return cors(Self.stream(session, on: context, connections: connections, encoding: encoding, framing: framing, start: start), request)
    }

    /// The response that streams `session`'s frames over the request's connection; `start` hands
    /// the session what the request carried once the response's head is out. The connection
    /// counts among the open ones until it ends.
    static func stream(
        _ session: ClientSession, on context: HTTPRequestContext, connections: OpenConnections, encoding: ProtocolEncoding,
        framing: StreamFraming, start: @escaping @Sendable (ClientSession) async -> Void
    ) -> Response {
        let channel = context.channel
        channel.closeFuture.whenComplete { _ in session.transportClosed() }
        let ended = channel.eventLoop.makePromise(of: Void.self)
        connections.opened(closing: ended.futureResult)
        var headers: HTTPFields = [
            .cacheControl: "private, no-cache, no-store, must-revalidate, max-age=0", .init("X-Accel-Buffering")!: "no",
            .init("Pragma")!: "no-cache", .init("Expire")!: "0",
        ]
        headers[.contentType] = framing.contentType(encoding)
        let body = ResponseBody { writer in
            defer { ended.succeed() }
            let stream = SessionStream(session: session, framing: framing, channel: channel)
            try await stream.run(writer: &writer, start: start)
        }
        return Response(status: .ok, headers: headers, body: body)
    }

    // MARK: Emulation

    /// `POST /emulation`: 204 once the commands wait for their session; 400 for a request
    /// that cannot be read, 404 for an unknown node or session, 429 when the session already
    /// has too many frames waiting, 503 when the engine cannot carry it.
    private func emulate(_ request: Request) async throws -> Response {
        if let refusal = admission.originRefusal(origin: request.headers[.origin], host: request.head.authority) {
            return JSONResponse.error(.init(code: Int(refusal.status.code)), code: refusal.code, refusal.message)
        }
        let body = try await body(of: request, required: true)
        let emulation: EmulationRequest
        do {
            if request.headers[.contentType] == "application/octet-stream" {
                emulation = try EmulationRequest(protobuf: body.readableBytesView)
            } else {
                emulation = try EmulationRequest(json: body.readableBytesView)
            }
        } catch {
            return JSONResponse.error(.badRequest, code: 107, error.message)
        }
        switch await node.emulate(emulation) {
        case .accepted: return Response(status: .noContent)
        case let .unknownNode(name): return JSONResponse.error(.notFound, code: 104, "no live node '\(name)' answered for the session")
        case .noSession: return JSONResponse.error(.notFound, code: 104, "no open session with that key on node '\(emulation.node)'")
        case let .badRequest(message): return JSONResponse.error(.badRequest, code: 107, message)
        case let .tooManyWaiting(limit):
            return JSONResponse.error(.tooManyRequests, code: 111, "the session already has \(limit) frames waiting")
        case let .unavailable(message): return JSONResponse.error(.serviceUnavailable, code: 108, message)
        }
    }
}
