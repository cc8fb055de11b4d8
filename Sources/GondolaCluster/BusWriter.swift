import Foundation
@_spi(Engine) import GondolaHub
import GondolaPostgres
import GondolaProtocol
import Logging
import PostgresNIO
import Synchronization

/// Writes this node's publications and events to the cluster's bus in batches
/// (group commit): whatever waits when the writer becomes free — at most
/// `maxBatch` items — goes into one transaction that appends the publications to
/// their streams and sends the events in as few notifications as fit. PostgreSQL
/// delivers notifications in commit order and a stream's row stays locked until
/// commit, so every node receives a channel's publications in offset order.
///
/// `linger` holds a batch open a little longer to collect more; with it at zero a
/// batch is whatever arrived during the previous write. At most `maxWaiting`
/// items wait; more are refused with `HubError.limitExceeded`.
final class BusWriter: Sendable {
    /// One item for the bus and who hears its outcome.
    struct Request: Sendable {
        enum Item: Sendable {
            case publication(channel: String, Publication, NamespaceOptions, PublishOptions)
            case event(ClusterEvent)
        }

        let item: Item
        let completion: @Sendable (Result<StreamPosition?, HubError>) -> Void
    }

    /// Figures about the bus, for metrics and benchmarks.
    struct Counters: Sendable {
        var batches = 0
        var items = 0
        var notifications = 0
        var overflowRows = 0
    }

    static let channelName = "gondola_bus"

    let pool: PostgresPool
    let durable: PostgresHistoryStore
    let volatile: PostgresHistoryStore
    let nodeUID: String
    let maxBatch: Int
    let maxWaiting: Int
    let linger: Duration
    private let logger: Logger
    private let waiting = Mutex<(requests: [Request], writing: Bool)>(([], false))
    private let sequence = Atomic<UInt64>(0)
    private let counters = Mutex(Counters())

    init(
        pool: PostgresPool, durable: PostgresHistoryStore, volatile: PostgresHistoryStore, nodeUID: String,
        maxBatch: Int = 512, maxWaiting: Int = 10_000, linger: Duration = .zero, logger: Logger
    ) {
        self.pool = pool
        self.durable = durable
        self.volatile = volatile
        self.nodeUID = nodeUID
        self.maxBatch = maxBatch
        self.maxWaiting = maxWaiting
        self.linger = linger
        self.logger = logger
    }

    var figures: Counters { counters.withLock { $0 } }

    /// Queues `request`; its completion runs on the writer's task after the commit.
    func submit(_ request: Request) {
        enum Decision { case refuse, queued, start }
        let decision = waiting.withLock { waiting -> Decision in
            guard waiting.requests.count < maxWaiting else { return .refuse }
            waiting.requests.append(request)
            guard !waiting.writing else { return .queued }
            waiting.writing = true
            return .start
        }
        switch decision {
        case .refuse: request.completion(.failure(.limitExceeded("the cluster bus has \(maxWaiting) items waiting")))
        case .queued: break
        case .start: Task(executorPreference: pool.taskExecutor) { await self.drain() }
        }
    }

