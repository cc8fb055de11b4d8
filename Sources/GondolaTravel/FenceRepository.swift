import Foundation
import GRDB
import GondolaHub
import GondolaPostgres
import GondolaProtocol
import GondolaStore
import NIOCore
import PostgresNIO

/// Where a trip's fence events are posted over HTTP (Tile38's hooks): the URL and the
/// secret each delivery is signed with.
struct FenceWebhook: Sendable, Equatable {
    let url: String
    let secret: String
}

/// A fence event waiting in the webhook outbox, with the deliveries tried so far.
struct QueuedFenceEvent: Sendable, Equatable {
    /// The event's id: a redelivered event keeps it, so receivers can drop repeats.
    let id: String
    let trip: String
    let body: [UInt8]
    let attempts: Int
}

/// Where fences, their webhooks and the webhook outbox live.
protocol FenceRepository: Sendable {
    /// Stores `fence`; false when its trip already has `limit` fences.
    func create(_ fence: TripFence, limit: Int) async throws -> Bool
    /// Deletes a fence of `trip`; false when there is none with `id`.
    func delete(trip: String, id: String) async throws -> Bool
    /// Every fence, oldest first (the service loads them at start).
    func allFences() async throws -> [TripFence]
    func fences(of trip: String) async throws -> [TripFence]
    func webhook(of trip: String) async throws -> FenceWebhook?
    /// Sets a trip's webhook (nil: none).
    func setWebhook(_ webhook: FenceWebhook?, of trip: String) async throws

    /// Queues events for their trips' webhooks, each once (an id queued before is skipped);
    /// throws `FenceWebhooks.Full` when `limit` events wait.
    func enqueue(_ events: [QueuedFenceEvent], limit: Int, now: Int64) async throws
    /// Events not yet delivered nor given up.
    func pendingCount() async throws -> Int
    /// Up to `limit` events due at `now`, the longest due first, each claimed until `now + lease`.
    func claimDue(now: Int64, limit: Int, lease: Int64) async throws -> [QueuedFenceEvent]
    func markDelivered(_ id: String, at time: Int64) async throws
    /// Records a failed delivery: attempts so far, the error, the next try, and when it was given up.
    func markFailed(_ id: String, attempts: Int, error: String, next: Int64, givenUpAt: Int64?) async throws
    /// Deletes events delivered before `time`.
    func forgetDelivered(before time: Int64) async throws
}

extension TripFence {
    /// Reads a stored fence: its definition is checked again as a request would be.
    init(id: String, trip: String, definition: String, createdBy: String, createdAt: Int64) throws {
        let request = try FenceDefinition.decode(try JSONParser.parse(definition).adding("trip", .string(trip)))
        self.init(
            id: id, trip: trip, name: request.name, shape: request.shape, detects: request.detects,
            dwellMilliseconds: request.dwellMilliseconds, users: request.users, createdBy: createdBy, createdAt: createdAt)
    }
}

/// The webhook outbox's events not yet delivered nor given up, as SQL.
private let pendingFenceEvents = "delivered_at_ms IS NULL AND given_up_at_ms IS NULL"

/// The fence tables in SQLite.
struct SQLiteFenceRepository: FenceRepository {
    let database: GondolaDatabase

    func create(_ fence: TripFence, limit: Int) throws -> Bool {
        try database.pool.write { db in
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM trip_fence WHERE trip_id = ?", arguments: [fence.trip]) ?? 0
            guard count < limit else { return false }
            try db.execute(
                sql: "INSERT INTO trip_fence (id, trip_id, definition, created_by, created_at_ms) VALUES (?, ?, ?, ?, ?)",
                arguments: [fence.id, fence.trip, fence.definition.text, fence.createdBy, fence.createdAt])
            return true
        }
    }

    func delete(trip: String, id: String) throws -> Bool {
        try database.pool.write { db in
            try db.execute(sql: "DELETE FROM trip_fence WHERE trip_id = ? AND id = ?", arguments: [trip, id])
            return db.changesCount > 0
        }
    }

    func allFences() throws -> [TripFence] { try read(where: "1 = 1", []) }

    func fences(of trip: String) throws -> [TripFence] { try read(where: "trip_id = ?", [trip]) }

