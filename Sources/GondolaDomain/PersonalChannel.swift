import GondolaHub
import GondolaProtocol

/// `personal:#<user>`: what concerns one user, from any domain (a map switch, a friend
/// request, a detected crash, a rental starting, an assessment to answer). The server
/// provides the namespace whatever domains are installed; only its user may subscribe.
public enum PersonalChannel {
    public static let namespace = "personal"

    /// The channel of `user`.
    public static func name(of user: String) -> String { "\(namespace):#\(user)" }

    /// The namespace and its provider (the server installs them as the hub's, before any domain).
    public static var registrations: NodeRegistrations {
        var registrations = NodeRegistrations()
        registrations.provide(NamespaceOptions(name: namespace), by: Provider())
        return registrations
    }

    /// The user of a `<namespace>:#<uid>` channel when it is exactly the subscriber's own,
    /// else 103 naming the channel to subscribe to instead.
    public static func requireOwn(_ subscription: ProvidedSubscription) throws(HubError) {
        let own = "\(subscription.channel.namespace):#\(subscription.user)"
        guard subscription.channel.raw == own else {
            throw .permissionDenied("\(subscription.channel.raw) is not yours; subscribe to \(own)")
        }
    }

    private struct Provider: ChannelProvider {
        func subscribe(_ subscription: ProvidedSubscription, attach: (RawJSON?) throws(HubError) -> Void) async throws(HubError) {
            try PersonalChannel.requireOwn(subscription)
            try attach(nil)
        }

        func vacated(channel: ChannelName) {}
    }
}

extension Node {
    /// Tells `user` something on `personal:#<user>` without waiting for it to be sent
    /// (in a cluster, through the bus); a refusal is logged.
    public func tell(_ user: String, _ data: JSON) {
        publishInBackground(channel: PersonalChannel.name(of: user), data: Payload(data))
    }
}
