import Foundation
@_spi(Engine) import GondolaHub
import GondolaPostgres
import GondolaProtocol
import GondolaRedis
import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// A node's link to the other nodes over Redis (the `redis` engine), with the
/// domains' tables still in the shared PostgreSQL database; or, for a hub with no domain, on
/// Redis alone (no PostgreSQL at all: `pool` is nil).
///
/// - Each channel lives on one Redis server, the shard its name hashes to
///   (`RedisShards`): its bus messages, its volatile stream and its presence. On a Redis
///   Cluster the shards are partitions, each a slot (`RedisServer.cluster`) whose hash tag
///   every one of its names carries, served by whichever master holds the slot. A
///   publication to a channel with a stream is appended and published by one script,
///   so the bus carries a channel's publications in offset order.
/// - Events without a channel go to the shard of their user (a disconnect) or topic
///   (a domain's change), so each keeps its order. Regional events (positions) go to
///   their region's own Redis channel, which only the nodes following it listen on.
/// - What must reach the nodes only once committed stays on PostgreSQL's bus
///   (`PostgresBus`): publications of `history_durable` namespaces, whose streams are
///   in PostgreSQL (with those that skip the stream, to keep the channel's order), and
///   events a repository sends inside its transaction.
/// - Presence entries expire after `presenceTTL` unless their node adds them again;
///   node heartbeats live on the first shard.
/// - On Redis alone there is no PostgreSQL bus: every publication takes Redis, and
///   `history_durable` namespaces (which the configuration refuses then) keep their streams
///   in Redis like the others.
///
/// While a shard is down its channels' publishes, presence and history answer
/// `unavailable` (the temporary 100) at once; clients stay connected. When its bus subscription is
/// back, the subscribers of the channels that hash to it are told to recover (`Node.streamsInterrupted`:
/// an unsubscribe of code 2500, or 3010 for a server-side subscription), and get what they
/// missed or learn that a restarted Redis lost it; the subscribers of other shards' channels
/// notice nothing.
@_spi(Engine) public final class RedisCluster: ClusterNodeLink {
    /// One Redis server: its bus (the publisher connection also carries every command,
    /// so this node's scripts and messages reach the server in the order it sent them),
    /// its streams and its presence.
    struct Shard {
        let bus: RedisBus
        let history: RedisHistoryStore
        let presence: RedisPresence
        /// `RedisIdempotency.publishOnceSource` on this shard.
        let publishOnce: RedisScript
    }

    public var sharedDatabase: PostgresPool? { postgres?.pool }
    public let nodeUID: String
    public let settings: ClusterSettings
    /// The names of the engine's keys and Pub/Sub channels, under the configured prefix.
    public let keys: RedisKeys
    /// The durable streams' store; on Redis alone the volatile one (the configuration refuses durable namespaces there).
    public let durableHistory: any HistoryStore
    public let volatileHistory: any HistoryStore
    let shards: [Shard]
    let registry: RedisNodes
    /// What the node keeps in PostgreSQL, when it has a database.
    private let postgres: PostgresSide?
    private let logger: Logger
    private let delivery = Mutex(WeakDelivery())
    private let postgresReady = ReadyGate()
    private let redisReady: [ReadyGate]
    /// The presence entries this node holds, added again before they expire.
    private let heldPresence = Mutex<[String: [String: ClientInfo]]>([:])
    /// The regions whose channels this node listens on.
    private let followed = Mutex<Set<String>>([])
    private let startedAt = Date()

    /// The part of the engine on PostgreSQL: the durable streams (swept every minute for
    /// streams past their `history_meta_ttl`) and the bus of what must be committed first.
    private struct PostgresSide {
        let pool: PostgresPool
        let durableStore: PostgresHistoryStore
        let bus: PostgresBus
    }

