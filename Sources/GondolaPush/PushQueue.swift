import GRDB
import GondolaDomain
import GondolaPostgres
import GondolaStore
import PostgresNIO

/// Where the push outbox keeps its notifications. Its calls block; each is one transaction.
/// A claim is held by one worker (`runner`) until its lease ends, so the workers of several
/// cluster nodes never send one notification at once: in PostgreSQL's rows (`claimed_by`,
/// `claim_until_ms`), in memory on a single SQLite node (`HeldClaims`).
protocol PushQueue: Sendable {
    /// Queues `pushes` at `now`: a push with a collapse key folds into a waiting, unclaimed
    /// notification of the same device and key (its count grows, its text becomes the
    /// latest); the others are new rows, as long as fewer than `maxPending` wait.
    func enqueue(_ pushes: [OutgoingPush], now: Int64, maxPending: Int) async throws -> EnqueueOutcome
    /// Notifications not yet sent nor given up.
    func pendingCount() async throws -> Int
    /// Up to `limit` notifications due at `now` (for `platform` only, when given), the
    /// longest due first, claimed by `runner` until `now + lease`.
    func claimDue(now: Int64, limit: Int, lease: Int64, runner: String, platform: PushPlatform?) async throws -> [QueuedPush]
    /// Frees the claims of every runner but `runner` (a single node's restart: the claims of
    /// the run that died are void at once instead of after their lease).
    func releaseClaims(except runner: String) async throws -> Int
    /// Records the notifications `ids` as accepted at `time`, in one transaction.
    func markSent(_ ids: [String], at time: Int64) async throws
    /// Records a failed delivery: the attempts so far, the error, when to try again, and
    /// when it was given up (nil: not given up).
    func markFailed(_ id: String, attempts: Int, error: String, next: Int64, givenUpAt: Int64?) async throws
    /// Gives up every waiting notification of `token` (the service said it is no longer valid).
    func giveUp(token: String, reason: String, at time: Int64) async throws
    /// Deletes the notifications sent or given up before `time`.
    func forget(before time: Int64) async throws
}

extension PushQueue {
    /// Up to `limit` notifications of any platform due at `now` (see the requirement).
    func claimDue(now: Int64, limit: Int, lease: Int64, runner: String) async throws -> [QueuedPush] {
        try await claimDue(now: now, limit: limit, lease: lease, runner: runner, platform: nil)
    }
}

private let pendingCondition = "sent_at_ms IS NULL AND given_up_at_ms IS NULL"
private let outboxColumns = """
    id, token, platform, user_id, category, text_key, text_values, locale, link, collapse_key, count, silent, event_at_ms, expires_at_ms, attempts
    """

/// The outbox in SQLite's `push_outbox`, on the one node that owns the file: its claims are
/// kept in memory (`HeldClaims`), so a notification's row is written when it is queued and when
/// its outcome is recorded, not when it is claimed. Claims, folds and outcomes all run in the
/// writer's transactions, one at a time.
struct SQLitePushQueue: PushQueue {
    let database: GondolaDatabase
    let claims = HeldClaims()

