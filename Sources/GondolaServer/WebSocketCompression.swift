import Hummingbird
import HummingbirdWSCompression
import HummingbirdWebSocket
import NIOCore

/// permessage-deflate (RFC 7692) on the WebSocket endpoint, negotiated per connection:
/// a client that offers it gets it (the first of its offers that zlib can honour, answered
/// with hummingbird-websocket's response header for that offer), any other is served
/// uncompressed.
///
/// Without `contextTakeover` (the default) the server declares `server_no_context_takeover`
/// and `client_no_context_takeover`, which RFC 7692 lets it add to any offer: every message
/// is then compressed on its own, so the connections of an event loop share one deflate
/// (`SharedFrameDeflater`, a publication deflated once per loop) and one inflate, and a
/// compressed connection holds no zlib state of its own. With `contextTakeover` each
/// connection keeps its own streams (`FrameDeflater`, `FrameInflater`), which compress small
/// frames of one conversation better and cost about 240 KiB per connection at 15/8; a client
/// that asks for no context takeover gets the shared form either way.
struct WebSocketCompression: Sendable {
    /// Messages shorter than this go uncompressed (deflate's own overhead is about 10 bytes).
    let minBytes: Int
    /// zlib's level: 1 is the fastest, 9 the smallest.
    let level: Int
    /// zlib's window for outgoing messages, 2^bits bytes (9…15); a client may lower it.
    let windowBits: Int
    /// zlib's memory level for outgoing messages (1…9): hash table and buffer sizes.
    let memoryLevel: Int
    /// Whether a connection keeps its compression context from message to message.
    let contextTakeover: Bool
    /// hummingbird-websocket's negotiation, which words the accepting response header.
    private let negotiation: any WebSocketExtensionBuilder

    init(minBytes: Int, level: Int, windowBits: Int, memoryLevel: Int, contextTakeover: Bool) {
        self.minBytes = minBytes
        self.level = level
        self.windowBits = windowBits
        self.memoryLevel = memoryLevel
        self.contextTakeover = contextTakeover
        self.negotiation = WebSocketExtensionFactory.perMessageDeflate(
            clientNoContextTakeover: !contextTakeover, serverNoContextTakeover: !contextTakeover, compressionLevel: level, memoryLevel: memoryLevel
        ).build()
    }

    /// What accepting the first acceptable permessage-deflate offer in `fields` settles, with
    /// the `Sec-WebSocket-Extensions` value that says so; nil when there is no such offer.
    func agreement(for fields: HTTPFields) -> (agreement: DeflateAgreement, responseHeader: String)? {
        guard
            let offer = WebSocketExtensionHTTPParameters.parseHeaders(fields).first(where: { $0.name == "permessage-deflate" && Self.canAccept($0) }),
            let header = negotiation.serverReponseHeader(to: offer)
        else { return nil }
        let agreement = DeflateAgreement(
            // The client may cap the server's window; a window smaller than the agreed one
            // is always readable by the client, so the configured one applies below the cap.
            serverWindowBits: min(windowBits, offer.parameters["server_max_window_bits"]?.integer ?? 15),
            serverNoContextTakeover: offer.parameters["server_no_context_takeover"] != nil || !contextTakeover,
            // The client compresses with at most the window it announced (15 when it gave no number).
            clientWindowBits: offer.parameters["client_max_window_bits"]?.integer ?? 15,
            clientNoContextTakeover: offer.parameters["client_no_context_takeover"] != nil || !contextTakeover)
        return (agreement, header)
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

    /// How `agreement`'s connection on `loop` deflates what it writes; nil when zlib refuses
    /// the settings (the connection is then served uncompressed).
    func outgoing(_ agreement: DeflateAgreement, on loop: any EventLoop) -> FrameCompression? {
        if agreement.serverNoContextTakeover {
            let settings = SharedFrameDeflater.Settings(
                windowBits: agreement.serverWindowBits, level: level, memoryLevel: memoryLevel, minBytes: minBytes)
            return SharedFrameDeflater.of(loop, settings: settings).map(FrameCompression.shared)
        }
        return FrameDeflater(windowBits: agreement.serverWindowBits, settings: self).map(FrameCompression.ownStream)
    }
}

/// What one connection's permessage-deflate handshake settled.
struct DeflateAgreement: Sendable {
    /// The window the server compresses with, 2^bits bytes.
    let serverWindowBits: Int
    /// Each server message is compressed on its own.
    let serverNoContextTakeover: Bool
    /// The window the client compresses with at most.
    let clientWindowBits: Int
    /// Each client message is compressed on its own.
    let clientNoContextTakeover: Bool
}

/// How a compressed connection's frames are deflated.
enum FrameCompression {
    /// Its own stream, which keeps the context from message to message.
    case ownStream(FrameDeflater)
    /// Its event loop's deflate, shared by the connections without context takeover.
    case shared(SharedFrameDeflater)
}
