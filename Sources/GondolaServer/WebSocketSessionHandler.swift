import CompressNIO
import GondolaHub
import GondolaProtocol
import GondolaRuntime
import NIOCore
import NIOWebSocket
import Synchronization

/// Serves one client session over an upgraded WebSocket connection as a NIO channel
/// handler on the connection's event loop, after NIO's frame decoder and encoder:
/// it assembles messages from their frames (inflating those the client compressed),
/// answers pings, runs the closing handshake, and hands each whole message to the
/// session. The session's replies and pushes reach the socket through the
/// `ChannelFrameWriter` behind it.
///
/// A message is handled by a task that exists only while messages wait: the first one
/// starts it and it ends when none is left, so an idle connection holds no suspended
/// task, only this handler, its session and NIO's channel. The task runs on the
/// connection's event loop (`EventLoopTaskExecutor`), alone or in a cluster: what it
/// waits for (a database, the bus) it awaits, leaving the loop to other connections.
///
/// Limits: a message longer than `max_frame_bytes` closes the session with 3501 naming
/// its size; a compressed one whose fragments or inflated bytes pass `maxInflatedBytes` is
/// refused with 1009, one that does not inflate with 1007.
/// Once `maxWaitingMessages` whole messages wait for the session (what the read that
/// reached the limit brought in is still queued), the handler stops reading from the
/// socket (TCP pushes back on the client) until the session takes the next one. After the server's close frame, the client has `closeTimeout`
/// to answer with its own before the connection is dropped.
final class WebSocketSessionHandler: ChannelDuplexHandler, @unchecked Sendable {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// Whole messages that may wait for the session before reading stops.
    static let maxWaitingMessages = 16
    /// How long the client may take to answer the server's close frame.
    static let closeTimeout = TimeAmount.seconds(2)

    private let session: ClientSession
    private let maxMessageBytes: Int
    private let maxInflatedBytes: Int
    private let inflater: FrameInflater?
    private let executor: any TaskExecutor
    private let eventLoop: any EventLoop
    private let connections: OpenConnections
    private let inbox = Mutex(Inbox())

    // Only touched on the connection's event loop.
    private var context: ChannelHandlerContext?
    private var partial: (bytes: ByteBuffer, compressed: Bool)?
    private var sentClose = false
    private var receivedClose = false
    private var readHeld = false
    private var closeTimer: Scheduled<Void>?
    /// On a unidirectional connection: whether its connect request is still to come.
    private var unidirectional: UnidirectionalState?

    /// Where a unidirectional connection stands: only its first message is read, as its connect request.
    enum UnidirectionalState {
        case awaitingRequest
        case connecting
    }

    /// Messages waiting for the session, and whether a task is handling them.
    private struct Inbox {
        var messages: [[UInt8]] = []
        var head = 0
        var working = false

        var count: Int { messages.count - head }

        /// The next message, or nil after marking the inbox idle.
        mutating func next() -> [UInt8]? {
            guard head < messages.count else {
                messages.removeAll(keepingCapacity: false)
                head = 0
                working = false
                return nil
            }
            defer { head += 1 }
            return messages[head]
        }
    }

