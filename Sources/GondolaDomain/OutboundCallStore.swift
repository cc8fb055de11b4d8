import Foundation
import GRDB
import GondolaPostgres
import GondolaProtocol
import GondolaStore
import PostgresNIO

/// A call to an outside service waiting in the durable queue (`OutboundCalls`): what it is
/// about (`label`, for logs), what to send (`payload`, the service's own JSON) and the attempts
/// made so far.
public struct QueuedCall: Sendable, Equatable {
    public let id: String
    public let label: String
    public let payload: JSON
    public let attempts: Int
    /// When it was queued (Unix ms).
    public let createdAt: Int64
}

/// Where `OutboundCalls` keeps its calls: the `outbound_call` table of the core schema, in
/// SQLite or PostgreSQL. A worker claims the calls due now for a while (`lease`), so that the
/// nodes of a cluster never make one call at once, and a call claimed by a process that
/// stopped is made again once its claim lapses.
public protocol OutboundCallStore: Sendable {
    /// Queues a call to `service`; false, with nothing written, when `limit` calls to it wait.
    func enqueue(service: String, id: String, label: String, payload: JSON, now: Int64, limit: Int) async throws -> Bool
    /// Up to `limit` calls to `service` due at `now`, the longest due first, each claimed until `now + lease`.
    func claimDue(service: String, now: Int64, limit: Int, lease: Int64) async throws -> [QueuedCall]
    /// Forgets a call that was made, or given up.
    func remove(_ id: String) async throws
    /// Records a failed attempt: the attempts so far and when to try again.
    func retry(_ id: String, attempts: Int, at next: Int64) async throws
}

extension JSON {
    /// The string member `key` of a queued call's payload; an error naming it when it is not one.
    public func callString(_ key: String) throws -> String {
        guard case let .string(value)? = self[key] else { throw OutboundCallStoreError("a queued call without the string '\(key)'") }
        return value
    }

    /// The integer member `key` of a queued call's payload; an error naming it when it is not one.
    public func callInteger(_ key: String) throws -> Int64 {
        guard case let .int(value)? = self[key] else { throw OutboundCallStoreError("a queued call without the integer '\(key)'") }
        return value
    }
}

extension DomainStorage {
    /// The durable queue of outbound calls in this storage.
    public var outboundCalls: any OutboundCallStore {
        switch self {
        case let .sqlite(database): SQLiteOutboundCallStore(database: database)
        case let .postgres(pool, _): PostgresOutboundCallStore(pool: pool)
        }
    }
}

private let callColumns = ["label", "payload", "attempts", "created_at_ms"]

/// The SQL condition of `service`'s calls; the name is written into the SQL, so it may hold
/// only letters, digits, `_` and `-`.
private func calls(of service: String) throws -> String {
    guard !service.isEmpty, service.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }) else {
        throw OutboundCallStoreError("a service is named with letters, digits, '_' and '-' only, not '\(service)'")
    }
    return "service = '\(service)'"
}

/// The queue in the SQLite file.
struct SQLiteOutboundCallStore: OutboundCallStore {
    let database: GondolaDatabase

    func enqueue(service: String, id: String, label: String, payload: JSON, now: Int64, limit: Int) throws -> Bool {
        try database.pool.write { db in
            let waiting = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outbound_call WHERE service = ?", arguments: [service]) ?? 0
            guard waiting < limit else { return false }
            try db.execute(
                sql: "INSERT INTO outbound_call (id, service, label, payload, created_at_ms, next_attempt_at_ms) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [id, service, label, payload.text, now, now])
            return true
        }
    }

    func claimDue(service: String, now: Int64, limit: Int, lease: Int64) throws -> [QueuedCall] {
        try database.pool.write { db in
            try OutboxClaims.claimDue(
                in: db, table: "outbound_call", columns: callColumns, pending: try calls(of: service),
                now: now, limit: limit, lease: lease
            ).map { row in
                QueuedCall(
                    id: row["id"], label: row["label"], payload: try JSONParser.parse(Array((row["payload"] as String).utf8)),
                    attempts: row["attempts"], createdAt: row["created_at_ms"])
            }
        }
    }

    func remove(_ id: String) throws {
        try database.pool.write { db in try db.execute(sql: "DELETE FROM outbound_call WHERE id = ?", arguments: [id]) }
    }

    func retry(_ id: String, attempts: Int, at next: Int64) throws {
        try database.pool.write { db in
            try db.execute(sql: "UPDATE outbound_call SET attempts = ?, next_attempt_at_ms = ? WHERE id = ?", arguments: [attempts, next, id])
        }
    }
}

/// The queue in PostgreSQL (cluster mode), claimed with `FOR UPDATE SKIP LOCKED`.
struct PostgresOutboundCallStore: OutboundCallStore {
    let pool: PostgresPool

    func enqueue(service: String, id: String, label: String, payload: JSON, now: Int64, limit: Int) async throws -> Bool {
        try await pool.transaction { connection in
            let waiting =
                try await pool.run("SELECT COUNT(*) FROM outbound_call WHERE service = \(service)", on: connection).first?.decode(Int64.self) ?? 0
            guard waiting < limit else { return false }
            try await pool.run(
                """
                INSERT INTO outbound_call (id, service, label, payload, created_at_ms, next_attempt_at_ms)
                VALUES (\(id), \(service), \(label), \(payload.text), \(now), \(now))
                """, on: connection)
            return true
        }
    }

    func claimDue(service: String, now: Int64, limit: Int, lease: Int64) async throws -> [QueuedCall] {
        try await PostgresOutboxClaims.claimDue(
            on: pool, table: "outbound_call", columns: callColumns, pending: try calls(of: service), now: now, limit: limit, lease: lease
        ).map { row in
            let (id, label, payload, attempts, createdAt) = try row.decode((String, String, String, Int32, Int64).self)
            return QueuedCall(id: id, label: label, payload: try JSONParser.parse(Array(payload.utf8)), attempts: Int(attempts), createdAt: createdAt)
        }
    }

    func remove(_ id: String) async throws {
        try await pool.query("DELETE FROM outbound_call WHERE id = \(id)")
    }

    func retry(_ id: String, attempts: Int, at next: Int64) async throws {
        try await pool.query("UPDATE outbound_call SET attempts = \(Int32(attempts)), next_attempt_at_ms = \(next) WHERE id = \(id)")
    }
}

/// A store refusing what it cannot hold.
struct OutboundCallStoreError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
