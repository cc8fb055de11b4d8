import GondolaProtocol

/// The options of a channel namespace (`namespace:name`), named as Centrifugo names them.
public struct NamespaceOptions: Sendable, Equatable {
    public var name: String
    /// How many publications a channel's stream keeps (0: no stream).
    public var historySize: Int = 0
    /// How long publications stay in a stream (zero: no stream).
    public var historyTTL: Duration = .zero
    /// Keep the stream in the database so that it survives a restart with the same epoch.
    public var historyDurable: Bool = false
    public var presence: Bool = false
    /// Send join and leave pushes to subscribers that ask for them.
    public var joinLeave: Bool = false
    /// With `joinLeave`, send join and leave pushes to every subscriber, whether it asked or not.
    public var forcePushJoinLeave: Bool = false
    /// Make every subscription recoverable, whether the client asked or not.
    public var forceRecovery: Bool = false
    /// Make every subscription positioned (told its stream position), whether the client asked or not.
    public var forcePositioning: Bool = false
    public var allowSubscribeForClient: Bool = false
    public var allowPublishForSubscriber: Bool = false
    /// Any connected client may publish, subscribed or not (Centrifugo's `allow_publish_for_client`).
    public var allowPublishForClient: Bool = false
    public var allowHistoryForSubscriber: Bool = false
    public var allowPresenceForSubscriber: Bool = false
    /// What an anonymous connection (`allow_anonymous_connect_without_token`) may do besides
    /// what the options above allow every client: each needs its `allow_*` option above too,
    /// as Centrifugo's `*_for_anonymous` options do.
    public var allowSubscribeForAnonymous: Bool = false
    public var allowPublishForAnonymous: Bool = false
    public var allowHistoryForAnonymous: Bool = false
    public var allowPresenceForAnonymous: Bool = false
    /// How long a stream keeps its offset and epoch after its last publication
    /// (Centrifugo's `history_meta_ttl`), so a client back after a quiet spell recovers.
    public var historyMetaTTL: Duration = NamespaceOptions.defaultHistoryMetaTTL
    /// The delta formats a subscription may ask for (Centrifugo's `allowed_delta_types`);
    /// a subscription asking for another gets whole publications.
    public var allowedDeltaTypes: Set<DeltaType> = []
    /// Every publication of the namespace may go as a delta to the subscriptions that
    /// negotiated one (Centrifugo's `delta_publish`); without it only those published
    /// with `delta` do.
    public var deltaPublish: Bool = false
    /// Subscriptions may ask for a tags filter (`tf`; Centrifugo's `allow_tags_filter`):
    /// only publications whose tags match it reach them.
    public var allowTagsFilter: Bool = false
    /// A subscribe without a token asks the app's backend (the subscribe proxy) instead of
    /// `allowSubscribeForClient`.
    public var proxySubscribe: Bool = false
    /// A client's publish asks the app's backend (the publish proxy), which may refuse it or
    /// change its data, instead of `allowPublishForSubscriber`/`allowPublishForClient`.
    public var proxyPublish: Bool = false
    /// The named proxies (`proxies`) this namespace's subscribes, publishes and subscription
    /// refreshes go to; a name turns that proxy on for the namespace.
    public var subscribeProxyName: String?
    public var publishProxyName: String?
    public var subRefreshProxyName: String?

    public init(name: String) { self.name = name }

    /// Whether channels of this namespace keep a stream with offsets and an epoch.
    public var keepsHistory: Bool { historySize > 0 && historyTTL > .zero }

    /// `history_meta_ttl` when a namespace does not set it: 30 days, as Centrifugo's.
    public static let defaultHistoryMetaTTL = Duration.seconds(30 * 86_400)

    /// The default namespace (channels without a `:`) when the configuration does not
    /// define `""`: every permission off, as in Centrifugo; the server API can still publish.
    public static var closedDefaultNamespace: NamespaceOptions { NamespaceOptions(name: "") }
}

/// A channel name split into its parts and checked against the naming rules: printable
/// ASCII without spaces (bytes 33–126; `|`, `$` and the like are ordinary characters), at
/// most `maxBytes` bytes (`channel_max_length`).
public struct ChannelName: Sendable, Equatable {
    /// Longest channel name in bytes when `channel_max_length` is not set, as Centrifugo's default.
    public static let defaultMaxBytes = 255

    public let raw: String
    /// The part before the first `:`, or "" for the default namespace.
    public let namespace: String
    /// The part after the namespace's `:` (the id a domain reads: a chat, a trip, a
    /// crash); the whole name in the default namespace.
    public let key: String
    /// Users allowed to subscribe when the name has a `#`, else nil.
    public let allowedUsers: Set<String>?

    /// The one user of a user-limited channel such as `nearby:#<uid>`, else nil.
    public var soleUser: String? {
        guard let allowedUsers, allowedUsers.count == 1 else { return nil }
        return allowedUsers.first
    }

    /// Parses and validates `raw`; the error (107, as centrifuge answers "channel too long")
    /// says what is wrong with it: an empty name, a name longer than `maxBytes`, or a byte
    /// outside the rules.
    public init(_ raw: String, maxBytes: Int = ChannelName.defaultMaxBytes) throws(HubError) {
        guard !raw.isEmpty else { throw HubError.badRequest("channel name is empty") }
        let utf8 = raw.utf8
        guard utf8.count <= maxBytes else {
            throw HubError.badRequest("channel name is \(utf8.count) bytes, more than channel_max_length \(maxBytes)")
        }
        if let byte = utf8.first(where: { !Self.isAllowed($0) }) {
            throw HubError.badRequest("channel name has byte \(byte), outside printable ASCII (33-126)")
        }
        self.raw = raw
        if let colon = raw.firstIndex(of: ":") {
            namespace = String(raw[..<colon])
            key = String(raw[raw.index(after: colon)...])
        } else {
            namespace = ""
            key = raw
        }
        if let hash = raw.lastIndex(of: "#") {
            let users = raw[raw.index(after: hash)...].split(separator: ",").map(String.init)
            allowedUsers = Set(users)
        } else {
            allowedUsers = nil
        }
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        (33...126).contains(byte)
    }
}