    func enqueue(_ pushes: [OutgoingPush], now: Int64, maxPending: Int) throws -> EnqueueOutcome {
        try database.pool.write { db in
            var outcome = EnqueueOutcome()
            var room = maxPending - (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM push_outbox WHERE \(pendingCondition)") ?? 0)
            let waiting = try db.cachedStatement(
                sql: """
                    SELECT id FROM push_outbox WHERE token = ? AND collapse_key = ? AND \(pendingCondition)
                    """)
            let fold = try db.cachedStatement(
                sql: """
                    UPDATE push_outbox SET count = count + 1, text_values = ?, link = ?, silent = ?, expires_at_ms = ? WHERE id = ?
                    """)
            let insert = try db.cachedStatement(
                sql: """
                    INSERT INTO push_outbox (id, token, platform, user_id, category, text_key, text_values, locale, link, collapse_key, count, silent,
                        event_at_ms, expires_at_ms, next_attempt_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """)
            var ids = OutboxIDs(expected: pushes.count)
            var texts = ContentMapColumns()
            for push in pushes {
                let content = push.content
                let (values, link) = texts.texts(of: content)
                if let key = content.collapseKey,
                    let id = try String.fetchCursor(waiting, arguments: [push.token, key]).first(where: { !claims.contains($0) })
                {
                    try fold.execute(arguments: [values, link, content.silent, content.expiresAt, id])
                    outcome.collapsed += 1
                    continue
                }
                guard room > 0 else {
                    outcome.dropped += 1
                    continue
                }
                try insert.execute(arguments: [
                    ids.next(), push.token, push.platform.rawValue, push.user, content.category.rawValue, content.textKey, values,
                    content.locale, link, content.collapseKey, content.count, content.silent, content.eventAt, content.expiresAt, now,
                ])
                room -= 1
                outcome.queued += 1
            }
            return outcome
        }
    }

    func pendingCount() throws -> Int {
        try database.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM push_outbox WHERE \(pendingCondition)") ?? 0 }
    }

    func claimDue(now: Int64, limit: Int, lease: Int64, runner: String, platform: PushPlatform?) throws -> [QueuedPush] {
        // The due rows in the index's order, the claimed ones (in flight) passed over by id.
        try database.pool.write { db in
            let due = try Row.fetchCursor(
                db.cachedStatement(
                    sql: """
                        SELECT \(outboxColumns), next_attempt_at_ms FROM push_outbox
                        WHERE \(pendingCondition) AND next_attempt_at_ms <= ? AND (? IS NULL OR platform = ?)
                        ORDER BY next_attempt_at_ms
                        """), arguments: [now, platform?.rawValue, platform?.rawValue])
            var ids: [String] = []
            var claimed: [(due: Int64, push: QueuedPush)] = []
            var columns = ContentMapColumns()
            while ids.count < limit, let row = try due.next() {
                let id: String = row[OutboxColumn.id]
                if claims.holds(id, at: now) { continue }
                ids.append(id)
                if let push = Self.queued(row, reading: &columns) { claimed.append((row[OutboxColumn.due], push)) }
            }
            claims.hold(ids, runner: runner, until: now + lease, now: now)
            return claimed.sorted { ($0.due, $0.push.id) < ($1.due, $1.push.id) }.map(\.push)
        }
    }

    func releaseClaims(except runner: String) throws -> Int {
        claims.release(except: runner)
    }

    func markSent(_ ids: [String], at time: Int64) throws {
        try database.pool.write { db in
            let sent = try db.cachedStatement(
                sql: """
                    UPDATE push_outbox SET sent_at_ms = ?, attempts = attempts + 1, last_error = NULL WHERE id = ?
                    """)
            for id in ids { try sent.execute(arguments: [time, id]) }
            claims.release(ids)
        }
    }

    func markFailed(_ id: String, attempts: Int, error: String, next: Int64, givenUpAt: Int64?) throws {
        try database.pool.write { db in
            try db.execute(
                sql: """
                    UPDATE push_outbox SET attempts = ?, last_error = ?, next_attempt_at_ms = ?, given_up_at_ms = ? WHERE id = ?
                    """, arguments: [attempts, error, next, givenUpAt, id])
            claims.release([id])
        }
    }

    func giveUp(token: String, reason: String, at time: Int64) throws {
        try database.pool.write { db in
            try db.execute(
                sql: "UPDATE push_outbox SET given_up_at_ms = ?, last_error = ? WHERE token = ? AND \(pendingCondition)",
                arguments: [time, reason, token])
        }
    }

    func forget(before time: Int64) throws {
        try database.pool.write { db in
            try db.execute(sql: "DELETE FROM push_outbox WHERE sent_at_ms < ?", arguments: [time])
            try db.execute(sql: "DELETE FROM push_outbox WHERE given_up_at_ms < ?", arguments: [time])
        }
    }

    /// The positions of `outboxColumns` in a row, read by index rather than by name.
    private enum OutboxColumn {
        static let id = 0, token = 1, platform = 2, user = 3, category = 4, textKey = 5, values = 6, locale = 7, link = 8, collapseKey = 9,
            count = 10, silent = 11, eventAt = 12, expiresAt = 13, attempts = 14, due = 15
    }

    private static func queued(_ row: Row, reading columns: inout ContentMapColumns) -> QueuedPush? {
        QueuedPush(
            id: row[OutboxColumn.id], token: row[OutboxColumn.token], platform: row[OutboxColumn.platform], user: row[OutboxColumn.user],
            category: row[OutboxColumn.category], textKey: row[OutboxColumn.textKey], values: row[OutboxColumn.values],
            locale: row[OutboxColumn.locale], link: row[OutboxColumn.link], collapseKey: row[OutboxColumn.collapseKey],
            count: row[OutboxColumn.count], silent: row[OutboxColumn.silent], eventAt: row[OutboxColumn.eventAt],
            expiresAt: row[OutboxColumn.expiresAt], attempts: row[OutboxColumn.attempts], reading: &columns)
    }
}

/// The outbox in PostgreSQL's `push_outbox` (cluster mode): every node runs a worker, and a
/// claim takes due rows with `FOR UPDATE SKIP LOCKED`, so two workers never claim one row.
struct PostgresPushQueue: PushQueue {
    let pool: PostgresPool

