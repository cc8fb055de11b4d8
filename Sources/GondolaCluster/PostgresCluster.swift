import Foundation
@_spi(Engine) import GondolaHub
import GondolaPostgres
import GondolaProtocol
import Logging
import PostgresNIO
import Synchronization

/// A node's link to the other nodes sharing its PostgreSQL database.
///
/// - Streams live in PostgreSQL (`PostgresHistoryStore`), so offsets and epochs
///   are the same on every node.
/// - The bus is `LISTEN`/`NOTIFY` on one channel: `BusWriter` batches this node's
///   publications and events, and `run` hands every notification (this node's own
///   included) to the node in commit order.
/// - Presence is a table of subscribers with the node that holds each; entries of
///   a node that stopped its heartbeat for `nodeTimeout` are no longer listed and
///   are deleted by the next live node's sweep.
@_spi(Engine) public final class PostgresCluster: ClusterNodeLink {
    public let pool: PostgresPool
    public var sharedDatabase: PostgresPool? { pool }
    public let nodeUID: String
    public let settings: ClusterSettings
    public let durableHistory: any HistoryStore
    public let volatileHistory: any HistoryStore
    /// Both stores, swept every minute for streams past their `history_meta_ttl`.
    private let streamStores: [PostgresHistoryStore]
    let bus: PostgresBus
    private var writer: BusWriter { bus.writer }
    private let logger: Logger
    private let delivery = Mutex(WeakDelivery())
    private let gate = ReadyGate()
    private let startedAt = Date()

    /// A link for the node `nodeUID` over `pool`; the database must be migrated
    /// with `PostgresCluster.register(in:)`.
    public init(pool: PostgresPool, nodeUID: String, settings: ClusterSettings = .init(), logger: Logger) {
        self.pool = pool
        self.nodeUID = nodeUID
        self.settings = settings
        self.logger = logger
        let durable = PostgresHistoryStore(pool: pool, durable: true)
        let volatile = PostgresHistoryStore(pool: pool, durable: false)
        self.durableHistory = durable
        self.volatileHistory = volatile
        self.streamStores = [durable, volatile]
        self.bus = PostgresBus(
            pool: pool, durable: durable, volatile: volatile, nodeUID: nodeUID,
            maxBatch: settings.busMaxBatch, linger: settings.busLinger, logger: logger)
    }

    /// Adds the cluster's tables to a migrator.
    public static func register(in migrator: inout PostgresMigrator) {
        ClusterSchema.register(in: &migrator)
    }

    /// The node the bus delivers to.
    public func attach(_ delivery: any EngineDelivery) {
        self.delivery.withLock { $0.target = delivery }
    }

    private var attachedNode: (any EngineDelivery)? { delivery.withLock { $0.target } }

    public func ready() async {
        await gate.opened()
    }

    public var health: EngineHealth {
        EngineHealth(engine: "postgres", parts: [.init(name: "postgres bus", up: gate.isOpen, roundTrip: pool.roundTrip)])
    }

    // MARK: ClusterLink

    public func publish(
        _ publication: Publication, to channel: String, options: NamespaceOptions, publishing: PublishOptions,
        completion: @escaping @Sendable (Result<StreamPosition?, HubError>) -> Void
    ) {
        writer.submit(.init(item: .publication(channel: channel, publication, options, publishing), completion: completion))
    }

    public func notify(_ events: [ClusterEvent], on connection: PostgresConnection) async throws {
        try await writer.notify(events, on: connection)
    }

    public func post(_ event: ClusterEvent, completion: @escaping @Sendable (Result<Void, HubError>) -> Void) {
        writer.submit(.init(item: .event(event)) { result in completion(result.map { _ in }) })
    }

    public func addPresence(channel: String, info: ClientInfo) async throws(HubError) {
        try await run("presence add") {
            _ = try await pool.query(
                """
                INSERT INTO cluster_presence (channel, client, node, info) VALUES (\(channel), \(info.client), \(nodeUID), \(ByteBuffer(bytes: info.json.bytes)))
                ON CONFLICT (channel, client) DO UPDATE SET node = excluded.node, info = excluded.info
                """)
        }
    }

    public func removePresence(channel: String, client: String) async throws(HubError) {
        try await run("presence remove") {
            _ = try await pool.query("DELETE FROM cluster_presence WHERE channel = \(channel) AND client = \(client)")
        }
    }

    /// The channel's presence entries of live nodes; this node's own always count, whatever
    /// its registry row says (its first heartbeat may not be written yet, or be late under load).
    public func presence(channel: String) async throws(HubError) -> [String: ClientInfo] {
        let cutoff = millisecondsAgo(settings.nodeTimeout)
        return try await run("presence") {
            var clients: [String: ClientInfo] = [:]
            let rows = try await pool.query(
                """
                SELECT p.client, p.info FROM cluster_presence p LEFT JOIN cluster_node n ON n.uid = p.node
                WHERE p.channel = \(channel) AND (p.node = \(nodeUID) OR n.seen_at_ms > \(cutoff))
                """)
            for row in rows {
                let (client, info) = try row.decode((String, ByteBuffer).self)
                clients[client] = try ClientInfo(json: BusCodec.parse(Array(buffer: info)))
            }
            return clients
        }
    }

