import Hummingbird
import HummingbirdWSCompression
import HummingbirdWebSocket

/// permessage-deflate (RFC 7692) on the WebSocket endpoint, negotiated per connection:
/// a client that offers it gets it (the first of its offers that zlib can honour, answered
/// with hummingbird-websocket's response header for that offer), any other is served
/// uncompressed. The connection's `FrameDeflater` compresses what the server writes and
/// its `FrameInflater` inflates what the client compressed, both on its event loop.
struct WebSocketCompression: Sendable {
    /// Messages shorter than this go uncompressed (deflate's own overhead is about 10 bytes).
    let minBytes: Int
    /// zlib's level: 1 is the fastest, 9 the smallest.
    let level: Int
    /// zlib's window for outgoing messages, 2^bits bytes (9…15); a client may lower it.
    let windowBits: Int
    /// zlib's memory level for outgoing messages (1…9): hash table and buffer sizes.
    let memoryLevel: Int
    /// hummingbird-websocket's negotiation, which words the accepting response header.
    private let negotiation: any WebSocketExtensionBuilder

    init(minBytes: Int, level: Int, windowBits: Int, memoryLevel: Int) {
        self.minBytes = minBytes
        self.level = level
        self.windowBits = windowBits
        self.memoryLevel = memoryLevel
        self.negotiation = WebSocketExtensionFactory.perMessageDeflate(compressionLevel: level, memoryLevel: memoryLevel).build()
    }

    /// The first permessage-deflate offer in `fields` that can be accepted, nil when there is none.
    func acceptedOffer(in fields: HTTPFields) -> WebSocketExtensionHTTPParameters? {
        WebSocketExtensionHTTPParameters.parseHeaders(fields).first { $0.name == "permessage-deflate" && Self.canAccept($0) }
    }

    /// The `Sec-WebSocket-Extensions` value that accepts `offer`.
    func responseHeader(to offer: WebSocketExtensionHTTPParameters) -> String? {
        negotiation.serverReponseHeader(to: offer)
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
}
