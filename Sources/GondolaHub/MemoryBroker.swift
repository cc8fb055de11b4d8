import Foundation
import GondolaProtocol
import Synchronization

/// The engine of a node alone: volatile streams in memory, `history_durable` streams in
/// the store it is given (the SQLite file; memory without one), delivery straight back
/// to the node, and presence read from the node's own subscribers (kept nowhere else). A publication's append and its delivery happen under its channel's
/// own lock (`ChannelLocks`), so one channel's publications reach subscribers in offset
/// order while a slow append (a disk write) holds up no other channel.
@_spi(Engine) public final class MemoryBroker: Broker, PresenceManager {
    private let volatile: MemoryHistoryStore
    private let durable: any LocalHistoryStore
    /// Whether durable streams have a store of their own (else they are `volatile`'s).
    private let durableIsSeparate: Bool
    private let locks = ChannelLocks()
    /// What `publish` answered for each idempotency key, for Centrifugo's five minutes.
    private let idempotentResults = IdempotentResults()
    private let delivery = Mutex(WeakDelivery())

    /// - Parameter durableHistory: where `history_durable` namespaces keep their streams;
    ///   without one they are kept in memory.
    public init(durableHistory: (any LocalHistoryStore)? = nil) {
        volatile = MemoryHistoryStore()
        durable = durableHistory ?? volatile
        durableIsSeparate = durableHistory != nil
    }

    public func attach(_ delivery: any EngineDelivery) {
        self.delivery.withLock { $0.target = delivery }
    }

    public func publish(
        _ publication: Publication, to channel: String, options: NamespaceOptions, publishing: PublishOptions,
        completion: @escaping @Sendable (Result<StreamPosition?, HubError>) -> Void
    ) {
        let outcome = Result { () throws(HubError) -> StreamPosition? in
            try locks.withLock(channel) { () throws(HubError) -> StreamPosition? in
                if let key = publishing.idempotencyKey, let earlier = idempotentResults.result(channel: channel, key: key, now: .now) {
                    return earlier
                }
                var publication = publication
                var position: StreamPosition?
                if options.keepsHistory {
                    switch try store(for: options).appending(publication, to: channel, options: options, version: publishing.streamVersion) {
                    case let .appended(stored, at): (publication, position) = (stored, at)
                    case let .skipped(top): return top
                    }
                }
                deliver(.publication(channel: channel, publication))
                if let key = publishing.idempotencyKey { idempotentResults.remember(position, channel: channel, key: key, now: .now) }
                return position
            }
        }
        completion(outcome)
    }

    public func post(_ event: ClusterEvent, completion: @escaping @Sendable (Result<Void, HubError>) -> Void) {
        deliver(event)
        completion(.success(()))
    }

    public func history(channel: String, after: UInt64?, limit: Int, reverse: Bool, options: NamespaceOptions) async throws -> StreamSlice {
        try await store(for: options).read(channel: channel, after: after, limit: limit, reverse: reverse, options: options, now: Date())
    }

    public func removeHistory(channel: String, options: NamespaceOptions) async throws {
        try await store(for: options).removeHistory(channel: channel)
    }

    public var reachesOtherNodes: Bool { false }

    public func sweepIdleStreams(now: Date) {
        volatile.sweep(now: now)
        if durableIsSeparate { durable.sweep(now: now) }
    }

    private func store(for options: NamespaceOptions) -> any LocalHistoryStore {
        options.historyDurable ? durable : volatile
    }

    private func deliver(_ event: ClusterEvent) {
        delivery.withLock { $0.target }?.deliver(event)
    }

    // MARK: PresenceManager

    /// Nothing to record: the node's channel already holds the subscriber.
    public func addPresence(channel: String, info: ClientInfo) async throws(HubError) {}

    /// Nothing to record: the node's channel already dropped the subscriber.
    public func removePresence(channel: String, client: String) async throws(HubError) {}

    public func presence(channel: String) async throws(HubError) -> [String: ClientInfo] {
        delivery.withLock { $0.target }?.localPresence(of: channel) ?? [:]
    }

    /// The node's channel keeps the counts as subscribers come and go: no copy of its presence.
    public func presenceStats(channel: String) async throws(HubError) -> PresenceStats {
        delivery.withLock { $0.target }?.localPresenceStats(of: channel) ?? PresenceStats(numClients: 0, numUsers: 0)
    }
}

/// A lock per channel, made when a channel is first used and dropped when no caller
/// holds or waits for it, so idle channels cost nothing. The table's own lock is held
/// only to find or drop an entry.
final class ChannelLocks: Sendable {
    private final class Entry: Sendable {
        let lock = Mutex(())
    }

    private let entries = Mutex<[String: (entry: Entry, users: Int)]>([:])

    /// Runs `body` holding `channel`'s lock.
    func withLock<T, E: Error>(_ channel: String, _ body: () throws(E) -> T) throws(E) -> T {
        let entry = entries.withLock { entries in
            let entry = entries[channel]?.entry ?? Entry()
            entries[channel] = (entry, (entries[channel]?.users ?? 0) + 1)
            return entry
        }
        defer {
            entries.withLock { entries in
                guard let users = entries[channel]?.users else { return }
                entries[channel] = users > 1 ? (entry, users - 1) : nil
            }
        }
        return try entry.lock.withLock { _ throws(E) in try body() }
    }
}

/// Where an engine delivers, held weakly (the node owns its engine).
@_spi(Engine) public struct WeakDelivery: Sendable {
    public weak var target: (any EngineDelivery)?

    public init() {}
}