    public func nodes() async throws(HubError) -> [ClusterNodeInfo] {
        let cutoff = millisecondsAgo(settings.nodeTimeout)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        return try await run("nodes") {
            try await pool.query(
                """
                SELECT uid, name, version, started_at_ms, clients, users, channels, subscriptions
                FROM cluster_node WHERE seen_at_ms > \(cutoff) ORDER BY name, uid
                """
            ).map { row in
                let (uid, name, version, started, clients, users, channels, subscriptions) =
                    try row.decode((String, String, String, Int64, Int32, Int32, Int32, Int32).self)
                return ClusterNodeInfo(
                    uid: uid, name: name, version: version,
                    stats: NodeStats(
                        clients: Int(clients), users: Int(users), channels: Int(channels), subscriptions: Int(subscriptions),
                        queuedBytes: 0, uptimeSeconds: Int((now - started) / 1000)))
            }
        }
    }

    /// The bus writer's figures so far.
    public var busFigures: (batches: Int, items: Int, notifications: Int, overflowRows: Int) {
        let figures = writer.figures
        return (figures.batches, figures.items, figures.notifications, figures.overflowRows)
    }

    // MARK: Running

    /// Receives the bus and keeps the heartbeat until cancelled; on a graceful end
    /// the node's row and presence entries are removed. When the bus connection is
    /// lost, new connections wait until it is back and the node's clients are closed
    /// with 3010 so that they reconnect and recover what they may have missed.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.receiveBus() }
            group.addTask { await self.keepHeartbeat() }
            await group.waitForAll()
        }
        await leave()
        await pool.close()
    }

    private func receiveBus() async {
        await bus.receive(
            into: { self.attachedNode },
            listening: { [gate, logger] again in
                if again {
                    self.attachedNode?.streamsInterrupted { _ in true }
                    logger.notice("cluster bus receiving again")
                }
                // Domains reload what they keep in memory before the first event is applied:
                // anything committed before this point is in what they read, the rest follows.
                await self.attachedNode?.resynchronize()
                gate.open()
            },
            lost: { [gate] in gate.close() })
    }

    private func keepHeartbeat() async {
        var beats = 0
        while !Task.isCancelled {
            do {
                try await beat()
                if beats % 5 == 0 { try await sweep(streams: beats % 60 == 0) }
            } catch {
                logger.warning("cluster heartbeat failed", metadata: ["error": "\(String(reflecting: error))"])
            }
            beats += 1
            try? await Task.sleep(for: settings.heartbeat)
        }
    }

    private func beat() async throws {
        let entry = attachedNode?.registryEntry
        let stats = entry?.stats ?? NodeStats(clients: 0, users: 0, channels: 0, subscriptions: 0, queuedBytes: 0, uptimeSeconds: 0)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try await pool.query(
            """
            INSERT INTO cluster_node (uid, name, version, started_at_ms, seen_at_ms, clients, users, channels, subscriptions)
            VALUES (\(nodeUID), \(entry?.name ?? ""), \(entry?.version ?? ""), \(Int64(startedAt.timeIntervalSince1970 * 1000)), \(now),
                    \(Int32(stats.clients)), \(Int32(stats.users)), \(Int32(stats.channels)), \(Int32(stats.subscriptions)))
            ON CONFLICT (uid) DO UPDATE SET seen_at_ms = excluded.seen_at_ms, clients = excluded.clients, users = excluded.users,
                channels = excluded.channels, subscriptions = excluded.subscriptions
            """)
    }

    /// Deletes what dead nodes left and old bus payloads; every minute also the streams
    /// past their `history_meta_ttl` and the idempotency keys past their lifetime.
    private func sweep(streams: Bool) async throws {
        let dead = millisecondsAgo(settings.nodeTimeout)
        try await pool.query(
            "DELETE FROM cluster_presence p WHERE NOT EXISTS (SELECT 1 FROM cluster_node n WHERE n.uid = p.node AND n.seen_at_ms > \(dead))")
        try await pool.query("DELETE FROM cluster_node WHERE seen_at_ms < \(millisecondsAgo(settings.nodeTimeout * 12))")
        try await bus.sweepPayloads(retention: settings.payloadRetention)
        if streams {
            for store in streamStores { try await store.sweep(now: Date()) }
            try await PublishChecks.sweep(pool: pool, now: Date())
        }
    }

    /// Removes this node's row and presence entries (a graceful stop).
    private func leave() async {
        do {
            try await pool.query("DELETE FROM cluster_presence WHERE node = \(nodeUID)")
            try await pool.query("DELETE FROM cluster_node WHERE uid = \(nodeUID)")
        } catch {
            logger.warning("cluster leave failed", metadata: ["error": "\(error)"])
        }
    }

    private func millisecondsAgo(_ duration: Duration) -> Int64 {
        Int64((Date().timeIntervalSince1970 - duration.timeInterval) * 1000)
    }

    private func run<T>(_ what: String, _ body: () async throws -> T) async throws(HubError) -> T {
        do {
            return try await body()
        } catch {
            logger.error("cluster \(what) failed", metadata: ["error": "\(String(reflecting: error))"])
            throw .internalError("cluster \(what) failed: \(error)")
        }
    }
}
