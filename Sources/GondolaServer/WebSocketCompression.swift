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

    /// The extension to offer in the handshake, declining offers zlib cannot honour. Its
    /// compressor only ever sees control frames, which it leaves alone, so it gets zlib's
    /// smallest memory level.
    var factory: WebSocketExtensionFactory {
        let library = WebSocketExtensionFactory.perMessageDeflate(
            compressionLevel: level, memoryLevel: 1, maxDecompressedFrameSize: maxInflatedBytes, minFrameSizeToCompress: minBytes)
        return WebSocketExtensionFactory { CheckedDeflateBuilder(library: library.build()) }
    }

    /// Whether an offer's window parameters, when it gives them, are ones zlib can use: 9–15
    /// for the server's stream (zlib's raw deflate has no 256-byte window), 8–15 for the
    /// client's.
    static func canAccept(_ offer: WebSocketExtensionHTTPParameters) -> Bool {
        if let server = offer.parameters["server_max_window_bits"] {
            guard let bits = server.integer, (9...15).contains(bits) else { return false }
        }
        if case let .value(text)? = offer.parameters["client_max_window_bits"] {
            guard let bits = Int(text), (8...15).contains(bits) else { return false }
        }
        return true
    }

    /// The compressor for the connection `request` opens, nil when it does not negotiate
    /// compression (the extension accepts every permessage-deflate offer).
    func deflater(for request: Request) -> FrameDeflater? {
        FrameDeflater(offers: WebSocketExtensionHTTPParameters.parseHeaders(request.headers), settings: self)
    }
}

/// hummingbird-websocket's permessage-deflate negotiation behind `WebSocketCompression.canAccept`:
/// an offer with window parameters zlib cannot use is declined (the library would hand them to
/// zlib unchecked, and a debug build stops on them), so that client is served uncompressed.
struct CheckedDeflateBuilder: WebSocketExtensionBuilder {
    static let name = "permessage-deflate"
    let library: any WebSocketExtensionBuilder

    func clientRequestHeader() -> String { library.clientRequestHeader() }

    func serverReponseHeader(to request: WebSocketExtensionHTTPParameters) -> String? {
        WebSocketCompression.canAccept(request) ? library.serverReponseHeader(to: request) : nil
    }

    func serverExtension(from request: WebSocketExtensionHTTPParameters) throws -> (any WebSocketExtension)? {
        WebSocketCompression.canAccept(request) ? try library.serverExtension(from: request) : nil
    }

    func clientExtension(from response: WebSocketExtensionHTTPParameters) throws -> (any WebSocketExtension)? {
        try library.clientExtension(from: response)
    }
}
