import GondolaProtocol

/// A subscribe request to a namespace owned by a `ChannelProvider`.
public struct ProvidedSubscription: Sendable {
    public let channel: ChannelName
    /// The subscribing user.
    public let user: String
    /// The subscribe command's `data`, if any.
    public let data: RawJSON?
}

/// A namespace whose channels belong to a domain service (positions, personal
/// notifications): the service decides who may subscribe and what the subscribe
/// reply's `data` holds, and hears when a channel loses its last subscriber.
///
/// Calls never happen under a channel lock, so a provider may hold its own lock
/// while it calls `attach` or `Node.publish` (its lock first, the channel's second).
public protocol ChannelProvider: Sendable {
    /// Authorises the subscription (throwing `HubError.permissionDenied` or
    /// `.badRequest` otherwise) and calls `attach` once with the reply's `data`.
    /// `attach` starts the subscription: what the channel delivers from then on is kept
    /// for the subscriber and sent after its reply, so what the provider publishes after
    /// `attach` returns follows the snapshot `data` holds. The provider may await (its
    /// database) before it attaches, never after.
    func subscribe(_ subscription: ProvidedSubscription, attach: (RawJSON?) throws(HubError) -> Void) async throws(HubError)

    /// The channel's last subscriber on this node left.
    func vacated(channel: ChannelName)

    /// Where the channels' streams live when the namespace keeps history, if the
    /// provider keeps them itself (nil: the node's durable or memory store). Used for
    /// provided namespaces; a single provided channel uses the node's stores.
    var historyStore: (any HistoryStore)? { get }
}

extension ChannelProvider {
    public var historyStore: (any HistoryStore)? { nil }
}