    private func read(where condition: String, _ arguments: StatementArguments) throws -> [TripFence] {
        try database.pool.read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT id, trip_id, definition, created_by, created_at_ms FROM trip_fence WHERE \(condition) ORDER BY created_at_ms, id",
                arguments: arguments
            ).map { row in
                try TripFence(
                    id: row["id"], trip: row["trip_id"], definition: row["definition"], createdBy: row["created_by"], createdAt: row["created_at_ms"])
            }
        }
    }

    func webhook(of trip: String) throws -> FenceWebhook? {
        try database.pool.read { db in
            try Row.fetchOne(db, sql: "SELECT url, secret FROM trip_fence_webhook WHERE trip_id = ?", arguments: [trip]).map {
                FenceWebhook(url: $0["url"], secret: $0["secret"])
            }
        }
    }

    func setWebhook(_ webhook: FenceWebhook?, of trip: String) throws {
        try database.pool.write { db in
            if let webhook {
                try db.execute(
                    sql:
                        "INSERT INTO trip_fence_webhook (trip_id, url, secret) VALUES (?, ?, ?) ON CONFLICT (trip_id) DO UPDATE SET url = excluded.url, secret = excluded.secret",
                    arguments: [trip, webhook.url, webhook.secret])
            } else {
                try db.execute(sql: "DELETE FROM trip_fence_webhook WHERE trip_id = ?", arguments: [trip])
            }
        }
    }

    func enqueue(_ events: [QueuedFenceEvent], limit: Int, now: Int64) throws {
        try database.pool.write { db in
            let pending = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM fence_webhook_outbox WHERE \(pendingFenceEvents)") ?? 0
            guard pending + events.count <= limit else { throw FenceWebhooks.Full() }
            for event in events {
                try db.execute(
                    sql: """
                        INSERT INTO fence_webhook_outbox (id, trip_id, body, created_at_ms, next_attempt_at_ms) VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT (id) DO NOTHING
                        """, arguments: [event.id, event.trip, Data(event.body), now, now])
            }
        }
    }

    func pendingCount() throws -> Int {
        try database.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM fence_webhook_outbox WHERE \(pendingFenceEvents)") ?? 0 }
    }

    func claimDue(now: Int64, limit: Int, lease: Int64) throws -> [QueuedFenceEvent] {
        try database.pool.write { db in
            try OutboxClaims.claimDue(
                in: db, table: "fence_webhook_outbox", columns: ["trip_id", "body", "attempts"], pending: pendingFenceEvents, now: now,
                limit: limit, lease: lease
            ).map { row in
                QueuedFenceEvent(id: row["id"], trip: row["trip_id"], body: [UInt8](row["body"] as Data), attempts: row["attempts"])
            }
        }
    }

    func markDelivered(_ id: String, at time: Int64) throws {
        try database.pool.write { db in
            try db.execute(
                sql: "UPDATE fence_webhook_outbox SET delivered_at_ms = ?, attempts = attempts + 1, last_error = NULL WHERE id = ?",
                arguments: [time, id])
        }
    }

    func markFailed(_ id: String, attempts: Int, error: String, next: Int64, givenUpAt: Int64?) throws {
        try database.pool.write { db in
            try db.execute(
                sql: "UPDATE fence_webhook_outbox SET attempts = ?, last_error = ?, next_attempt_at_ms = ?, given_up_at_ms = ? WHERE id = ?",
                arguments: [attempts, error, next, givenUpAt, id])
        }
    }

    func forgetDelivered(before time: Int64) throws {
        try database.pool.write { db in
            try db.execute(sql: "DELETE FROM fence_webhook_outbox WHERE delivered_at_ms IS NOT NULL AND delivered_at_ms < ?", arguments: [time])
        }
    }
}

/// The fence tables in PostgreSQL (cluster mode): outbox claims take due rows with
/// `FOR UPDATE SKIP LOCKED`, so two nodes never deliver one event at once.
struct PostgresFenceRepository: FenceRepository {
    let pool: PostgresPool

    func create(_ fence: TripFence, limit: Int) async throws -> Bool {
        try await pool.transaction { connection in
            // Two creations for one trip at once count one after the other.
            try await pool.run("SELECT pg_advisory_xact_lock(hashtext(\("trip_fence:" + fence.trip)))", on: connection)
            let count =
                try await pool.run("SELECT COUNT(*) FROM trip_fence WHERE trip_id = \(fence.trip)", on: connection).first?.decode(Int64.self) ?? 0
            guard count < limit else { return false }
            try await pool.run(
                """
                INSERT INTO trip_fence (id, trip_id, definition, created_by, created_at_ms)
                VALUES (\(fence.id), \(fence.trip), \(fence.definition.text), \(fence.createdBy), \(fence.createdAt))
                """, on: connection)
            return true
        }
    }