    /// Writes batches until nothing waits; one task at a time (`writing`), on the pool's
    /// event loop.
    private func drain() async {
        if linger > .zero { try? await Task.sleep(for: linger) }
        while true {
            let batch = waiting.withLock { waiting -> [Request] in
                let count = min(maxBatch, waiting.requests.count)
                let batch = Array(waiting.requests.prefix(count))
                waiting.requests.removeFirst(count)
                if batch.isEmpty { waiting.writing = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            let outcomes = await write(batch)
            for (request, outcome) in zip(batch, outcomes) { request.completion(outcome) }
        }
    }

    /// Writes one batch; one outcome per request, all failures when the transaction fails.
    /// Idempotency keys and versions are checked first (`PublishChecks`), when any is asked
    /// for: what they answer is neither appended nor sent.
    private func write(_ batch: [Request]) async -> [Result<StreamPosition?, HubError>] {
        do {
            let (answers, notifications) = try await pool.transaction { connection in
                let now = Date()
                let stores = [durable, volatile]
                let checks =
                    PublishChecks.needed(batch) ? try await PublishChecks(batch, stores: stores, on: connection, now: now, pool: pool) : nil
                let writing = batch.indices.map { index in
                    guard let checks, case .write = checks.fates[index] else { return checks == nil }
                    return true
                }
                let positions = try await appendStreams(batch, writing: writing, on: connection, now: now)
                let notifications = try await notify(batch, writing: writing, positions: positions, on: connection)
                guard let checks else { return (positions, notifications) }
                let answers = checks.answers(batch, written: positions)
                try await checks.record(answers: answers, stores: stores, on: connection, pool: pool)
                return (answers, notifications)
            }
            counters.withLock {
                $0.batches += 1
                $0.items += batch.count
                $0.notifications += notifications
            }
            return answers.map { .success($0) }
        } catch {
            logger.error("cluster bus write failed", metadata: ["items": "\(batch.count)", "error": "\(String(reflecting: error))"])
            return Array(repeating: .failure(.internalError("cluster bus write failed: \(error)")), count: batch.count)
        }
    }

    /// Appends the publications being written to the channels that keep a stream (durable
    /// ones first, then volatile ones: every transaction locks streams in the same order).
    private func appendStreams(_ batch: [Request], writing: [Bool], on connection: PostgresConnection, now: Date) async throws -> [StreamPosition?] {
        var positions = [StreamPosition?](repeating: nil, count: batch.count)
        for store in [durable, volatile] {
            var indexes: [Int] = []
            var appends: [PostgresHistoryStore.Append] = []
            for (index, request) in batch.enumerated() where writing[index] {
                guard case let .publication(channel, publication, options, _) = request.item, options.keepsHistory,
                    options.historyDurable == store.durable
                else { continue }
                indexes.append(index)
                appends.append(.init(channel: channel, publication: publication, options: options))
            }
            guard !appends.isEmpty else { continue }
            let stored = try await store.append(appends, on: connection, now: now).get()
            for (index, position) in zip(indexes, stored) { positions[index] = position }
        }
        return positions
    }

    /// Sends the batch's events and the publications being written, with their stored offsets.
    private func notify(_ batch: [Request], writing: [Bool], positions: [StreamPosition?], on connection: PostgresConnection) async throws -> Int {
        let events = batch.indices.compactMap { index -> ClusterEvent? in
            guard writing[index] else { return nil }
            switch batch[index].item {
            case let .publication(channel, publication, _, _):
                var stored = publication
                stored.offset = positions[index]?.offset ?? 0
                return .publication(channel: channel, stored)
            case let .event(other): return other
            }
        }
        return try await notify(events, on: connection)
    }

    /// Sends events in notifications of at most `BusCodec.maxPayloadBytes`, inside
    /// the transaction of `connection`; an event too large for one goes through
    /// `cluster_bus_payload`. Returns how many notifications were sent.
    @discardableResult
    func notify(_ events: [ClusterEvent], on connection: PostgresConnection) async throws -> Int {
        var payloads: [String] = []
        var pending: [[UInt8]] = []
        var pendingBytes = 0
        func flush() {
            guard !pending.isEmpty else { return }
            payloads.append(BusCodec.envelope(node: nodeUID, sequence: sequence.add(1, ordering: .relaxed).newValue, events: pending))
            pending = []
            pendingBytes = 0
        }
        for event in events {
            let encoded = BusCodec.encode(event)
            if encoded.count + 100 > BusCodec.maxPayloadBytes {
                flush()
                let rows = try await pool.run(
                    "INSERT INTO cluster_bus_payload (body, created_at_ms) VALUES (\(ByteBuffer(bytes: BusCodec.eventsArray([encoded]))), \(Int64(Date().timeIntervalSince1970 * 1000))) RETURNING id",
                    on: connection
                )
                guard let row = rows.first else { throw PostgresStoreError("no id for a bus payload") }
                payloads.append(
                    BusCodec.reference(node: nodeUID, sequence: sequence.add(1, ordering: .relaxed).newValue, row: try row.decode(Int64.self)))
                counters.withLock { $0.overflowRows += 1 }
                continue
            }
            if pendingBytes + encoded.count + 100 > BusCodec.maxPayloadBytes { flush() }
            pending.append(encoded)
            pendingBytes += encoded.count + 1
        }
        flush()
        _ = try await pool.run(
            "SELECT pg_notify(\(Self.channelName), payload) FROM unnest(\(payloads)::text[]) WITH ORDINALITY AS t(payload, n) ORDER BY n",
            on: connection
        )
        return payloads.count
    }
}
