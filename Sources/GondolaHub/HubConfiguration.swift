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
    /// Longest channel name in bytes (`channel_max_length`); longer ones answer 107.
    public var channelMaxLength: Int = ChannelName.defaultMaxBytes
    /// Most connections one user may hold on this node (`client_user_connection_limit`);
    /// 0: no limit. One more is closed with 3504.
    public var userConnectionLimit: Int = 0
    /// Keep one connection per user (`user_personal_single_connection`): a new connection
    /// closes the user's others, on every node, with 3504. Needs `userSubscribeToPersonal`
    /// and presence in the personal channel's namespace.
    public var userPersonalSingleConnection = false
    /// Let a connect without a token (and no connect proxy) in as an anonymous user
    /// (`allow_anonymous_connect_without_token`); what it may do is each namespace's
    /// `allow_*_for_anonymous`.
    public var allowAnonymousConnectWithoutToken = false
    /// Commands per second a connection may send on average.
    public var commandRate: Double = 100
    /// Commands a connection may send in a burst above the average rate.
    public var commandBurst: Double = 200
    /// Consecutive error replies after which the connection is closed with 3509.
    public var maxConsecutiveErrors: Int = 20
    /// How long a node waits for the other nodes of a cluster to answer a survey (the
    /// server API's `channels`, `cluster_survey_timeout`); those that did not are named in
    /// the answer.
    public var surveyTimeout: Duration = .seconds(2)
    /// Publications of a channel that one `history` call or one recovery may return.
    public var maxHistoryPerRequest: Int = 1000
    /// Namespaces by name; "" is the default namespace, closed unless configured.
    public var namespaces: [String: NamespaceOptions] = ["": .closedDefaultNamespace]
    /// Subscribe every connection, server-side, to its user's personal channel
    /// (`<userPersonalChannelNamespace>:#<user>`), as Centrifugo's option of that name does.
    public var userSubscribeToPersonal = false
    /// The personal channel's namespace; "" puts personal channels in the default
    /// namespace (`#42`), as Centrifugo does when the option is empty.
    public var userPersonalChannelNamespace = "personal"
    /// RPC method prefixes sent to a named proxy (`rpc_proxies`), the longest match first.
    public var rpcProxies: [RPCProxyRoute] = []
    /// Header names (lower-cased) of a `connect`'s emulated `headers` that go with the
    /// connection's proxy requests (`proxy_emulated_headers`); the client controls their
    /// values, so only names the backend checks for itself belong here.
    public var proxyEmulatedHeaders: Set<String> = []

    public init() {}

    /// The options of a namespace, or nil when it is not configured.
    public func namespace(_ name: String) -> NamespaceOptions? { namespaces[name] }

    /// The personal channel of `user`: `<namespace>:#<user>`, or `#<user>` when
    /// `userPersonalChannelNamespace` is empty.
    public func personalChannel(of user: String) -> String {
        userPersonalChannelNamespace.isEmpty ? "#\(user)" : "\(userPersonalChannelNamespace):#\(user)"
    }
}
