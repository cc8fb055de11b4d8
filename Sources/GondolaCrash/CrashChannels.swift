import GondolaDomain
import GondolaHub
import GondolaProtocol

/// `crash:<id>`: the changes of one crash, a durable stream that only its owner may
/// subscribe to (and recover from after a reconnect).
struct CrashChannel: ChannelProvider {
    static let options = NamespaceOptions.durableStream("crash", size: 1_000, ttl: .seconds(90 * 86_400))
    let crashes: CrashService

    func subscribe(_ subscription: ProvidedSubscription, attach: (RawJSON?) throws(HubError) -> Void) async throws(HubError) {
        _ = try await crashes.owned(subscription.channel.key, by: subscription.user)
        try attach(nil)
    }

    func vacated(channel: ChannelName) {}
}
