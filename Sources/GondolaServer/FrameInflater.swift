import CompressNIO
import NIOCore

/// Inflates the compressed messages one permessage-deflate connection receives
/// (RFC 7692), synchronously on the connection's event loop, the `00 00 ff ff` the sender
/// dropped put back at the end of each message. A client that keeps its context has a
/// zlib stream of this connection's own; a client without context takeover (declared by
/// the server, or asked for) compresses each message on its own, so the connections of an
/// event loop share one stream, reset after every message. Used only on the connection's
/// event loop, by its `WebSocketSessionHandler`.
final class FrameInflater {
    /// One event loop's stream for a client window, shared by its connections without context takeover.
    private final class SharedStream {
        let decompressor: ZlibDecompressor

        init?(windowBits: Int) {
            guard let decompressor = try? ZlibDecompressor(algorithm: .deflate, windowSize: Int32(windowBits)) else { return nil }
            self.decompressor = decompressor
        }
    }

    private static let perLoop = EventLoopLocal<Int, SharedStream?>()

    private let decompressor: ZlibDecompressor
    private let resetsAfterEachMessage: Bool

    /// The inflater for `agreement`'s connection on `loop`, nil when zlib refuses its window.
    init?(agreement: DeflateAgreement, loop: any EventLoop) {
        let windowBits = agreement.clientWindowBits
        if agreement.clientNoContextTakeover {
            guard let shared = Self.perLoop.value(on: loop, for: windowBits, make: { SharedStream(windowBits: windowBits) }) else { return nil }
            decompressor = shared.decompressor
        } else {
            guard let own = try? ZlibDecompressor(algorithm: .deflate, windowSize: Int32(windowBits)) else { return nil }
            decompressor = own
        }
        resetsAfterEachMessage = agreement.clientNoContextTakeover
    }

    /// The message `compressed` carries, at most `maxBytes` long; throws when it is longer
    /// or is not a deflate stream.
    func inflate(_ compressed: ByteBuffer, maxBytes: Int, allocator: ByteBufferAllocator) throws -> ByteBuffer {
        var input = compressed
        input.writeBytes([0, 0, 0xff, 0xff])
        // A shared stream starts the next message afresh whatever became of this one.
        defer { if resetsAfterEachMessage { try? decompressor.reset() } }
        return try input.decompressStream(with: decompressor, maxSize: maxBytes, allocator: allocator)
    }
}
