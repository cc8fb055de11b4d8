import Foundation
@_spi(Engine) import GondolaHub
import GondolaPostgres
import GondolaProtocol
import Logging
import PostgresNIO

/// The cluster bus over PostgreSQL's `LISTEN`/`NOTIFY`: `writer` sends this node's
/// publications (appended to their PostgreSQL streams in the same transaction) and
/// events, and `receive` hands every notification (this node's own included) to the
/// node in commit order. It carries the whole bus of the PostgreSQL engine, and in the
/// Redis engine what must be delivered only once committed: durable streams'
/// publications and events sent inside a repository's transaction.
final class PostgresBus: Sendable {
    let pool: PostgresPool
    let writer: BusWriter
    private let logger: Logger

    init(
        pool: PostgresPool, durable: PostgresHistoryStore, volatile: PostgresHistoryStore, nodeUID: String,
        maxBatch: Int, linger: Duration, logger: Logger
    ) {
        self.pool = pool
        self.logger = logger
        writer = BusWriter(
            pool: pool, durable: durable, volatile: volatile, nodeUID: nodeUID,
            maxBatch: maxBatch, linger: linger, logger: logger)
    }

    /// Listens until cancelled, reconnecting after a loss (backoff 200 ms to 5 s).
    /// `listening` runs each time the node receives the bus (`again` after a loss),
    /// before the first notification is applied; `lost` runs when the connection is lost.
    func receive(
        into node: @escaping @Sendable () -> (any EngineDelivery)?, listening: @escaping @Sendable (_ again: Bool) async -> Void,
        lost: @escaping @Sendable () -> Void
    ) async {
        var failures = 0
        while !Task.isCancelled {
            do {
                let connection = try await pool.dedicatedConnection()
                defer { PostgresPool.closeInBackground(connection) }
                // LISTEN's connection carries no query of its own: checked, a silent server ends it.
                let watchdog = Task { [pool] in await pool.watch(connection) }
                defer { watchdog.cancel() }
                try await connection.listen(on: BusWriter.channelName) { notifications in
                    await listening(failures > 0)
                    failures = 0
                    for try await notification in notifications {
                        try await deliver(notification.payload, to: node())
                    }
                }
            } catch  where Task.isCancelled {
                break
            } catch {
                logger.error("cluster bus (PostgreSQL) lost", metadata: ["error": "\(String(reflecting: error))"])
            }
            lost()
            failures += 1
            try? await Task.sleep(for: .milliseconds(min(5000, 200 * failures)))
        }
    }

    private func deliver(_ payload: String, to node: (any EngineDelivery)?) async throws {
        let events: [ClusterEvent]
        do {
            switch try BusCodec.decodeNotification(payload) {
            case let .events(decoded): events = decoded
            case let .reference(row):
                let rows = try await pool.query("SELECT body FROM cluster_bus_payload WHERE id = \(row)")
                guard let body = try rows.first?.decode(ByteBuffer.self) else {
                    logger.error("cluster bus payload row missing", metadata: ["row": "\(row)"])
                    return
                }
                events = try BusCodec.decodeEvents(BusCodec.parse(Array(buffer: body)))
            }
        } catch let error as BusCodecError {
            logger.error("cluster bus notification not understood", metadata: ["error": "\(error)"])
            return
        }
        guard let node else { return }
        node.deliver(events)
    }

    /// Deletes bus payload rows older than `retention`.
    func sweepPayloads(retention: Duration) async throws {
        let cutoff = Int64((Date().timeIntervalSince1970 - retention.timeInterval) * 1000)
        try await pool.query("DELETE FROM cluster_bus_payload WHERE created_at_ms < \(cutoff)")
    }
}
