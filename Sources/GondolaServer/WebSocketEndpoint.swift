import GondolaDomain
@_spi(Engine) import GondolaHub
import GondolaProtocol
import GondolaRuntime
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
import Synchronization

/// The WebSocket client endpoints, `/connection/websocket` and (when `uni_websocket` is on)
/// `/connection/uni_websocket`: decides an upgrade request's handshake (encoding,
/// subprotocol, compression) and, once NIO has upgraded the connection, installs the
/// handlers that serve its session from then on.
///
/// A unidirectional WebSocket speaks JSON: its connect request comes in the `cf_connect`
/// query parameter or as the client's first message, the connect result arrives as a push,
/// later messages from the client are ignored, and the server's close is preceded by a
/// disconnect push, as Centrifugo's `uni_websocket` does.
struct WebSocketEndpoint: Sendable {
    static let path = "/connection/websocket"
    static let unidirectionalPath = "/connection/uni_websocket"

    let node: Node
    /// Largest message a session accepts (`max_frame_bytes`).
    let maxFrameBytes: Int
    let compression: WebSocketCompression?
    let connections: OpenConnections
    /// The upgrade request's headers sent along with the session's proxy requests
    /// (`proxy_http_headers`, lower-cased).
    var forwardedHeaderNames: Set<String> = []
    /// The origin check and the node's connection limits, asked before an upgrade.
    let admission: ConnectionAdmission
    /// Whether `unidirectionalPath` is served.
    let unidirectional: Bool

    /// Frames (and inflated messages) up to this size reach the session, which closes with
    /// 3501 and a message naming the size; larger ones are refused by the WebSocket layer (1009).
    var maxWebSocketFrame: Int { max(maxFrameBytes * 4, 1 << 16) }

    /// What the handshake of an accepted upgrade request settled.
    struct Handshake: Sendable {
        let encoding: Result<ProtocolEncoding, ProtocolDecodingError>
        let compression: DeflateAgreement?
        let responseHeaders: HTTPHeaders
        let forwardedHeaders: [(name: String, value: String)]
        /// Set on the unidirectional endpoint: the connect request of `cf_connect`, or nil
        /// when the client sends it as its first message.
        var unidirectional: ConnectRequest??
    }

    /// The handshake for `head`, or why the upgrade is refused: a path that is not this
    /// endpoint's (404), an origin that may not connect (403), a connection limit (503). In
    /// a cluster the answer waits until the node has joined the bus.
    func handshake(for head: HTTPRequestHead, on channel: any Channel) -> EventLoopFuture<Result<Handshake, ConnectionAdmission.Refusal>> {
        let uri = URI(head.uri)
        let isUnidirectional = unidirectional && uri.path == Self.unidirectionalPath
        guard uri.path == Self.path || isUnidirectional else {
            let message = "no WebSocket endpoint at \(head.uri); connect to \(Self.path)"
            return channel.eventLoop.makeSucceededFuture(.failure(.init(status: .notFound, code: 104, message: message)))
        }
        if let refusal = admission.refusal(for: head, open: connections.value) {
            return channel.eventLoop.makeSucceededFuture(.failure(refusal))
        }
        var connectRequest: ConnectRequest?
        if isUnidirectional, let parameter = uri.formParameter(HTTPTransports.connectParameter), !parameter.isEmpty {
            do {
                connectRequest = try HTTPTransports.connectRequest(Array(parameter.utf8))
            } catch {
                return channel.eventLoop.makeSucceededFuture(
                    .failure(.init(status: .badRequest, code: 107, message: "bad \(HTTPTransports.connectParameter): not a connect request")))
            }
        }
        let fields = HTTPFields(head.headers, splitCookie: false)
        var responseHeaders = HTTPHeaders()
        if WebSocketEncoding.offersProtobufSubprotocol(fields) {
            responseHeaders.add(name: "Sec-WebSocket-Protocol", value: ProtocolEncoding.protobufSubprotocol)
        }
        let deflate = compression?.agreement(for: fields)
        if let deflate {
            responseHeaders.add(name: "Sec-WebSocket-Extensions", value: deflate.responseHeader)
        }
        let encoding = Result { () throws(ProtocolDecodingError) in try WebSocketEncoding.of(uri: uri, headers: fields) }
        let forwarded = forwardedHeaderNames.isEmpty ? [] : head.headers.filter { forwardedHeaderNames.contains($0.name.lowercased()) }
        var handshake = Handshake(
            encoding: isUnidirectional ? .success(.json) : encoding, compression: deflate?.agreement, responseHeaders: responseHeaders,
            forwardedHeaders: forwarded)
        if isUnidirectional { handshake.unidirectional = .some(connectRequest) }
        guard let cluster = node.cluster else { return channel.eventLoop.makeSucceededFuture(.success(handshake)) }
        let promise = channel.eventLoop.makePromise(of: Result<Handshake, ConnectionAdmission.Refusal>.self)
        promise.completeWithTask {
            await cluster.ready()
            return .success(handshake)
        }
        return promise.futureResult
    }

    /// Serves a session on `channel`, which NIO has just upgraded with `handshake`: the
    /// session's handler reads, its writer writes. A `format` the handshake could not read
    /// closes the session with 3501 naming it (a refused upgrade would be a bare 400).
    /// Call on the channel's event loop.
    func serve(_ handshake: Handshake, on channel: any Channel) throws {
        let session: ClientSession
        switch handshake.encoding {
        case let .success(encoding):
            session = node.accept(
                encoding: encoding, transport: handshake.unidirectional == nil ? .bidirectional : .unidirectional,
                forwardedHeaders: handshake.forwardedHeaders)
        case let .failure(error):
            session = node.accept()
            session.closeForBadRequest(error.message)
        }
        let agreement = handshake.compression
        try WebSocketSessionHandler.install(
            session, on: channel, maxMessageBytes: maxFrameBytes, maxInflatedBytes: maxWebSocketFrame,
            inflater: agreement.flatMap { FrameInflater(agreement: $0, loop: channel.eventLoop) },
            compression: agreement.flatMap { agreement in compression?.outgoing(agreement, on: channel.eventLoop) },
            executor: EventLoopTaskExecutor(channel.eventLoop), connections: connections,
            unidirectional: handshake.unidirectional.map { $0 == nil ? .awaitingRequest : .connecting })
        connections.opened(closing: channel.closeFuture)
        if case let .some(.some(request)) = handshake.unidirectional {
            Task(executorPreference: EventLoopTaskExecutor(channel.eventLoop)) { await session.connect(unidirectional: request) }
        }
    }
}

/// How many client connections (WebSockets and HTTP streams) are open (for the graceful shutdown's wait) and how
/// many of them have a task handling their messages at the moment (none when all are idle).
final class OpenConnections: Sendable {
    private let open = Atomic<Int>(0)
    private let handling = Atomic<Int>(0)

    var value: Int { open.load(ordering: .relaxed) }
    var handlingMessages: Int { handling.load(ordering: .relaxed) }

    /// Counts a connection until `closed` completes.
    func opened(closing closed: EventLoopFuture<Void>) {
        opened()
        closed.whenComplete { [self] _ in self.closed() }
    }

    /// Counts a connection until `closed()` is called for it.
    func opened() { open.add(1, ordering: .relaxed) }

    func closed() { open.subtract(1, ordering: .relaxed) }

    /// A connection's message task started (+1) or ended (-1).
    func handling(by change: Int) {
        handling.add(change, ordering: .relaxed)
    }
}
