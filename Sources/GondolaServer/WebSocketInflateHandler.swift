import CompressNIO
import NIOCore
import NIOWebSocket

/// Inflates the messages the client compressed (permessage-deflate), after
/// `WebSocketMessageAssembler`, with the connection's `FrameInflater`: one that inflates past
/// `maxInflatedBytes` closes with 1009, one that does not inflate with 1007, and one whose
/// inflated size passes `maxMessageBytes` goes on as `.oversized`. In the pipeline only of a
/// connection that agreed on compression. Used only on the connection's event loop.
final class WebSocketInflateHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketInbound
    typealias InboundOut = WebSocketInbound
    typealias OutboundOut = WebSocketFrame

    private let inflater: FrameInflater
    private let maxMessageBytes: Int
    private let maxInflatedBytes: Int

    init(inflater: FrameInflater, maxMessageBytes: Int, maxInflatedBytes: Int) {
        self.inflater = inflater
        self.maxMessageBytes = maxMessageBytes
        self.maxInflatedBytes = maxInflatedBytes
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case let .message(compressed, binary, true) = unwrapInboundIn(data) else { return context.fireChannelRead(data) }
        let bytes: ByteBuffer
        do {
            bytes = try inflater.inflate(compressed, maxBytes: maxInflatedBytes, allocator: context.channel.allocator)
        } catch let error as CompressNIOError where error == .bufferOverflow {
            return WebSocketCloseHandler.fail(.messageTooLarge, reason: "message inflates past \(maxInflatedBytes) bytes", context: context)
        } catch {
            return WebSocketCloseHandler.fail(.dataInconsistentWithMessage, reason: "compressed message does not inflate", context: context)
        }
        guard bytes.readableBytes <= maxMessageBytes else { return context.fireChannelRead(wrapInboundOut(.oversized(bytes: bytes.readableBytes))) }
        context.fireChannelRead(wrapInboundOut(.message(bytes, binary: binary, compressed: false)))
    }
}
