import Foundation
import GRDB
import GRDBSQLite
import Testing

@testable import GondolaStore

/// SQLite's page caches are bounded: as the database outgrows them, the writer keeps at most
/// `writerCacheLimit` of pages and a reader `readerCacheLimit` (SQLite's default), dropping the least
/// recently used. What `gondola_sqlite_memory_bytes` reports therefore stops rising at a ceiling.
@Suite struct DatabaseMemoryTests {
    /// Bytes the connection's page cache holds (`SQLITE_DBSTATUS_CACHE_USED`, this connection alone).
    func cacheBytes(_ db: Database) -> Int {
        var current: Int32 = 0
        var highest: Int32 = 0
        sqlite3_db_status(db.sqliteConnection, SQLITE_DBSTATUS_CACHE_USED, &current, &highest, 0)
        return Int(current)
    }

    @Test func thePageCachesStopAtTheirLimitsAsTheDatabaseOutgrowsThem() throws {
        let path = temporaryDatabasePath()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let database = try GondolaDatabase(path: path)
        let limit = GondolaDatabase.writerCacheLimit
        let row = Data(repeating: 7, count: 3000)
        var written = 0
        var writerCache = 0
        // Half as much again as the writer's limit, in commits of 4 MB.
        while written < limit * 3 / 2 {
            writerCache = try database.pool.write { db in
                for _ in 0..<1300 {
                    try db.execute(
                        sql: #"INSERT INTO publication (channel, "offset", data, created_at_ms) VALUES ('bulk', ?, ?, 0)"#,
                        arguments: [written, row])
                    written += row.count
                }
                return cacheBytes(db)
            }
            #expect(writerCache <= limit + limit / 20, "the writer's cache holds \(writerCache) bytes after \(written) written")
        }
        // It filled to its limit on the way, so the bound above was reached, not merely approached.
        #expect(writerCache >= limit * 3 / 4, "the writer's cache holds \(writerCache) bytes after \(written) written")
        let readerCache = try database.pool.read { db in
            _ = try Int.fetchOne(db, sql: "SELECT SUM(LENGTH(data)) FROM publication")
            return cacheBytes(db)
        }
        #expect(readerCache <= GondolaDatabase.readerCacheLimit + 100 * 1024, "a reader's cache holds \(readerCache) bytes after a full scan")
    }

    /// `gondola serve` reserves the block before anything opens a database; in a process where
    /// SQLite already runs, SQLite refuses it, and the caches go on allocating from the heap.
    @Test func aPageCacheBlockAskedForAfterSQLitesFirstUseIsRefusedAndChangesNothing() throws {
        let path = temporaryDatabasePath()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let database = try GondolaDatabase(path: path)
        #expect(SQLitePageCache.reserve() == nil)
        #expect(SQLitePageCache.reserved == nil)
        #expect(SQLitePageCache.usage.slotsInUse == 0)
        // Still a working database, its pages from the heap.
        let written = try database.pool.write { db in
            try db.execute(sql: #"INSERT INTO publication (channel, "offset", data, created_at_ms) VALUES ('late', 1, x'00', 0)"#)
            return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM publication WHERE channel = 'late'")
        }
        #expect(written == 1)
        #expect(SQLitePageCache.usage.slotsInUse == 0)
    }
}
