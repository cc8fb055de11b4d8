import PostgresNIO

/// What the durable outboxes in PostgreSQL share (mail, fence webhooks): a worker of any
/// node claims the rows due now, the longest due first, by pushing their next attempt
/// `lease` milliseconds ahead; rows another worker is claiming are skipped
/// (`FOR UPDATE SKIP LOCKED`), so two workers never claim one row.
public enum PostgresOutboxClaims {
    /// Up to `limit` rows of `table` (with an `id` and a `next_attempt_at_ms` column) that
    /// are `pending` (an SQL condition) and due at `now`: `id` then `columns`, the longest
    /// due first; each claimed until `now + lease`.
    public static func claimDue(
        on pool: PostgresPool, table: String, columns: [String], pending: String, now: Int64, limit: Int, lease: Int64
    ) async throws -> PostgresQueryResult {
        let returned = (["id"] + columns).map { "o.\($0)" }.joined(separator: ", ")
        return try await pool.query(
            """
            WITH due AS (
                SELECT id, next_attempt_at_ms AS due_at FROM \(unescaped: table)
                WHERE \(unescaped: pending) AND next_attempt_at_ms <= \(now)
                ORDER BY next_attempt_at_ms, id LIMIT \(Int64(limit)) FOR UPDATE SKIP LOCKED
            ), claimed AS (
                UPDATE \(unescaped: table) o SET next_attempt_at_ms = \(now + lease) FROM due WHERE o.id = due.id
                RETURNING \(unescaped: returned), due.due_at
            )
            SELECT id, \(unescaped: columns.joined(separator: ", ")) FROM claimed ORDER BY due_at, id
            """)
    }
}
