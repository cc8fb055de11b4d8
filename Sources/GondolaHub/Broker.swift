import Foundation
import GondolaProtocol

/// What an engine sees of the node it serves (centrifuge's broker event handler), held
/// weakly: where it delivers the bus's events, and the few things it asks of the node.
/// It is the engines' interface (`@_spi(Engine)`), not the domains'.
@_spi(Engine) public protocol EngineDelivery: AnyObject, Sendable {
    /// A publication or event from the bus, this node's own included, in commit order.
    func deliver(_ event: ClusterEvent)
    /// The events of one bus message, in order: what they bring each subscriber goes out
    /// together (one write per connection), as a node alone sends a burst of publications.
    func deliver(_ events: [ClusterEvent])
    /// The engine may have missed the publications of the channels `affected` accepts (the
    /// part of its bus that carries them dropped and came back): their subscribers recover.
    func streamsInterrupted(where affected: @Sendable (String) -> Bool)
    /// The engine receives the bus again (and at start): the domains reload what they keep in memory.
    func resynchronize() async
    /// The channel's subscribers on this node that are in its presence (a node alone keeps presence nowhere else).
    func localPresence(of channel: String) -> [String: ClientInfo]
    /// How many of the channel's subscribers on this node are in its presence, and how many distinct users they are.
    func localPresenceStats(of channel: String) -> PresenceStats
    /// This node's name, version and figures, for the cluster's registry (`uid` is this run's).
    var registryEntry: ClusterNodeInfo { get }
}

/// The engine behind a node (centrifuge's `Broker`): it keeps the channels' streams and
/// carries publications and events to every node's subscribers. `Node` has one publish
/// path — it hands a publication to its broker, and delivers what the broker hands back
/// through `EngineDelivery.deliver` (its own publications included), in each channel's
/// offset order. `MemoryBroker` serves a node alone; a cluster's `ClusterLink` carries the
/// same calls between nodes. `Tests/GondolaHubTests/BrokerTests.swift` runs one suite
/// against every engine.
@_spi(Engine) public protocol Broker: Sendable {
    /// Where the broker delivers, held weakly: the node calls this once, when it is built.
    func attach(_ delivery: any EngineDelivery)

    /// Appends the publication to the channel's stream when `options` keeps one and
    /// delivers it to every node; `completion` hears its position (nil without a stream)
    /// once it is stored and on its way, or why it was refused. `publishing` holds the
    /// idempotency key and version the engine checks first (the node already turned
    /// `skipHistory` into `options`): a repeated key or a skipped version answers a
    /// position and delivers nothing. Publications to one channel are delivered in
    /// offset order; no thread waits for another.
    func publish(
        _ publication: Publication, to channel: String, options: NamespaceOptions, publishing: PublishOptions,
        completion: @escaping @Sendable (Result<StreamPosition?, HubError>) -> Void)

    /// Delivers an event (join, leave, a server-side unsubscribe or disconnect, a
    /// domain's change) to every node; `completion` hears when it is on its way.
    func post(_ event: ClusterEvent, completion: @escaping @Sendable (Result<Void, HubError>) -> Void)

    /// `limit` publications of the channel's stream after `after` (oldest first, or the
    /// newest first when `reverse`), with the stream's position.
    func history(channel: String, after: UInt64?, limit: Int, reverse: Bool, options: NamespaceOptions) async throws -> StreamSlice

    /// Drops the channel's retained publications.
    func removeHistory(channel: String, options: NamespaceOptions) async throws

    /// Whether other nodes hear what this node posts (a node alone builds no replicas).
    var reachesOtherNodes: Bool { get }

    /// Drops what idle streams hold in memory; the node calls it every minute.
    func sweepIdleStreams(now: Date)

    /// The regions whose regional events (`ClusterEvent.regional`) this node wants
    /// from now on. An engine that can route by region (Redis: a Pub/Sub channel per
    /// region) stops bringing the others; the node drops any that still come.
    func follow(regions: Set<String>)
}

@_spi(Engine) extension Broker {
    /// Delivers an event to every node; returns once it is on its way (the task waits,
    /// no thread does).
    public func send(_ event: ClusterEvent) async throws(HubError) {
        try await withCheckedContinuation { continuation in
            post(event) { continuation.resume(returning: $0) }
        }.get()
    }

    public func sweepIdleStreams(now: Date) {}

    /// Brings every regional event (the node filters them).
    public func follow(regions: Set<String>) {}
}

/// Who is subscribed to each channel of the namespaces that keep presence
/// (centrifuge's `PresenceManager`): this node's subscribers alone
/// (`MemoryBroker`, which reads them from the node), or every node's in a cluster.
@_spi(Engine) public protocol PresenceManager: Sendable {
    /// Records a subscriber in the channel's presence.
    func addPresence(channel: String, info: ClientInfo) async throws(HubError)
    /// Removes a subscriber from the channel's presence.
    func removePresence(channel: String, client: String) async throws(HubError)
    /// The channel's subscribers, by client id.
    func presence(channel: String) async throws(HubError) -> [String: ClientInfo]
    /// How many clients and distinct users the channel's presence holds.
    func presenceStats(channel: String) async throws(HubError) -> PresenceStats
}

extension PresenceManager {
    /// Counted from the whole presence, for engines that keep nothing else.
    public func presenceStats(channel: String) async throws(HubError) -> PresenceStats {
        let clients = try await presence(channel: channel)
        return PresenceStats(numClients: UInt32(clients.count), numUsers: UInt32(Set(clients.values.map(\.user)).count))
    }
}
