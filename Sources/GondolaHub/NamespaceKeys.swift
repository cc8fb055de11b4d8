import GondolaProtocol

/// The options of a namespace object (`namespaces: [{name, ...}]`), named as Centrifugo names
/// them; every one is off, empty or zero unless said, and a reload puts them in force.
extension NamespaceOptions: ConfigurationDefaults {
    public static var defaults: NamespaceOptions { NamespaceOptions(name: "") }

    public static let keys: [ConfigurationKey<NamespaceOptions>] = [
        .integer(
            "history_size", \.historySize, min: 0, reloadable: true,
            doc: "publications a channel's stream keeps; with `history_ttl`, the channel has a stream with offsets and an epoch"),
        .duration("history_ttl", \.historyTTL, allowZero: true, reloadable: true, doc: "how long publications stay in the stream; `0s`: no stream"),
        .boolean(
            "history_durable", \.historyDurable, reloadable: true,
            doc: "keep the stream in the database, so that it survives a restart with the same epoch"),
        .boolean("presence", \.presence, reloadable: true, doc: "keep who is subscribed, for `presence` and `presence_stats`"),
        .boolean("join_leave", \.joinLeave, reloadable: true, doc: "send join and leave pushes to subscribers that ask for them"),
        .boolean(
            "force_push_join_leave", \.forcePushJoinLeave, reloadable: true,
            doc: "send join and leave to every subscriber, not only to those that set `join_leave` in their subscribe"),
        .boolean("force_recovery", \.forceRecovery, reloadable: true, doc: "make every subscription recoverable, whether the client asked or not"),
        .boolean(
            "force_positioning", \.forcePositioning, reloadable: true,
            doc: "tell every subscription its stream position, whether the client asked or not"),
        .boolean(
            "allow_subscribe_for_client", \.allowSubscribeForClient, reloadable: true,
            doc: "any connected client may subscribe without a subscription token"),
        .boolean("allow_publish_for_subscriber", \.allowPublishForSubscriber, reloadable: true, doc: "a subscriber may publish"),
        .boolean("allow_publish_for_client", \.allowPublishForClient, reloadable: true, doc: "any connected client may publish without subscribing"),
        .boolean("allow_history_for_subscriber", \.allowHistoryForSubscriber, reloadable: true, doc: "a subscriber may read the history"),
        .boolean("allow_presence_for_subscriber", \.allowPresenceForSubscriber, reloadable: true, doc: "a subscriber may read presence"),
        .boolean(
            "allow_subscribe_for_anonymous", \.allowSubscribeForAnonymous, reloadable: true,
            doc: "an anonymous connection may subscribe where the options above let a client"),
        .boolean(
            "allow_publish_for_anonymous", \.allowPublishForAnonymous, reloadable: true,
            doc: "an anonymous connection may publish where the options above let a client"),
        .boolean(
            "allow_history_for_anonymous", \.allowHistoryForAnonymous, reloadable: true,
            doc: "an anonymous connection may read history where the options above let a client"),
        .boolean(
            "allow_presence_for_anonymous", \.allowPresenceForAnonymous, reloadable: true,
            doc: "an anonymous connection may read presence where the options above let a client"),
        .duration(
            "history_meta_ttl", \.historyMetaTTL, allowZero: false, reloadable: true,
            doc: "how long a stream keeps its offset and epoch after its last publication, on every engine (as Centrifugo's, 30 days)"),
        ConfigurationKey(
            "allowed_delta_types", type: "list of delta types (`fossil`)", default: "none", reloadable: true,
            doc: "the delta formats a subscription may ask for; a subscription asking for another gets whole publications"
        ) { (field, options) throws(ConfigurationError) in options.allowedDeltaTypes = try field.deltaTypes() },
        .boolean(
            "delta_publish", \.deltaPublish, reloadable: true,
            doc:
                "every publication may go as a delta, as if published with `delta: true`; without it only server API publications that ask for `delta` do, as in Centrifugo"
        ),
        .boolean(
            "allow_tags_filter", \.allowTagsFilter, reloadable: true,
            doc: "subscriptions may send a tags filter (`tf`); without it a filter is refused with 107"),
        .boolean(
            "proxy_subscribe", \.proxySubscribe, reloadable: true, doc: "a subscribe without a token asks the app's backend (the subscribe proxy)"),
        .boolean(
            "proxy_publish", \.proxyPublish, reloadable: true,
            doc: "a client's publish asks the app's backend (the publish proxy), which may refuse it or change its data"),
        proxyName("subscribe_proxy_name", \.subscribeProxyName, what: "subscribes"),
        proxyName("publish_proxy_name", \.publishProxyName, what: "publishes"),
        proxyName("sub_refresh_proxy_name", \.subRefreshProxyName, what: "subscription refreshes"),
    ]

    private static let keysByName = Dictionary(uniqueKeysWithValues: keys.map { ($0.name, $0) })

    /// The namespace object `entry` (at `path` of `source`, for errors): its name, and each
    /// option by its row; an unknown option is refused naming it.
    public static func read(_ entry: JSON, path: String, source: String) throws(ConfigurationError) -> NamespaceOptions {
        guard case let .object(members) = entry else { throw ConfigurationError("\(source): \(path) must be an object") }
        guard case let .string(name)? = entry["name"] else { throw ConfigurationError("\(source): \(path).name is required") }
        guard name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
            throw ConfigurationError("\(source): \(path).name '\(name)' is not a valid namespace name (letters, digits, '-', '_', '.')")
        }
        var options = NamespaceOptions(name: name)
        for member in members where member.key != "name" {
            guard let key = keysByName[member.key] else { throw ConfigurationError("\(source): unknown key '\(path).\(member.key)'") }
            try key.apply(ValueReader(key: "\(path).\(member.key)", value: member.value, source: source), to: &options)
        }
        return options
    }

    /// The named proxy (one of `proxies`) `what` go to; naming one turns that proxy on.
    private static func proxyName(_ name: String, _ path: WritableKeyPath<NamespaceOptions, String?> & Sendable, what: String) -> ConfigurationKey<
        NamespaceOptions
    > {
        ConfigurationKey(
            name, type: "text, not empty", default: "none", reloadable: true,
            doc: "the proxy of `proxies` this namespace's \(what) go to; naming one turns it on"
        ) {
            (field, options) throws(ConfigurationError) in options[keyPath: path] = try field.nonEmptyString()
        }
    }
}