    /// A link for the node `nodeUID` over the Redis `servers` (one or more shards, each an
    /// address, a master behind Sentinel or a Redis Cluster slot; every name under `keys`'
    /// prefix) and `pool`, migrated with `PostgresCluster.register(in:)` (nil: on Redis alone).
    public init(
        pool: PostgresPool?, servers: [RedisServer], nodeUID: String, settings: ClusterSettings = .init(),
        keys: RedisKeys = RedisKeys(), group: any EventLoopGroup, logger: Logger
    ) {
        precondition(!servers.isEmpty, "the Redis engine needs at least one server")
        self.nodeUID = nodeUID
        self.settings = settings
        self.keys = keys
        self.logger = logger
        postgres = pool.map { pool in
            let durable = PostgresHistoryStore(pool: pool, durable: true)
            return PostgresSide(
                pool: pool, durableStore: durable,
                bus: PostgresBus(
                    pool: pool, durable: durable, volatile: PostgresHistoryStore(pool: pool, durable: false), nodeUID: nodeUID,
                    maxBatch: settings.busMaxBatch, linger: settings.busLinger, logger: logger))
        }
        shards = servers.map { server in
            let bus = RedisBus(server: server, group: group, nodeUID: nodeUID, keys: keys, logger: logger)
            return Shard(
                bus: bus, history: RedisHistoryStore(redis: bus, keys: bus.keys),
                presence: RedisPresence(redis: bus, ttl: settings.presenceTTL, keys: bus.keys),
                publishOnce: RedisScript(redis: bus, source: RedisIdempotency.publishOnceSource(publishing: bus.keys.publishCommand)))
        }
        redisReady = servers.map { _ in ReadyGate() }
        volatileHistory = ShardedHistoryStore(shards: shards.map(\.history))
        durableHistory = postgres?.durableStore ?? volatileHistory
        registry = RedisNodes(redis: shards[0].bus, nodeTimeout: settings.nodeTimeout, keys: shards[0].bus.keys)
    }

    public func attach(_ delivery: any EngineDelivery) {
        self.delivery.withLock { $0.target = delivery }
    }

    private var attachedNode: (any EngineDelivery)? { delivery.withLock { $0.target } }

    /// Returns once the node receives PostgreSQL's bus and has received every shard's
    /// bus at least once: an outage of Redis after the start does not hold up new
    /// connections (their commands on the shard that is down answer the temporary 100).
    public func ready() async {
        if postgres != nil { await postgresReady.opened() }
        for gate in redisReady { await gate.opened() }
    }

    /// PostgreSQL's bus and each shard: whether this node hears its bus and can send it commands now.
    public var health: EngineHealth {
        EngineHealth(
            engine: "redis",
            parts: (postgres.map { [.init(name: "postgres bus", up: postgresReady.isOpen, roundTrip: $0.pool.roundTrip)] } ?? [])
                + shards.map { shard in
                    .init(name: "redis \(shard.bus.publisher.server)", up: shard.bus.receiving && shard.bus.publisher.isUp)
                })
    }

    func shard(for key: String) -> Shard {
        shards[RedisShards.index(of: key, count: shards.count)]
    }

    /// The key that chooses an event's shard: its channel, else its user or topic.
    static func routingKey(of event: ClusterEvent) -> String {
        switch event {
        case let .publication(channel, _), let .join(channel, _), let .leave(channel, _),
            let .unsubscribe(_, channel, _), let .subscribe(_, channel, _):
            channel
        case let .disconnect(user, _, _, _), let .refresh(user, _, _): user
        case let .domain(topic, _, _): topic
        case let .regional(region, _, _, _): region
        }
    }

    // MARK: ClusterLink

    public func publish(
        _ publication: Publication, to channel: String, options: NamespaceOptions, publishing: PublishOptions,
        completion: @escaping @Sendable (Result<StreamPosition?, HubError>) -> Void
    ) {
        // Every publication of a durable namespace, one that skips the stream too, takes the
        // PostgreSQL bus, so that a channel's publications reach the nodes in the order they were made.
        if options.historyDurable, let postgres {
            let request = BusWriter.Request(item: .publication(channel: channel, publication, options, publishing), completion: completion)
            return postgres.bus.writer.submit(request)
        }
        let shard = shard(for: channel)
        guard options.keepsHistory else {
            guard let key = publishing.idempotencyKey else {
                return shard.bus.publish([.publication(channel: channel, publication)]) { completion($0.map { nil }) }
            }
            return publishOnce(publication, to: channel, key: key, on: shard, completion: completion)
        }
        let header = BinaryBusMessage.header(node: nodeUID, sequence: shard.bus.nextSequence())
        shard.history.append(
            publication, to: channel, options: options, now: Date(), announcing: .init(busChannel: shard.bus.keys.bus, header: header),
            publishing: publishing
        ) { result in
            completion(
                result.map {
                    switch $0 {
                    case let .appended(_, position), let .skipped(position): position
                    }
                })
        }
    }

