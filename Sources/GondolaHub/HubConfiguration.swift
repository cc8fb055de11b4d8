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

/// The engine's configuration keys: connection timings and limits, personal channels,
/// command rates, cluster surveys and RPC routing. A reload puts every one but `node_name`
/// in force.
extension HubConfiguration: ConfigurationDefaults {
    public static var defaults: HubConfiguration { HubConfiguration() }

    public static let keys: [ConfigurationKey<HubConfiguration>] = [
        .text("node_name", \.nodeName, nonEmpty: true, doc: "this node's name in the server API's `info`"),
        .duration(
            "ping_interval", \.pingInterval, allowZero: true, reloadable: true,
            doc: "how often the server pings a connection (`{}`); `0s` turns pings off"),
        .duration(
            "pong_timeout", \.pongTimeout, allowZero: false, reloadable: true,
            doc:
                "how long after a ping a client has to send anything; silence closes the connection with 3012. A message counts when it arrives, even while the session is busy with a slow command, and the deadline waits while the server itself has stopped reading the connection (16 messages waiting)"
        ),
        .integer(
            "client_queue_max_bytes", \.clientQueueMaxBytes, min: 1024, reloadable: true,
            doc: "bytes a connection may have waiting to be written; more closes it with 3008 (slow)"),
        .integer(
            "max_channels_per_client", \.maxChannelsPerClient, min: 1, reloadable: true, doc: "subscriptions per connection; one more answers 106"),
        .boolean(
            "user_subscribe_to_personal", \.userSubscribeToPersonal, reloadable: true,
            doc: "subscribe every connection server-side to its user's personal channel `<user_personal_channel_namespace>:#<user>`"),
        .text(
            "user_personal_channel_namespace", \.userPersonalChannelNamespace, reloadable: true,
            doc: "the personal channel's namespace; empty makes it `#<user>` in the default namespace, as Centrifugo does"),
        .boolean(
            "user_personal_single_connection", \.userPersonalSingleConnection, reloadable: true,
            doc:
                "keep one connection per user: each new connection closes the user's others, on every node, with 3504 (counted as `limit=\"user_personal_single_connection\"`). Unlike Centrifugo it needs neither `user_subscribe_to_personal` nor presence: the new connection's node tells every node over the engine"
        ),
        .integer(
            "client_user_connection_limit", \.userConnectionLimit, min: 0, reloadable: true,
            doc:
                "most connections one user holds on this node, 0 for no limit (anonymous connections are not counted); one more is closed with 3504 \"connection limit\" after its `connect`, counted as `limit=\"client_user_connection_limit\"` and logged with the user"
        ),
        .integer(
            "channel_max_length", \.channelMaxLength, min: 1, max: 65_535, reloadable: true,
            doc: "longest channel name in bytes; a longer one answers 107, as Centrifugo"),
        .boolean(
            "allow_anonymous_connect_without_token", \.allowAnonymousConnectWithoutToken, reloadable: true,
            doc:
                "a `connect` without a token (and no connect proxy) gets in as an anonymous user (empty user id) instead of being closed with 3501 (as centrifuge closes it: no credentials). An anonymous connection may subscribe, publish, read history and presence only where the namespace also sets `allow_subscribe_for_anonymous`, `allow_publish_for_anonymous`, `allow_history_for_anonymous`, `allow_presence_for_anonymous`; the domains' channels and RPC methods refuse it (103) and its RPCs go only to the RPC proxy"
        ),
        commandsPerSecond(
            "command_rate", \.commandRate,
            doc: "commands per second one connection may send on average; beyond it a command answers 111 (too many requests)"),
        commandsPerSecond("command_burst", \.commandBurst, doc: "commands one connection may send in a burst above `command_rate`"),
        ConfigurationKey(
            "cluster_survey_timeout", type: "duration > 0, at most 30s", default: DurationText.text(of: defaults.surveyTimeout), reloadable: true,
            doc:
                "cluster mode: how long the server API's `channels` waits for the other nodes' answers; a node that did not answer is named in `unanswered_nodes`"
        ) { (field, hub) throws(ConfigurationError) in
            let timeout = try field.duration(allowZero: false)
            guard timeout <= .seconds(30) else { throw field.error("must be at most 30s (a server API call waits this long), got \(timeout)") }
            hub.surveyTimeout = timeout
        },
        ConfigurationKey(
            "proxy_emulated_headers", type: "list of header names", default: "none", reloadable: true,
            doc:
                "header names of a `connect`'s emulated `headers` (what browser SDKs send, since a browser cannot set a WebSocket's headers) sent with the connection's proxy requests; the client chooses their values, so list only names the backend checks itself"
        ) { (field, hub) throws(ConfigurationError) in hub.proxyEmulatedHeaders = Set(try field.list(of: "header names").map { $0.lowercased() }) },
        ConfigurationKey(
            "rpc_proxies", type: "list of {prefix, proxy}", default: "none", reloadable: true,
            doc: "RPC method prefixes, each sent to one of `proxies` by name; the longest matching prefix wins"
        ) { (field, hub) throws(ConfigurationError) in
            hub.rpcProxies = try field.objects(keys: ["prefix", "proxy"]).enumerated().map { (index, entry) throws(ConfigurationError) in
                RPCProxyRoute(
                    prefix: try entry.string("prefix", path: "rpc_proxies[\(index)]"), proxy: try entry.string("proxy", path: "rpc_proxies[\(index)]")
                )
            }
        },
    ]

    /// A rate or burst, given as a whole number from 1 and kept as a `Double` by the token bucket.
    private static func commandsPerSecond(_ name: String, _ path: WritableKeyPath<HubConfiguration, Double> & Sendable, doc: String)
        -> ConfigurationKey<HubConfiguration>
    {
        ConfigurationKey(name, type: "whole number, at least 1", default: "\(Int(defaults[keyPath: path]))", reloadable: true, doc: doc) {
            (field, hub) throws(ConfigurationError) in hub[keyPath: path] = Double(try field.integer(min: 1))
        }
    }
}
