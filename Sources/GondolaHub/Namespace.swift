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
    /// The delta formats a subscription may ask for (Centrifugo's `allowed_delta_types`);
    /// a subscription asking for another gets whole publications.
    public var allowedDeltaTypes: Set<DeltaType> = []
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

    /// The default namespace's options when the configuration does not set them:
    /// clients may subscribe and subscribers may publish; no stream, no presence.
    public static var defaultNamespace: NamespaceOptions {
        var options = NamespaceOptions(name: "")
        options.allowSubscribeForClient = true
        options.allowPublishForSubscriber = true
        return options
    }
}

/// A channel name split into its parts and checked against the naming rules.
public struct ChannelName: Sendable, Equatable {
    /// Longest channel name in bytes.
    public static let maxBytes = 255

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

    /// Parses and validates `raw`; the error says what is wrong with it.
    public init(_ raw: String) throws(HubError) {
        guard !raw.isEmpty else { throw HubError.badRequest("channel name is empty") }
        let utf8 = raw.utf8
        guard utf8.count <= Self.maxBytes else {
            throw HubError.badRequest("channel name is \(utf8.count) bytes, more than \(Self.maxBytes)")
        }
        for byte in utf8 where !Self.isAllowed(byte) {
            throw HubError.badRequest("channel name has a character outside [A-Za-z0-9_-:#,.=@]")
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
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: ":"), UInt8(ascii: "#"), UInt8(ascii: ","),
             UInt8(ascii: "."), UInt8(ascii: "="), UInt8(ascii: "@"):
            return true
        default:
            return false
        }
    }
}