    func enqueue(_ pushes: [OutgoingPush], now: Int64, maxPending: Int) async throws -> EnqueueOutcome {
        try await pool.transaction { connection in
            var outcome = EnqueueOutcome()
            let pending =
                try await pool.run("SELECT COUNT(*) FROM push_outbox WHERE sent_at_ms IS NULL AND given_up_at_ms IS NULL", on: connection)
                .first?.decode(Int64.self) ?? 0
            var room = maxPending - Int(pending)
            // The new rows, with their values and link as stored (encoded once, in this loop).
            var fresh: [(push: OutgoingPush, values: String, link: String)] = []
            var texts = ContentMapColumns()
            for push in pushes {
                let content = push.content
                let (values, link) = texts.texts(of: content)
                if let key = content.collapseKey,
                    try await pool.run(
                        """
                        UPDATE push_outbox SET count = count + 1, text_values = \(values), link = \(link), silent = \(content.silent),
                            expires_at_ms = \(content.expiresAt)
                        WHERE id = (SELECT id FROM push_outbox WHERE token = \(push.token) AND collapse_key = \(key)
                                    AND sent_at_ms IS NULL AND given_up_at_ms IS NULL AND claimed_by IS NULL LIMIT 1 FOR UPDATE SKIP LOCKED)
                        RETURNING id
                        """, on: connection
                    ).first != nil
                {
                    outcome.collapsed += 1
                    continue
                }
                guard room > 0 else {
                    outcome.dropped += 1
                    continue
                }
                room -= 1
                fresh.append((push, values, link))
            }
            // New rows in one statement: column arrays unnested.
            var ids = OutboxIDs(expected: fresh.count)
            for chunk in stride(from: 0, to: fresh.count, by: 5_000).map({ Array(fresh[$0..<min($0 + 5_000, fresh.count)]) }) {
                let contents = chunk.map(\.push.content)
                try await pool.run(
                    """
                    INSERT INTO push_outbox (id, token, platform, user_id, category, text_key, text_values, locale, link, collapse_key, count, silent,
                        event_at_ms, expires_at_ms, next_attempt_at_ms)
                    SELECT id, token, platform, user_id, category, text_key, text_values, NULLIF(locale, ''), link, NULLIF(collapse_key, ''), count,
                        silent, event_at_ms, expires_at_ms, next_attempt_at_ms
                    FROM UNNEST(\(chunk.map { _ in ids.next() }), \(chunk.map(\.push.token)), \(chunk.map(\.push.platform.rawValue)),
                        \(chunk.map(\.push.user)), \(contents.map(\.category.rawValue)), \(contents.map(\.textKey)),
                        \(chunk.map(\.values)), \(contents.map { $0.locale ?? "" }),
                        \(chunk.map(\.link)), \(contents.map { $0.collapseKey ?? "" }), \(contents.map { Int64($0.count) }),
                        \(contents.map(\.silent)), \(contents.map(\.eventAt)), \(contents.map(\.expiresAt)), \(contents.map { _ in now }))
                        AS t(id, token, platform, user_id, category, text_key, text_values, locale, link, collapse_key, count, silent, event_at_ms,
                             expires_at_ms, next_attempt_at_ms)
                    """, on: connection)
                outcome.queued += chunk.count
            }
            return outcome
        }
    }

