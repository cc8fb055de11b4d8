import GondolaHub

/// A channel of live positions, named once: `nearby:#<uid>`, `friends:#<uid>` or
/// `locations:<tripId>` (the contract is in docs/api/travel.md). The frame
/// loop keeps channels in this form and publishes to `name` without parsing it again.
enum PositionChannel: Hashable, Sendable {
    case nearby(user: String)
    case friends(user: String)
    case locations(trip: String)

    static let nearbyNamespace = framesNamespace("nearby")
    static let friendsNamespace = framesNamespace("friends")
    static let locationsNamespace = framesNamespace("locations")

    /// A namespace of position frames: each repeats most of the previous frame's
    /// bytes, so subscriptions may take every one as a fossil delta.
    private static func framesNamespace(_ name: String) -> NamespaceOptions {
        var options = NamespaceOptions(name: name)
        options.allowedDeltaTypes = [.fossil]
        options.deltaPublish = true
        return options
    }

    /// The channel a vacated notice names, if it is a position channel.
    init?(_ channel: ChannelName) {
        switch channel.namespace {
        case Self.nearbyNamespace.name where channel.key.hasPrefix("#"):
            guard let user = channel.soleUser else { return nil }
            self = .nearby(user: user)
        case Self.friendsNamespace.name where channel.key.hasPrefix("#"):
            guard let user = channel.soleUser else { return nil }
            self = .friends(user: user)
        case Self.locationsNamespace.name: self = .locations(trip: channel.key)
        default: return nil
        }
    }

    /// The channel's name on the wire.
    var name: String {
        switch self {
        case let .nearby(user): "nearby:#\(user)"
        case let .friends(user): "friends:#\(user)"
        case let .locations(trip): "locations:\(trip)"
        }
    }

    /// The namespace the travel domain provides for the channel.
    var namespace: NamespaceOptions {
        switch self {
        case .nearby: Self.nearbyNamespace
        case .friends: Self.friendsNamespace
        case .locations: Self.locationsNamespace
        }
    }
}
