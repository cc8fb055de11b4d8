import GondolaDomain
import GondolaPostgres
import GondolaServices
import Logging
import NIOCore
import PostgresNIO

/// Crash files in PostgreSQL's `crash_file` (cluster mode), so that a photo uploaded
/// through one node is served by every node. Rows reference the bytes by a foreign key:
/// a removal that races with a new reference to the same bytes fails and leaves them.
/// Storing again refreshes `stored_at_ms`, and the sweep spares bytes stored within the
/// last hour, so that bytes another node has just stored for a row it is about to commit
/// are not swept by a node that starts meanwhile.
struct PostgresCrashFiles: CrashFiles {
    let pool: PostgresPool
    /// How long stored bytes stay before a sweep may take them without a row.
    static let sweepGraceMilliseconds: Int64 = 3_600_000

    func store(_ bytes: [UInt8]) async throws -> String {
        let hash = FileStore.hash(of: bytes)
        try await pool.query(
            """
            INSERT INTO crash_file (hash, bytes, stored_at_ms) VALUES (\(hash), \(ByteBuffer(bytes: bytes)), \(unixMilliseconds()))
            ON CONFLICT (hash) DO UPDATE SET stored_at_ms = EXCLUDED.stored_at_ms
            """)
        return hash
    }

    func read(_ hash: String) async throws -> [UInt8]? {
        try await pool.query("SELECT bytes FROM crash_file WHERE hash = \(hash)").first
            .map { Array(try $0.decode(ByteBuffer.self).readableBytesView) }
    }

    func remove(_ hash: String) async {
        do {
            try await pool.query(
                """
                DELETE FROM crash_file WHERE hash = \(hash)
                AND NOT EXISTS (SELECT 1 FROM crash_photo WHERE file_hash = \(hash)) AND NOT EXISTS (SELECT 1 FROM crash WHERE report_hash = \(hash))
                """)
        } catch {
            pool.logger.notice("crash file kept for the next sweep", metadata: ["hash": "\(hash)", "error": "\(String(reflecting: error))"])
        }
    }

    func sweep() async throws -> Int {
        let rows = try await pool.query(
            """
            DELETE FROM crash_file f WHERE stored_at_ms < \(unixMilliseconds() - Self.sweepGraceMilliseconds)
            AND NOT EXISTS (SELECT 1 FROM crash_photo WHERE file_hash = f.hash) AND NOT EXISTS (SELECT 1 FROM crash WHERE report_hash = f.hash)
            RETURNING hash
            """)
        return Array(rows).count
    }
}
