import GondolaHub
import GondolaProtocol
import GondolaRuntime
import NIOCore
import NIOWebSocket

/// Serves one client session over an upgraded WebSocket connection, last of the inbound
/// handlers `install` puts after NIO's frame decoder and encoder, each with one job:
/// `WebSocketCloseHandler` (ping, pong and the closing handshake), `WebSocketMessageAssembler`
/// (messages from their frames, within their limits), `WebSocketInflateHandler` (compressed
/// messages, when agreed) and this one, which hands each whole message to the session through
/// its `SessionInbox`, holds reading while the inbox is full, reads a unidirectional
/// connection's connect request, and closes the WebSocket with the session's code when its
/// queue ends. The session's replies and pushes reach the socket through the
/// `ChannelFrameWriter` behind it. Used only on the connection's event loop.
final class WebSocketSessionHandler: ChannelDuplexHandler {
    typealias InboundIn = WebSocketInbound
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// Where a unidirectional connection stands: only its first message is read, as its connect request.
    enum UnidirectionalState {
        case awaitingRequest
        case connecting
    }

    private let session: ClientSession
    private let maxMessageBytes: Int
    private let inbox: SessionInbox
    private let executor: any TaskExecutor
    private var context: ChannelHandlerContext?
    /// On a unidirectional connection: whether its connect request is still to come.
    private var unidirectional: UnidirectionalState?

    private init(
        session: ClientSession, maxMessageBytes: Int, inbox: SessionInbox, executor: any TaskExecutor, unidirectional: UnidirectionalState?
    ) {
        self.session = session
        self.maxMessageBytes = maxMessageBytes
        self.inbox = inbox
        self.executor = executor
        self.unidirectional = unidirectional
    }

    /// Serves `session` on `channel`, which NIO has just upgraded: the inbound handlers, this
    /// one and the session's writer (`compression` deflating what it writes). Messages longer
    /// than `maxMessageBytes` are refused by the session (3501); compressed ones are inflated
    /// by `inflater` to at most `maxInflatedBytes`. Call on the channel's event loop.
    static func install(
        _ session: ClientSession, on channel: any Channel, maxMessageBytes: Int, maxInflatedBytes: Int, inflater: FrameInflater?,
        compression: FrameCompression?, executor: any TaskExecutor, connections: OpenConnections, unidirectional: UnidirectionalState? = nil
    ) throws {
        let pipeline = channel.pipeline.syncOperations
        try pipeline.addHandler(WebSocketCloseHandler())
        try pipeline.addHandler(
            WebSocketMessageAssembler(maxMessageBytes: maxMessageBytes, maxCompressedBytes: maxInflatedBytes, acceptsCompressed: inflater != nil))
        if let inflater {
            try pipeline.addHandler(WebSocketInflateHandler(inflater: inflater, maxMessageBytes: maxMessageBytes, maxInflatedBytes: maxInflatedBytes))
        }
        let inbox = SessionInbox(session: session, channel: channel, executor: executor, connections: connections)
        let handler = WebSocketSessionHandler(
            session: session, maxMessageBytes: maxMessageBytes, inbox: inbox, executor: executor, unidirectional: unidirectional)
        try pipeline.addHandler(handler)
        let bound = NIOLoopBound(handler, eventLoop: channel.eventLoop)
        ChannelFrameWriter.install(session.queue, on: channel, compression: compression) { code in bound.value.outboundFinished(code) }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !session.isClosed else { return }
        switch unwrapInboundIn(data) {
        case let .oversized(bytes):
            session.handleOversizedFrame(bytes: bytes, limit: maxMessageBytes)
        case let .message(bytes, binary, _):
            guard binary == session.encoding.isBinary else { return session.handleFrameOfWrongKind() }
            switch unidirectional {
            case nil: inbox.add(Array(bytes.readableBytesView))
            case .awaitingRequest: connectUnidirectionally(Array(bytes.readableBytesView))
            case .connecting: break  // a unidirectional client sends nothing after its connect request
            }
        }
    }

    /// Connects a unidirectional session with the connect request of its first message; one
    /// that is not a connect request closes it with 3501.
    private func connectUnidirectionally(_ message: [UInt8]) {
        unidirectional = .connecting
        let request: ConnectRequest
        do {
            request = try HTTPTransports.connectRequest(message)
        } catch {
            return session.closeForBadRequest("the first message of a unidirectional connection must be a connect request")
        }
        let session = session
        Task(executorPreference: executor) { await session.connect(unidirectional: request) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        session.transportClosed()
        context.fireChannelInactive()
    }

    /// Holds NIO's reads while the inbox is full, so the socket stops being read (TCP pushes
    /// back on the client); the inbox reads again once the session took the next message.
    func read(context: ChannelHandlerContext) {
        guard !inbox.isFull else { return }
        context.read()
    }

    /// The session's queue ended: with its close code (sent as the close frame, 1000 for
    /// the codes below 3000 that only name why the transport ended), or nil when the
    /// channel went away first. Called on the event loop by the `ChannelFrameWriter`; the
    /// close frame goes out through `WebSocketCloseHandler`, which waits for the client's.
    func outboundFinished(_ code: DisconnectCode?) {
        guard let code, let context else { return }
        let allocator = context.channel.allocator
        if unidirectional != nil, code.code >= 3000 {
            let push = session.queue.encoded(Push(channel: "", .disconnect(code)))
            context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(bytes: push))), promise: nil)
        }
        let frame =
            code.code >= 3000
            ? WebSocketCloseHandler.closeFrame(code: code.code, reason: code.reason, allocator: allocator)
            : WebSocketCloseHandler.closeFrame(code: 1000, reason: "", allocator: allocator)
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
    }
}
