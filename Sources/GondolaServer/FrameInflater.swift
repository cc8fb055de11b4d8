import CompressNIO
import HummingbirdWebSocket
import NIOCore

/// Inflates the compressed messages one permessage-deflate connection receives
/// (RFC 7692), synchronously on the connection's event loop: one zlib stream per
/// connection, the `00 00 ff ff` the sender dropped put back at the end of each
/// message. A client that announced `client_no_context_takeover` gets its stream
/// reset after every message. Used only on the connection's event loop, by its
/// `WebSocketSessionHandler`.
final class FrameInflater: @unchecked Sendable {
    private let decompressor: ZlibDecompressor
    private let resetsAfterEachMessage: Bool

    /// The inflater for the accepted permessage-deflate `offer`, nil when zlib refuses its window.
    init?(offer: WebSocketExtensionHTTPParameters) {
        // The client compresses with at most the window it announced (15 when it gave no number).
        let windowBits = offer.parameters["client_max_window_bits"]?.integer ?? 15
        guard let decompressor = try? ZlibDecompressor(algorithm: .deflate, windowSize: Int32(windowBits)) else { return nil }
        self.decompressor = decompressor
        self.resetsAfterEachMessage = offer.parameters["client_no_context_takeover"] != nil
    }

    /// The message `compressed` carries, at most `maxBytes` long; throws when it is longer
    /// or is not a deflate stream.
    func inflate(_ compressed: ByteBuffer, maxBytes: Int, allocator: ByteBufferAllocator) throws -> ByteBuffer {
        var input = compressed
        input.writeBytes([0, 0, 0xff, 0xff])
        let message = try input.decompressStream(with: decompressor, maxSize: maxBytes, allocator: allocator)
        if resetsAfterEachMessage { try decompressor.reset() }
        return message
    }
}
