import Hummingbird
import HummingbirdWSCompression
import HummingbirdWebSocket

/// permessage-deflate (RFC 7692) on the WebSocket endpoint. hummingbird-websocket's
/// compression extension negotiates it per connection (a client that does not offer it
/// is served uncompressed) and inflates what the client sends; the outgoing messages
/// are compressed by the connection's `FrameDeflater` on its event loop, as they are
/// written, and never pass through the extension's own compressor.
struct WebSocketCompression: Sendable {
    /// Messages shorter than this go uncompressed (deflate's own overhead is about 10 bytes).
    let minBytes: Int
    /// zlib's level: 1 is the fastest, 9 the smallest.
    let level: Int
    /// zlib's window for outgoing messages, 2^bits bytes (9…15); a client may lower it.
    let windowBits: Int
    /// zlib's memory level for outgoing messages (1…9): hash table and buffer sizes.
    let memoryLevel: Int
    /// Largest message a compressed incoming frame may inflate to.
    let maxInflatedBytes: Int

    /// The extension to offer in the handshake. Its compressor only ever sees control
    /// frames, which it leaves alone, so it gets zlib's smallest memory level.
    var factory: WebSocketExtensionFactory {
        .perMessageDeflate(compressionLevel: level, memoryLevel: 1, maxDecompressedFrameSize: maxInflatedBytes, minFrameSizeToCompress: minBytes)
    }

    /// The compressor for the connection `request` opens, nil when it does not negotiate
    /// compression (the extension accepts every permessage-deflate offer).
    func deflater(for request: Request) -> FrameDeflater? {
        FrameDeflater(offers: WebSocketExtensionHTTPParameters.parseHeaders(request.headers), settings: self)
    }
}