    /// Publishes a publication without a stream unless its idempotency key was used on
    /// the channel within `RedisIdempotency.lifetimeSeconds` (then nothing is published);
    /// either way it answers no position. The script runs on the shard's publisher
    /// connection, after what this node sent it before.
    private func publishOnce(
        _ publication: Publication, to channel: String, key: String, on shard: Shard,
        completion: @escaping @Sendable (Result<StreamPosition?, HubError>) -> Void
    ) {
        let message = BinaryBusMessage.message(
            node: nodeUID, sequence: shard.bus.nextSequence(), events: [BinaryBusMessage.encode(.publication(channel: channel, publication))])
        shard.publishOnce.run(
            keys: [shard.bus.keys.idempotency(channel: channel, key: key)],
            arguments: [RedisArgument.number(RedisIdempotency.lifetimeSeconds), shard.bus.keys.bus, message]
        ) { result in
            completion(result.mapError { HubError($0, in: "cluster bus") }.map { _ in nil })
        }
    }

    public func post(_ event: ClusterEvent, completion: @escaping @Sendable (Result<Void, HubError>) -> Void) {
        let bus = shard(for: Self.routingKey(of: event)).bus
        guard case let .regional(region, _, _, _) = event else { return bus.publish([event], completion: completion) }
        bus.publish([event], on: bus.keys.region(region), completion: completion)
    }

    /// Listens on the Redis channels of `regions` (each on its shard) and no longer on the others'.
    public func follow(regions: Set<String>) {
        let (added, removed) = followed.withLock { followed -> (Set<String>, Set<String>) in
            defer { followed = regions }
            return (regions.subtracting(followed), followed.subtracting(regions))
        }
        for (index, shard) in shards.enumerated() {
            let mine = { (region: String) in RedisShards.index(of: region, count: self.shards.count) == index }
            let (adding, removing) = (added.filter(mine), removed.filter(mine))
            if !adding.isEmpty || !removing.isEmpty { shard.bus.follow(adding: adding, removing: removing) }
        }
    }

    /// Sends events inside a repository's transaction; there is none on Redis alone (no domain runs there).
    public func notify(_ events: [ClusterEvent], on connection: PostgresConnection) async throws {
        guard let postgres else { throw HubError.notAvailable("a cluster on Redis alone has no PostgreSQL transaction to send events in") }
        try await postgres.bus.writer.notify(events, on: connection)
    }

    public func addPresence(channel: String, info: ClientInfo) async throws(HubError) {
        try await shard(for: channel).presence.addPresence(channel: channel, info: info)
        heldPresence.withLock { $0[channel, default: [:]][info.client] = info }
    }

    public func removePresence(channel: String, client: String) async throws(HubError) {
        heldPresence.withLock { held in
            held[channel]?[client] = nil
            if held[channel]?.isEmpty == true { held[channel] = nil }
        }
        try await shard(for: channel).presence.removePresence(channel: channel, client: client)
    }

    public func presence(channel: String) async throws(HubError) -> [String: ClientInfo] {
        try await shard(for: channel).presence.presence(channel: channel)
    }

    public func nodes() async throws(HubError) -> [ClusterNodeInfo] {
        try await registry.nodes()
    }

    // MARK: Running

