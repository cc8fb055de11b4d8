import NIOCore
import NIOWebSocket

/// What the inbound WebSocket handlers pass on to the session's handler.
enum WebSocketInbound {
    /// A whole message, its bytes joined from its frames (and inflated, past
    /// `WebSocketInflateHandler`, when the client compressed it).
    case message(ByteBuffer, binary: Bool, compressed: Bool)
    /// A message past `max_frame_bytes`, with its size when that was found: the session refuses
    /// it with 3501 naming the size.
    case oversized(bytes: Int)
}

/// Assembles the client's messages from their frames, after `WebSocketCloseHandler`: a text or
/// binary frame starts a message, continuations add to it, the final frame completes it.
/// permessage-deflate marks a compressed message with RSV1 on its first frame, which NIO's
/// `NIOWebSocketFrameAggregator` drops from a fragmented message; hence this handler.
///
/// Limits: an uncompressed message past `maxMessageBytes` goes on as `.oversized` and the
/// connection's later data is dropped (the session closes); a compressed one whose fragments
/// pass `maxCompressedBytes` closes with 1009. RSV2, RSV3, RSV1 without compression or on a
/// continuation, a stray continuation, or a new message before the last one ended close with
/// 1002. Used only on the connection's event loop.
final class WebSocketMessageAssembler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketInbound
    typealias OutboundOut = WebSocketFrame

    private let maxMessageBytes: Int
    private let maxCompressedBytes: Int
    private let acceptsCompressed: Bool
    private var partial: (bytes: ByteBuffer, binary: Bool, compressed: Bool)?
    private var refused = false

    init(maxMessageBytes: Int, maxCompressedBytes: Int, acceptsCompressed: Bool) {
        self.maxMessageBytes = maxMessageBytes
        self.maxCompressedBytes = maxCompressedBytes
        self.acceptsCompressed = acceptsCompressed
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        let frame = unwrapInboundIn(data)
        guard !frame.rsv2, !frame.rsv3, !frame.rsv1 || (acceptsCompressed && frame.opcode != .continuation) else {
            return fail(.protocolError, reason: "protocol error", context: context)
        }
        var message: (bytes: ByteBuffer, binary: Bool, compressed: Bool)
        if frame.opcode == .continuation {
            guard var started = partial else { return fail(.protocolError, reason: "protocol error", context: context) }
            var data = frame.unmaskedData
            started.bytes.writeBuffer(&data)
            message = started
        } else {
            guard partial == nil else { return fail(.protocolError, reason: "protocol error", context: context) }
            message = (frame.unmaskedData, frame.opcode == .binary, frame.rsv1)
        }
        partial = nil
        if !message.compressed, message.bytes.readableBytes > maxMessageBytes {
            refused = true
            return context.fireChannelRead(wrapInboundOut(.oversized(bytes: message.bytes.readableBytes)))
        }
        if message.compressed, message.bytes.readableBytes > maxCompressedBytes {
            return fail(.messageTooLarge, reason: "compressed message past \(maxCompressedBytes) bytes", context: context)
        }
        guard frame.fin else {
            partial = message
            return
        }
        context.fireChannelRead(wrapInboundOut(.message(message.bytes, binary: message.binary, compressed: message.compressed)))
    }

    private func fail(_ code: WebSocketErrorCode, reason: String, context: ChannelHandlerContext) {
        partial = nil
        refused = true
        WebSocketCloseHandler.fail(code, reason: reason, context: context)
    }
}
