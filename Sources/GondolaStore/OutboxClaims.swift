import GRDB

/// What the durable outboxes in SQLite share (mail, fence webhooks): a worker claims the
/// rows due now, the longest due first, by pushing their next attempt `lease`
/// milliseconds ahead, so that no other worker takes them meanwhile.
public enum OutboxClaims {
    /// Up to `limit` rows of `table` (with an `id` and a `next_attempt_at_ms` column) that
    /// are `pending` (an SQL condition) and due at `now`: `id` then `columns`; each claimed
    /// until `now + lease`. Runs in the caller's write transaction.
    public static func claimDue(
        in db: Database, table: String, columns: [String], pending: String, now: Int64, limit: Int, lease: Int64
    ) throws -> [Row] {
        let due = try Row.fetchAll(
            db,
            sql: """
                SELECT id, \(columns.joined(separator: ", ")) FROM \(table)
                WHERE \(pending) AND next_attempt_at_ms <= ? ORDER BY next_attempt_at_ms, id LIMIT ?
                """, arguments: [now, limit])
        for row in due {
            try db.execute(sql: "UPDATE \(table) SET next_attempt_at_ms = ? WHERE id = ?", arguments: [now + lease, row["id"] as String])
        }
        return due
    }
}
