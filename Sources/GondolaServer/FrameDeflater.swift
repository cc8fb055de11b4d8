import CompressNIO
import NIOCore
import NIOWebSocket

/// Compresses the outgoing messages of one permessage-deflate connection that keeps its
/// context (RFC 7692) synchronously on the connection's event loop, as `ChannelFrameWriter`
/// writes them: one zlib stream per connection, each message flushed with a sync flush whose
/// trailing `00 00 ff ff` is dropped, the first frame marked with RSV1, and each message
/// free to refer back to the previous ones. (A connection without context takeover uses its
/// loop's `SharedFrameDeflater` instead.)
///
/// Messages shorter than `minBytes` go uncompressed, which the protocol always allows
/// and which leaves the stream's context untouched. Should zlib fail, the connection's
/// remaining messages go uncompressed for the same reason. Used only on the
/// connection's event loop, by its writer.
final class FrameDeflater {
    private let minBytes: Int
    private var compressor: ZlibCompressor?

    /// The deflater for a window of 2^`windowBits` bytes, nil when zlib refuses the settings.
    init?(windowBits: Int, settings: WebSocketCompression) {
        let configuration = ZlibConfiguration(
            windowSize: Int32(windowBits), compressionLevel: Int32(settings.level), memoryLevel: Int32(settings.memoryLevel))
        guard let compressor = try? ZlibCompressor(algorithm: .deflate, configuration: configuration) else { return nil }
        self.compressor = compressor
        self.minBytes = settings.minBytes
    }

    /// The single frame carrying `message`, compressed when it is long enough.
    func frame(for message: [UInt8], opcode: WebSocketOpcode, allocator: ByteBufferAllocator) -> WireFrame {
        guard message.count >= minBytes else { return WireFrame(opcode: opcode, payload: message, allocator: allocator) }
        var input = allocator.buffer(bytes: message)
        if let compressed = compress(&input, allocator: allocator) {
            return WireFrame(opcode: opcode, compressed: true, payload: compressed, allocator: allocator)
        }
        return WireFrame(opcode: opcode, payload: message, allocator: allocator)
    }

    private func compress(_ input: inout ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer? {
        guard let compressor else { return nil }
        let original = input
        var output = allocator.buffer(capacity: compressor.maxSize(from: input))
        do {
            try compressor.deflate(from: &input, to: &output, flush: .sync)
            guard input.readableBytes == 0, output.readableBytes >= 4 else { throw CompressNIOError.bufferOverflow }
        } catch {
            self.compressor = nil
            input = original
            return nil
        }
        output.moveWriterIndex(to: output.writerIndex - 4)
        return output
    }
}
