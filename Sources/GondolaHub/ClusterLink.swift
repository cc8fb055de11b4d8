import Foundation
import GondolaProtocol

/// What one node of a cluster tells all of them (itself included), in the order
/// the bus committed it.
public enum ClusterEvent: Sendable, Equatable {
    /// A publication for the channel's subscribers; `offset` set when the channel keeps a stream.
    case publication(channel: String, Publication)
    /// A client subscribed to a channel whose namespace announces joins.
    case join(channel: String, ClientInfo)
    /// A client left a channel whose namespace announces leaves.
    case leave(channel: String, ClientInfo)
    /// The server API unsubscribed a user from a channel: the user's connections `target` picks.
    case unsubscribe(user: String, channel: String, target: ConnectionFilter = .every)
    /// The server API subscribed a user's connections to a channel; `options` is the
    /// request's JSON as it came (see `ServerSubscription`).
    case subscribe(user: String, channel: String, options: RawJSON)
    /// Close the user's connections that `target` picks with `code`, except the clients
    /// `keeping` names (the server API's disconnect and its whitelist; a new connection in
    /// single-connection mode keeps itself).
    case disconnect(user: String, code: DisconnectCode, keeping: Set<String>, target: ConnectionFilter = .every)
    /// The server API prolonged or ended the user's connections that `target` picks.
    case refresh(user: String, target: ConnectionFilter, ConnectionRefresh)
    /// A domain's change for the other nodes' in-memory views (see `Node.replicate`);
    /// `origin` is the sending node's uid, which ignores its own.
    case domain(topic: String, origin: String, payload: JSON)
    /// A domain's change that only the nodes following `region` apply (see
    /// `Node.replicate(topic:region:_:)`): a traveller's position, in its region.
    case regional(region: String, topic: String, origin: String, payload: JSON)
}

/// A live node of a cluster, as the server API's `info` lists it.
public struct ClusterNodeInfo: Sendable, Equatable {
    public var uid: String
    public var name: String
    public var version: String
    public var stats: NodeStats

    public init(uid: String, name: String, version: String, stats: NodeStats) {
        self.uid = uid
        self.name = name
        self.version = version
        self.stats = stats
    }
}

/// Connects a node to the other nodes sharing its database: the shared streams,
/// the bus that carries publications and events to every node, and cluster-wide
/// presence. Without one a node is alone and keeps everything in itself.
///
/// It is the node's `Broker` and `PresenceManager` in a cluster. The link delivers
/// every event of the bus to the node (`EngineDelivery`), in commit order; a node applies
/// only what it receives, its own publications included, so every node sees a channel's
/// publications in offset order.
@_spi(Engine) public protocol ClusterLink: Broker, PresenceManager {
    /// Returns once this node receives the bus (at start, and again after the bus
    /// connection was lost); connections wait here before they are accepted.
    func ready() async

    /// Streams of `history_durable` namespaces.
    var durableHistory: any HistoryStore { get }
    /// Streams of the other namespaces that keep history.
    var volatileHistory: any HistoryStore { get }

    /// Every live node with its last reported figures.
    func nodes() async throws(HubError) -> [ClusterNodeInfo]

    /// This node's uid in the cluster's registry (what `nodes()` lists it as).
    var nodeUID: String { get }
}

@_spi(Engine) extension ClusterLink {
    /// The shared streams: durable or volatile, as the namespace says.
    private func store(for options: NamespaceOptions) -> any HistoryStore {
        options.historyDurable ? durableHistory : volatileHistory
    }

    public func history(channel: String, after: UInt64?, limit: Int, reverse: Bool, options: NamespaceOptions) async throws -> StreamSlice {
        try await store(for: options).read(channel: channel, after: after, limit: limit, reverse: reverse, options: options, now: Date())
    }

    public func removeHistory(channel: String, options: NamespaceOptions) async throws {
        try await store(for: options).removeHistory(channel: channel)
    }

    public var reachesOtherNodes: Bool { true }
}
