/// Limits and timings of the engine, and the namespaces it knows.
public struct HubConfiguration: Sendable {
    /// Name of this node as reported by the server API's `info`.
    public var nodeName: String = "gondola"
    /// Interval between server pings (`{}`); zero turns pings off.
    public var pingInterval: Duration = .seconds(25)
    /// How long after a ping the client has to send anything before it is closed with 3012.
    public var pongTimeout: Duration = .seconds(8)
    /// Bytes a connection may have waiting to be written; more closes it with 3008.
    public var clientQueueMaxBytes: Int = 4 * 1024 * 1024
    /// Largest message a frame written to a client may coalesce before it is split into another frame.
    public var maxOutboundFrameBytes: Int = 64 * 1024
    public var maxChannelsPerClient: Int = 128
    /// Commands per second a connection may send on average.
    public var commandRate: Double = 100
    /// Commands a connection may send in a burst above the average rate.
    public var commandBurst: Double = 200
    /// Consecutive error replies after which the connection is closed with 3509.
    public var maxConsecutiveErrors: Int = 20
    /// Publications of a channel that one `history` call or one recovery may return.
    public var maxHistoryPerRequest: Int = 1000
    /// Namespaces by name; "" is the default namespace.
    public var namespaces: [String: NamespaceOptions] = ["": .defaultNamespace]
    /// Subscribe every connection, server-side, to its user's personal channel
    /// (`<userPersonalChannelNamespace>:#<user>`), as Centrifugo's option of that name does.
    public var userSubscribeToPersonal = false
    public var userPersonalChannelNamespace = "personal"
    /// RPC method prefixes sent to a named proxy (`rpc_proxies`), the longest match first.
    public var rpcProxies: [RPCProxyRoute] = []

    public init() {}

    /// The options of a namespace, or nil when it is not configured.
    public func namespace(_ name: String) -> NamespaceOptions? { namespaces[name] }
}