    func delete(trip: String, id: String) async throws -> Bool {
        try await pool.query("DELETE FROM trip_fence WHERE trip_id = \(trip) AND id = \(id) RETURNING id").first != nil
    }

    func allFences() async throws -> [TripFence] {
        try await pool.query("SELECT id, trip_id, definition, created_by, created_at_ms FROM trip_fence ORDER BY created_at_ms, id").map(Self.fence)
    }

    func fences(of trip: String) async throws -> [TripFence] {
        try await pool.query(
            "SELECT id, trip_id, definition, created_by, created_at_ms FROM trip_fence WHERE trip_id = \(trip) ORDER BY created_at_ms, id"
        ).map(Self.fence)
    }

    private static func fence(_ row: PostgresRow) throws -> TripFence {
        let (id, trip, definition, createdBy, createdAt) = try row.decode((String, String, String, String, Int64).self)
        return try TripFence(id: id, trip: trip, definition: definition, createdBy: createdBy, createdAt: createdAt)
    }

    func webhook(of trip: String) async throws -> FenceWebhook? {
        try await pool.query("SELECT url, secret FROM trip_fence_webhook WHERE trip_id = \(trip)").first.map { row in
            let (url, secret) = try row.decode((String, String).self)
            return FenceWebhook(url: url, secret: secret)
        }
    }

    func setWebhook(_ webhook: FenceWebhook?, of trip: String) async throws {
        if let webhook {
            try await pool.query(
                """
                INSERT INTO trip_fence_webhook (trip_id, url, secret) VALUES (\(trip), \(webhook.url), \(webhook.secret))
                ON CONFLICT (trip_id) DO UPDATE SET url = excluded.url, secret = excluded.secret
                """)
        } else {
            try await pool.query("DELETE FROM trip_fence_webhook WHERE trip_id = \(trip)")
        }
    }

    func enqueue(_ events: [QueuedFenceEvent], limit: Int, now: Int64) async throws {
        try await pool.transaction { connection in
            let pending =
                try await pool.run(
                    "SELECT COUNT(*) FROM fence_webhook_outbox WHERE \(unescaped: pendingFenceEvents)", on: connection
                ).first?.decode(Int64.self) ?? 0
            guard Int(pending) + events.count <= limit else { throw FenceWebhooks.Full() }
            for event in events {
                try await pool.run(
                    """
                    INSERT INTO fence_webhook_outbox (id, trip_id, body, created_at_ms, next_attempt_at_ms)
                    VALUES (\(event.id), \(event.trip), \(ByteBuffer(bytes: event.body)), \(now), \(now)) ON CONFLICT (id) DO NOTHING
                    """, on: connection)
            }
        }
    }

    func pendingCount() async throws -> Int {
        Int(
            try await pool.query("SELECT COUNT(*) FROM fence_webhook_outbox WHERE \(unescaped: pendingFenceEvents)").first?
                .decode(Int64.self) ?? 0)
    }

    func claimDue(now: Int64, limit: Int, lease: Int64) async throws -> [QueuedFenceEvent] {
        try await PostgresOutboxClaims.claimDue(
            on: pool, table: "fence_webhook_outbox", columns: ["trip_id", "body", "attempts"],
            pending: pendingFenceEvents, now: now, limit: limit, lease: lease
        ).map { row in
            let (id, trip, body, attempts) = try row.decode((String, String, ByteBuffer, Int32).self)
            return QueuedFenceEvent(id: id, trip: trip, body: Array(body.readableBytesView), attempts: Int(attempts))
        }
    }

    func markDelivered(_ id: String, at time: Int64) async throws {
        try await pool.query(
            "UPDATE fence_webhook_outbox SET delivered_at_ms = \(time), attempts = attempts + 1, last_error = NULL WHERE id = \(id)")
    }

    func markFailed(_ id: String, attempts: Int, error: String, next: Int64, givenUpAt: Int64?) async throws {
        try await pool.query(
            """
            UPDATE fence_webhook_outbox SET attempts = \(Int32(attempts)), last_error = \(error), next_attempt_at_ms = \(next),
                given_up_at_ms = \(givenUpAt) WHERE id = \(id)
            """)
    }

    func forgetDelivered(before time: Int64) async throws {
        try await pool.query("DELETE FROM fence_webhook_outbox WHERE delivered_at_ms IS NOT NULL AND delivered_at_ms < \(time)")
    }
}
