import GRDB
import GondolaHub
import GondolaPostgres
import GondolaServices
import GondolaStore
import PostgresNIO

/// A mail waiting in the outbox, with the deliveries tried so far.
struct QueuedMail: Sendable, Equatable {
    let id: String
    let message: MailMessage
    let attempts: Int
}

/// Where the mail outbox keeps its mails. Its calls block (they are not awaited), so that
/// a stop beginning while a delivery's outcome is recorded cannot skip the record.
protocol MailQueue: Sendable {
    /// Mails not yet sent nor given up.
    func pendingCount() async throws -> Int
    /// Up to `limit` mails due at `now`, the longest due first, each claimed until
    /// `now + lease`: another worker does not see them before then.
    func claimDue(now: Int64, limit: Int, lease: Int64) async throws -> [QueuedMail]
    func markSent(_ id: String, at time: Int64) async throws
    /// Records a failed delivery: the attempts so far, the error, when to try again, and
    /// when it was given up (nil: not given up).
    func markFailed(_ id: String, attempts: Int, error: String, next: Int64, givenUpAt: Int64?) async throws
    /// Deletes the mails sent before `time`.
    func forgetSent(before time: Int64) async throws
}

/// The outbox in SQLite's `mail_outbox`.
struct SQLiteMailQueue: MailQueue {
    let database: GondolaDatabase

    /// Queues `message` inside the caller's transaction; answers the mail's id. Throws
    /// `MailOutbox.Full` when `MailOutbox.maxPending` mails are waiting.
    @discardableResult
    static func enqueue(_ message: MailMessage, in db: Database, now: Int64) throws -> String {
        let pending = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM mail_outbox WHERE sent_at_ms IS NULL AND given_up_at_ms IS NULL") ?? 0
        guard pending < MailOutbox.maxPending else { throw MailOutbox.Full() }
        let id = RandomID.make("mail-")
        try db.execute(
            sql: """
                INSERT INTO mail_outbox (id, recipient, sender, subject, text_body, html_body, created_at_ms, next_attempt_at_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [id, message.to, message.from, message.subject, message.text, message.html, now, now])
        return id
    }

    func pendingCount() throws -> Int {
        try database.pool.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM mail_outbox WHERE sent_at_ms IS NULL AND given_up_at_ms IS NULL") ?? 0
        }
    }

    func claimDue(now: Int64, limit: Int, lease: Int64) throws -> [QueuedMail] {
        try database.pool.write { db in
            try OutboxClaims.claimDue(
                in: db, table: "mail_outbox", columns: ["recipient", "sender", "subject", "text_body", "html_body", "attempts"],
                pending: "sent_at_ms IS NULL AND given_up_at_ms IS NULL", now: now, limit: limit, lease: lease
            ).map { row in
                QueuedMail(
                    id: row["id"],
                    message: MailMessage(
                        from: row["sender"], to: row["recipient"], subject: row["subject"], text: row["text_body"], html: row["html_body"]),
                    attempts: row["attempts"])
            }
        }
    }

    func markSent(_ id: String, at time: Int64) throws {
        try database.pool.write { db in
            try db.execute(
                sql: "UPDATE mail_outbox SET sent_at_ms = ?, attempts = attempts + 1, last_error = NULL WHERE id = ?", arguments: [time, id])
        }
    }

    func markFailed(_ id: String, attempts: Int, error: String, next: Int64, givenUpAt: Int64?) throws {
        try database.pool.write { db in
            try db.execute(
                sql: "UPDATE mail_outbox SET attempts = ?, last_error = ?, next_attempt_at_ms = ?, given_up_at_ms = ? WHERE id = ?",
                arguments: [attempts, error, next, givenUpAt, id])
        }
    }

    func forgetSent(before time: Int64) throws {
        try database.pool.write { db in
            try db.execute(sql: "DELETE FROM mail_outbox WHERE sent_at_ms IS NOT NULL AND sent_at_ms < ?", arguments: [time])
        }
    }
}

/// The outbox in PostgreSQL's `mail_outbox` (cluster mode): every node runs a worker, and
/// a claim takes due rows with `FOR UPDATE SKIP LOCKED`, so two workers never claim one mail.
struct PostgresMailQueue: MailQueue {
    let pool: PostgresPool

    /// Queues `message` in the transaction on `connection`; throws `MailOutbox.Full` when
    /// `MailOutbox.maxPending` mails are waiting.
    static func enqueue(_ message: MailMessage, on connection: PostgresConnection, _ pool: PostgresPool, now: Int64) async throws {
        let pending =
            try await pool.run("SELECT COUNT(*) FROM mail_outbox WHERE sent_at_ms IS NULL AND given_up_at_ms IS NULL", on: connection)
            .first?.decode(Int64.self) ?? 0
        guard pending < MailOutbox.maxPending else { throw MailOutbox.Full() }
        try await pool.run(
            """
            INSERT INTO mail_outbox (id, recipient, sender, subject, text_body, html_body, created_at_ms, next_attempt_at_ms)
            VALUES (\(RandomID.make("mail-")), \(message.to), \(message.from), \(message.subject), \(message.text), \(message.html), \(now), \(now))
            """, on: connection)
    }

    func pendingCount() async throws -> Int {
        Int(
            try await pool.query("SELECT COUNT(*) FROM mail_outbox WHERE sent_at_ms IS NULL AND given_up_at_ms IS NULL").first?.decode(Int64.self)
                ?? 0)
    }

    func claimDue(now: Int64, limit: Int, lease: Int64) async throws -> [QueuedMail] {
        try await PostgresOutboxClaims.claimDue(
            on: pool, table: "mail_outbox", columns: ["recipient", "sender", "subject", "text_body", "html_body", "attempts"],
            pending: "sent_at_ms IS NULL AND given_up_at_ms IS NULL", now: now, limit: limit, lease: lease
        ).map { row in
            let (id, recipient, sender, subject, text, html, attempts) =
                try row.decode((String, String, String, String, String, String, Int32).self)
            return QueuedMail(
                id: id, message: MailMessage(from: sender, to: recipient, subject: subject, text: text, html: html), attempts: Int(attempts))
        }
    }

    func markSent(_ id: String, at time: Int64) async throws {
        try await pool.query("UPDATE mail_outbox SET sent_at_ms = \(time), attempts = attempts + 1, last_error = NULL WHERE id = \(id)")
    }

    func markFailed(_ id: String, attempts: Int, error: String, next: Int64, givenUpAt: Int64?) async throws {
        try await pool.query(
            """
            UPDATE mail_outbox SET attempts = \(Int32(attempts)), last_error = \(error), next_attempt_at_ms = \(next), given_up_at_ms = \(givenUpAt)
            WHERE id = \(id)
            """)
    }

    func forgetSent(before time: Int64) async throws {
        try await pool.query("DELETE FROM mail_outbox WHERE sent_at_ms IS NOT NULL AND sent_at_ms < \(time)")
    }
}
