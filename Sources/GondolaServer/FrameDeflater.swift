import CompressNIO
import HummingbirdWebSocket
import NIOCore
import NIOWebSocket

/// Compresses the outgoing messages of one permessage-deflate connection (RFC 7692)
/// synchronously on the connection's event loop, as `ChannelFrameWriter` writes them:
/// one zlib stream per connection, each message flushed with a sync flush whose
/// trailing `00 00 ff ff` is dropped, the first frame marked with RSV1. With context
/// takeover (the default) each message may refer back to the previous ones; a client
/// that asked for `server_no_context_takeover` gets a stream reset after every message.
///
/// Messages shorter than `minBytes` go uncompressed, which the protocol always allows
/// and which leaves the stream's context untouched. Should zlib fail, the connection's
/// remaining messages go uncompressed for the same reason. Used only on the
/// connection's event loop, by its writer.
final class FrameDeflater: @unchecked Sendable {
    private let minBytes: Int
    private let resetsAfterEachMessage: Bool
    private var compressor: ZlibCompressor?

    /// The deflater for the accepted permessage-deflate `offer`, nil when zlib refuses the settings.
    init?(offer: WebSocketExtensionHTTPParameters, settings: WebSocketCompression) {
        // The client may cap the server's window; a window smaller than the agreed one
        // is always readable by the client, so the configured one applies below the cap.
        let windowBits = min(settings.windowBits, offer.parameters["server_max_window_bits"]?.integer ?? 15)
        let configuration = ZlibConfiguration(
            windowSize: Int32(windowBits), compressionLevel: Int32(settings.level), memoryLevel: Int32(settings.memoryLevel))
        guard let compressor = try? ZlibCompressor(algorithm: .deflate, configuration: configuration) else { return nil }
        self.compressor = compressor
        self.minBytes = settings.minBytes
        self.resetsAfterEachMessage = offer.parameters["server_no_context_takeover"] != nil
    }

    /// The single frame carrying `message`, compressed when it is long enough.
    func frame(for message: [UInt8], opcode: WebSocketOpcode, allocator: ByteBufferAllocator) -> WebSocketFrame {
        var input = allocator.buffer(bytes: message)
        if message.count >= minBytes, let compressed = compress(&input, allocator: allocator) {
            return WebSocketFrame(fin: true, rsv1: true, opcode: opcode, data: compressed)
        }
        return WebSocketFrame(fin: true, opcode: opcode, data: input)
    }

    private func compress(_ input: inout ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer? {
        guard let compressor else { return nil }
        let original = input
        var output = allocator.buffer(capacity: compressor.maxSize(from: input))
        do {
            try compressor.deflate(from: &input, to: &output, flush: .sync)
            guard input.readableBytes == 0, output.readableBytes >= 4 else { throw CompressNIOError.bufferOverflow }
            if resetsAfterEachMessage { try compressor.reset() }
        } catch {
            self.compressor = nil
            input = original
            return nil
        }
        output.moveWriterIndex(to: output.writerIndex - 4)
        return output
    }
}