    /// Receives both buses and keeps the heartbeat and presence until cancelled; on a
    /// graceful end the node's heartbeat and presence entries are removed.
    public func run() async {
        for (index, shard) in shards.enumerated() {
            // Subscribing only records the channel until the subscriber connects, so this does not wait for Redis.
            try? await shard.bus.start(
                deliver: { events in
                    guard let node = self.attachedNode else { return }
                    node.deliver(events)
                },
                listening: { [logger, redisReady, count = shards.count] again in
                    guard again else { return redisReady[index].open() }
                    logger.notice("cluster bus (Redis) receiving again", metadata: ["server": "\(shard.bus.publisher.server)"])
                    self.attachedNode?.streamsInterrupted { RedisShards.index(of: $0, count: count) == index }
                    Task { await self.attachedNode?.resynchronize() }
                })
        }
        await withTaskGroup(of: Void.self) { group in
            if let postgres { group.addTask { await self.receive(postgres.bus) } }
            group.addTask { await self.keepHeartbeat() }
            group.addTask { await self.keepPresence() }
            await group.waitForAll()
        }
        await leave()
        for shard in shards { shard.bus.stop() }
        await postgres?.pool.close()
    }

    private func receive(_ postgresBus: PostgresBus) async {
        await postgresBus.receive(
            into: { self.attachedNode },
            listening: { [postgresReady] again in
                if again { self.attachedNode?.streamsInterrupted { _ in true } }
                await self.attachedNode?.resynchronize()
                postgresReady.open()
            },
            lost: { [postgresReady] in postgresReady.close() })
    }

    private func keepHeartbeat() async {
        await redisReady[0].opened()
        var beats = 0
        while !Task.isCancelled {
            do {
                let entry =
                    attachedNode?.registryEntry
                    ?? ClusterNodeInfo(
                        uid: nodeUID, name: "", version: "",
                        stats: NodeStats(clients: 0, users: 0, channels: 0, subscriptions: 0, queuedBytes: 0, uptimeSeconds: 0))
                try await registry.beat(
                    ClusterNodeInfo(uid: nodeUID, name: entry.name, version: entry.version, stats: entry.stats),
                    startedAt: startedAt)
                if beats % 60 == 0, let postgres {
                    try await postgres.bus.sweepPayloads(retention: settings.payloadRetention)
                    try await postgres.durableStore.sweep(now: Date())
                    try await PublishChecks.sweep(pool: postgres.pool, now: Date())
                }
            } catch {
                logger.warning("cluster heartbeat failed", metadata: ["error": "\(String(reflecting: error))"])
            }
            beats += 1
            try? await Task.sleep(for: settings.heartbeat)
        }
    }

    /// Adds this node's presence entries again every third of their TTL.
    private func keepPresence() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: settings.presenceTTL / 3)
            let held = heldPresence.withLock { $0 }
            for (channel, entries) in held {
                for info in entries.values {
                    do {
                        try await shard(for: channel).presence.addPresence(channel: channel, info: info)
                    } catch {
                        logger.warning("presence refresh failed", metadata: ["channel": "\(channel)", "error": "\(error)"])
                    }
                }
            }
        }
    }

    /// Removes this node's heartbeat and presence entries (a graceful stop).
    private func leave() async {
        do {
            try await registry.leave(uid: nodeUID)
            for (channel, entries) in heldPresence.withLock({ $0 }) {
                for client in entries.keys { try await shard(for: channel).presence.removePresence(channel: channel, client: client) }
            }
        } catch {
            logger.warning("cluster leave failed", metadata: ["error": "\(error)"])
        }
    }
}

/// Volatile streams spread over the shards: each channel's stream is on its shard.
struct ShardedHistoryStore: HistoryStore {
    let shards: [RedisHistoryStore]

    private func store(_ channel: String) -> RedisHistoryStore {
        shards[RedisShards.index(of: channel, count: shards.count)]
    }

    func read(channel: String, after: UInt64?, limit: Int, reverse: Bool, options: NamespaceOptions, now: Date) async throws -> StreamSlice {
        try await store(channel).read(channel: channel, after: after, limit: limit, reverse: reverse, options: options, now: now)
    }

    func removeHistory(channel: String) async throws {
        try await store(channel).removeHistory(channel: channel)
    }
}
