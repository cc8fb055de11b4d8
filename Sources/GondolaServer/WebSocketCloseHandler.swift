import NIOCore
import NIOWebSocket

/// The WebSocket's control frames, first after NIO's frame decoder. It answers a ping with a
/// pong, and runs the closing handshake (RFC 6455, 5.5.1): a client's close is echoed with its
/// code and the connection closed; the server's close (any close frame written through this
/// handler) gives the client `closeTimeout` to answer with its own before the connection is
/// dropped, and what the client sends after it, but its close, is dropped. Data frames go on
/// as they came; a fragmented control frame or an unknown opcode closes the connection with
/// 1002. Used only on the connection's event loop.
final class WebSocketCloseHandler: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// How long the client may take to answer the server's close frame.
    static let closeTimeout = TimeAmount.seconds(2)

    private var sentClose = false
    private var receivedClose = false
    private var closeTimer: Scheduled<Void>?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .connectionClose:
            receivedClose = true
            if !sentClose {
                // Echo the client's code; an empty close is answered empty.
                var payload = frame.unmaskedData
                let code = payload.readWebSocketErrorCode().map { UInt16(webSocketErrorCode: $0) }
                sentClose = true
                context.writeAndFlush(wrapOutboundOut(Self.closeFrame(code: code, reason: "", allocator: context.channel.allocator)), promise: nil)
            }
            context.close(promise: nil)
        case .ping:
            guard frame.fin else { return Self.fail(.protocolError, reason: "protocol error", context: context) }
            guard !sentClose else { return }
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .pong:
            break
        case .text, .binary, .continuation:
            guard !sentClose else { return }
            context.fireChannelRead(data)
        default:
            Self.fail(.protocolError, reason: "protocol error", context: context)
        }
    }

    /// A close frame on its way out: the first is sent, with the client's time to answer
    /// (none when it closed first); another is dropped.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard unwrapOutboundIn(data).opcode == .connectionClose else { return context.write(data, promise: promise) }
        guard !sentClose else {
            promise?.succeed()
            return
        }
        sentClose = true
        context.writeAndFlush(data, promise: promise)
        if receivedClose { return context.close(promise: nil) }
        let channel = context.channel
        closeTimer = channel.eventLoop.scheduleTask(in: Self.closeTimeout) { channel.close(promise: nil) }
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
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// Refuses what the client sent with the close `code` (a protocol error, a message too
    /// large or one that does not inflate) and closes the connection at once. Any inbound
    /// WebSocket handler calls it: its close frame goes out through this handler.
    static func fail(_ code: WebSocketErrorCode, reason: String, context: ChannelHandlerContext) {
        let frame = closeFrame(code: UInt16(webSocketErrorCode: code), reason: reason, allocator: context.channel.allocator)
        context.writeAndFlush(NIOAny(frame), promise: nil)
        context.close(promise: nil)
    }

    /// A close frame with `code` (none: an empty close) and `reason`, cut to fit a control frame.
    static func closeFrame(code: UInt16?, reason: String, allocator: ByteBufferAllocator) -> WebSocketFrame {
        var data = allocator.buffer(capacity: 2 + reason.utf8.count)
        if let code {
            data.writeInteger(code)
            data.writeString(closeReason(reason))
        }
        return WebSocketFrame(fin: true, opcode: .connectionClose, data: data)
    }

    /// A close reason must fit in a control frame's 123 bytes.
    static func closeReason(_ reason: String) -> String {
        var utf8 = Array(reason.utf8.prefix(123))
        while String(validating: utf8, as: UTF8.self) == nil { utf8.removeLast() }
        return String(decoding: utf8, as: UTF8.self)
    }
}
