/// How a session's connection carries the protocol, which decides what its connect
/// result says and how the session ends.
public enum SessionTransport: Sendable, Equatable {
    /// A WebSocket: commands and replies both ways, the close frame ends it.
    case bidirectional
    /// An HTTP-streaming or SSE answer carrying replies and pushes, with the client's later
    /// commands posted to `/emulation`: the connect result names the session's key and
    /// node, and a disconnect push ends the stream.
    case emulation
    /// A stream the client only reads: it connects with the request its transport carried,
    /// the connect result arrives as a push, pings want no pong, a disconnect push ends it.
    case unidirectional
}
