import Hummingbird
import HummingbirdWSCompression
import HummingbirdWebSocket

/// permessage-deflate (RFC 7692) on the WebSocket endpoint, negotiated per connection by
/// hummingbird-websocket's compression extension: a client that offers it gets outgoing
/// frames of at least `minBytes` compressed (with the previous frames as context) and may
/// send compressed frames; a client that does not offer it is served uncompressed.
struct WebSocketCompression: Sendable {
    /// Frames shorter than this go uncompressed (deflate's own overhead is about 10 bytes).
    let minBytes: Int
    /// zlib's level: 1 is the fastest, 9 the smallest.
    let level: Int
    /// Largest message a compressed incoming frame may inflate to.
    let maxInflatedBytes: Int

    /// The extension to offer in the handshake.
    var factory: WebSocketExtensionFactory {
        .perMessageDeflate(compressionLevel: level, maxDecompressedFrameSize: maxInflatedBytes, minFrameSizeToCompress: minBytes)
    }

    /// Whether the handshake of `request` negotiates compression: the extension accepts
    /// every permessage-deflate offer, so an offer is an agreement.
    static func isOffered(in request: Request) -> Bool {
        WebSocketExtensionHTTPParameters.parseHeaders(request.headers).contains { $0.name == "permessage-deflate" }
    }
}