    init(
        session: ClientSession, maxMessageBytes: Int, maxInflatedBytes: Int, inflater: FrameInflater?,
        eventLoop: any EventLoop, executor: any TaskExecutor, connections: OpenConnections, unidirectional: UnidirectionalState? = nil
    ) {
        self.session = session
        self.unidirectional = unidirectional
        self.eventLoop = eventLoop
        self.connections = connections
        self.maxMessageBytes = maxMessageBytes
        self.maxInflatedBytes = maxInflatedBytes
        self.inflater = inflater
        self.executor = executor
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .connectionClose:
            receivedCloseFrame(frame, context: context)
        case .ping:
            guard frame.fin else { return failProtocol(context: context) }
            guard !sentClose else { return }
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .pong:
            break
        case .text, .binary, .continuation:
            receivedData(frame, context: context)
        default:
            failProtocol(context: context)
        }
    }

    private func receivedData(_ frame: WebSocketFrame, context: ChannelHandlerContext) {
        guard !sentClose, !session.isClosed else { return }
        guard !frame.rsv2, !frame.rsv3, !frame.rsv1 || (inflater != nil && frame.opcode != .continuation) else {
            return failProtocol(context: context)
        }
        var message: (bytes: ByteBuffer, compressed: Bool)
        if frame.opcode == .continuation {
            guard var started = partial else { return failProtocol(context: context) }
            var data = frame.unmaskedData
            started.bytes.writeBuffer(&data)
            message = started
        } else {
            guard partial == nil else { return failProtocol(context: context) }
            guard (frame.opcode == .binary) == session.encoding.isBinary else { return session.handleFrameOfWrongKind() }
            message = (frame.unmaskedData, frame.rsv1)
        }
        partial = nil
        if !message.compressed, message.bytes.readableBytes > maxMessageBytes {
            return oversized(message.bytes.readableBytes)
        }
        if message.compressed, message.bytes.readableBytes > maxInflatedBytes {
            return fail(.messageTooLarge, reason: "compressed message past \(maxInflatedBytes) bytes", context: context)
        }
        guard frame.fin else {
            partial = message
            return
        }
        if message.compressed {
            do {
                message.bytes = try inflater!.inflate(message.bytes, maxBytes: maxInflatedBytes, allocator: context.channel.allocator)
            } catch let error as CompressNIOError where error == .bufferOverflow {
                return fail(.messageTooLarge, reason: "message inflates past \(maxInflatedBytes) bytes", context: context)
            } catch {
                return fail(.dataInconsistentWithMessage, reason: "compressed message does not inflate", context: context)
            }
            if message.bytes.readableBytes > maxMessageBytes { return oversized(message.bytes.readableBytes) }
        }
        switch unidirectional {
        case nil: deliver(Array(message.bytes.readableBytesView))
        case .awaitingRequest: connectUnidirectionally(Array(message.bytes.readableBytesView))
        case .connecting: break  // a unidirectional client sends nothing after its connect request
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

    private func oversized(_ bytes: Int) {
        let limit = maxMessageBytes
        session.handleOversizedFrame(bytes: bytes, limit: limit)
    }

    /// Queues a whole message for the session, starting the task that handles messages when none runs.
    private func deliver(_ message: [UInt8]) {
        let start = inbox.withLock { inbox -> Bool in
            inbox.messages.append(message)
            guard !inbox.working else { return false }
            inbox.working = true
            return true
        }
        guard start else { return }
        connections.handling(by: +1)
        Task(executorPreference: executor) { await self.handleWaitingMessages() }
    }

    private func handleWaitingMessages() async {
        defer { connections.handling(by: -1) }
        while true {
            let (message, wasFull) = inbox.withLock { inbox in
                let wasFull = inbox.count >= Self.maxWaitingMessages
                return (inbox.next(), wasFull)
            }
            guard let message else { return }
            if wasFull { eventLoop.execute { self.resumeReading() } }
            await session.handle(frame: message)
            if session.isClosed {
                inbox.withLock { $0 = Inbox() }
                return
            }
        }
    }

    private func receivedCloseFrame(_ frame: WebSocketFrame, context: ChannelHandlerContext) {
        receivedClose = true
        if !sentClose {
            // Echo the client's code, as RFC 6455 (5.5.1) asks; an empty close is answered empty.
            var data = frame.unmaskedData
            let code = data.readWebSocketErrorCode()
            sendClose(code: code.map { UInt16(webSocketErrorCode: $0) }, reason: "", context: context)
        }
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The client shut its side down without a close frame.
        if let event = event as? ChannelEvent, event == .inputClosed {
            context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        closeTimer?.cancel()
        session.transportClosed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    // MARK: Outbound

    /// Holds NIO's reads while `maxWaitingMessages` wait, so the socket stops being read.
    func read(context: ChannelHandlerContext) {
        if inbox.withLock({ $0.count }) >= Self.maxWaitingMessages {
            readHeld = true
        } else {
            context.read()
        }
    }

    private func resumeReading() {
        guard readHeld, let context else { return }
        readHeld = false
        context.read()
    }

    /// The session's queue ended: with its close code (sent as the close frame, 1000 for
    /// the codes below 3000 that only name why the transport ended), or nil when the
    /// channel went away first. Called on the event loop by the `ChannelFrameWriter`.
    func outboundFinished(_ code: DisconnectCode?) {
        guard let code, let context else { return }
        if unidirectional != nil, code.code >= 3000 {
            let push = session.queue.encoded(Push(channel: "", .disconnect(code)))
            context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(bytes: push))), promise: nil)
        }
        if code.code >= 3000 {
            sendClose(code: code.code, reason: code.reason, context: context)
        } else {
            sendClose(code: 1000, reason: "", context: context)
        }
        if receivedClose { return context.close(promise: nil) }
        let channel = context.channel
        closeTimer = channel.eventLoop.scheduleTask(in: Self.closeTimeout) { channel.close(promise: nil) }
    }

    private func sendClose(code: UInt16?, reason: String, context: ChannelHandlerContext) {
        guard !sentClose else { return }
        sentClose = true
        var data = context.channel.allocator.buffer(capacity: 2 + reason.utf8.count)
        if let code {
            data.writeInteger(code)
            data.writeString(Self.closeReason(reason))
        }
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)), promise: nil)
    }

    /// A frame that breaks RFC 6455 (a stray continuation, a reserved bit, a fragmented
    /// control frame): closed with 1002 at once.
    private func failProtocol(context: ChannelHandlerContext) {
        fail(.protocolError, reason: "protocol error", context: context)
    }

    private func fail(_ code: WebSocketErrorCode, reason: String, context: ChannelHandlerContext) {
        partial = nil
        sendClose(code: UInt16(webSocketErrorCode: code), reason: reason, context: context)
        context.close(promise: nil)
    }

    /// A close reason must fit in a control frame's 123 bytes.
    static func closeReason(_ reason: String) -> String {
        var utf8 = Array(reason.utf8.prefix(123))
        while String(validating: utf8, as: UTF8.self) == nil { utf8.removeLast() }
        return String(decoding: utf8, as: UTF8.self)
    }
}