    func pendingCount() async throws -> Int {
        Int(
            try await pool.query("SELECT COUNT(*) FROM push_outbox WHERE sent_at_ms IS NULL AND given_up_at_ms IS NULL").first?.decode(Int64.self)
                ?? 0)
    }

    func claimDue(now: Int64, limit: Int, lease: Int64, runner: String, platform: PushPlatform?) async throws -> [QueuedPush] {
        var columns = ContentMapColumns()
        return try await pool.query(
            """
            WITH due AS (
                SELECT id, next_attempt_at_ms AS due_at FROM push_outbox
                WHERE sent_at_ms IS NULL AND given_up_at_ms IS NULL AND next_attempt_at_ms <= \(now)
                    AND (claimed_by IS NULL OR claim_until_ms <= \(now)) AND (\(platform?.rawValue)::text IS NULL OR platform = \(platform?.rawValue))
                ORDER BY next_attempt_at_ms LIMIT \(Int64(limit)) FOR UPDATE SKIP LOCKED
            ), claimed AS (
                UPDATE push_outbox p SET claimed_by = \(runner), claim_until_ms = \(now + lease) FROM due WHERE p.id = due.id
                RETURNING p.*, due.due_at
            )
            SELECT \(unescaped: outboxColumns) FROM claimed ORDER BY due_at, id
            """
        ).compactMap { row in
            let (id, token, platform, user, category, textKey, values, locale, link, collapseKey, count, silent, eventAt, expiresAt, attempts) =
                try row.decode(
                    (
                        String, String, String, String, String, String, String, String?, String, String?, Int64, Bool, Int64, Int64,
                        Int32
                    ).self)
            return QueuedPush(
                id: id, token: token, platform: platform, user: user, category: category, textKey: textKey, values: values,
                locale: locale, link: link, collapseKey: collapseKey, count: Int(count), silent: silent, eventAt: eventAt,
                expiresAt: expiresAt, attempts: Int(attempts), reading: &columns)
        }
    }

    func releaseClaims(except runner: String) throws -> Int { 0 }  // nodes of a cluster wait for each other's leases

    func markSent(_ ids: [String], at time: Int64) async throws {
        try await pool.query(
            """
            UPDATE push_outbox SET sent_at_ms = \(time), attempts = attempts + 1, last_error = NULL, claimed_by = NULL, claim_until_ms = NULL
            WHERE id = ANY(\(ids))
            """)
    }

    func markFailed(_ id: String, attempts: Int, error: String, next: Int64, givenUpAt: Int64?) async throws {
        try await pool.query(
            """
            UPDATE push_outbox SET attempts = \(Int32(attempts)), last_error = \(error), next_attempt_at_ms = \(next), given_up_at_ms = \(givenUpAt),
                claimed_by = NULL, claim_until_ms = NULL
            WHERE id = \(id)
            """)
    }

    func giveUp(token: String, reason: String, at time: Int64) async throws {
        try await pool.query(
            """
            UPDATE push_outbox SET given_up_at_ms = \(time), last_error = \(reason) WHERE token = \(token) AND sent_at_ms IS NULL AND given_up_at_ms IS NULL
            """)
    }

    func forget(before time: Int64) async throws {
        try await pool.transaction { connection in
            try await pool.run("DELETE FROM push_outbox WHERE sent_at_ms < \(time)", on: connection)
            try await pool.run("DELETE FROM push_outbox WHERE given_up_at_ms < \(time)", on: connection)
        }
    }
}
