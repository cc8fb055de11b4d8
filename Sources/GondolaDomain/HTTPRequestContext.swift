import Hummingbird
import NIOCore

/// The context of every HTTP request the server and its domains answer: Hummingbird's
/// core context, the peer's socket address, which rate limits key on, and the connection,
/// whose end a streaming answer (an HTTP-streaming or SSE session) watches. The address is
/// the TCP peer's; behind a reverse proxy every request shares the proxy's address.
public struct HTTPRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    public let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        channel = source.channel
    }

    /// The peer's IP address as text, or "unknown" when the socket has none (a Unix socket).
    public var clientAddress: String { remoteAddress?.ipAddress ?? "unknown" }
}

/// The router every HTTP route is added to.
public typealias HTTPRouter = Router<HTTPRequestContext>
