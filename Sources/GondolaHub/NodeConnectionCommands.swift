import Foundation
import GondolaProtocol

/// What the server API asks of a user's connections, on every node of a cluster: subscribe,
/// unsubscribe, refresh and disconnect them, each reaching the connections a `ConnectionFilter`
/// picks; each node applies the event in `receive(_:)`.
extension Node {
    /// Unsubscribes the connections of `user` that `target` picks (every one by default, on
    /// every node of a cluster) from `channel`, telling them with an unsubscribe push.
    public func unsubscribe(user: String, channel: String, target: ConnectionFilter = .every) async throws(HubError) {
        _ = try channelName(channel)
        try await broker.send(.unsubscribe(user: user, channel: channel, target: target))
    }

    /// Subscribes every connection of `user` (on every node of a cluster; only those the
    /// options' `client` and `session` pick, `ConnectionFilter`) to `channel`, server-side: each is told with a
    /// subscribe push. `subscription` is the server API's request read, `options` the same
    /// as it arrived, which the nodes are sent: an `expire_at` already past answers 107, an
    /// unknown channel 102, and nothing is sent.
    public func subscribe(user: String, channel: String, _ subscription: ServerSubscription, options: RawJSON) async throws(HubError) {
        _ = try resolve(channel)
        if let end = subscription.grant.expiresAt, end <= Date() {
            throw .badRequest("expire_at \(Int64(end.timeIntervalSince1970)) is in the past")
        }
        try await broker.send(.subscribe(user: user, channel: channel, options: options))
    }

    /// Prolongs or ends the connections of `user` that `target` picks, on every node of a
    /// cluster, as the server API's `refresh` asks (see `ConnectionRefresh`).
    public func refresh(user: String, target: ConnectionFilter = .every, _ refresh: ConnectionRefresh) async throws(HubError) {
        try await broker.send(.refresh(user: user, target: target, refresh))
    }

    /// Closes the connections of `user` that `target` picks, on every node of a cluster, with
    /// `code` (3503 force disconnect unless told otherwise), and none that `keeping` names
    /// (the server API's `disconnect` with its `whitelist`).
    public func disconnect(
        user: String, target: ConnectionFilter = .every, keeping: Set<String> = [], code: DisconnectCode = .forceDisconnect
    ) async throws(HubError) {
        try await broker.send(.disconnect(user: user, code: code, keeping: keeping, target: target))
    }

    /// Single-connection mode (`user_personal_single_connection`): closes every other
    /// connection of `user`, on every node, with 3504, keeping `client`. Alone, a node
    /// with no other connection of the user posts nothing.
    func keepSingleConnection(of user: String, client: String) {
        guard broker.reachesOtherNodes || registry.sessions(of: user).contains(where: { $0.id != client }) else { return }
        broker.post(.disconnect(user: user, code: .connectionLimit, keeping: [client])) { [logger] result in
            if case let .failure(error) = result {
                logger.warning("single-connection disconnect not sent", metadata: ["user": "\(user)", "error": "\(error)"])
            }
        }
    }
}
