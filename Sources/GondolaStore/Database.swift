import Foundation
import GRDB
import GRDBSQLite

/// The SQLite database of a Gondola server: one file in WAL mode, migrated on open.
/// Commits do not wait for durability on disk (`synchronous = NORMAL`: a power cut
/// may lose the last commits, never the file's consistency; a crashed process loses
/// nothing committed), and the WAL is copied into the database in the background
/// (`WALCheckpointer`).
public final class GondolaDatabase: Sendable {
    /// Largest WAL file kept after it starts over (bytes); a bigger one is truncated.
    static let walFileLimit = 64 << 20
    /// Most pages the writer keeps in memory (bytes): a write that touches rows spread over
    /// a large table reads them from here, not through a system call each.
    static let writerCacheLimit = 32 << 20
    /// Most pages a reader keeps in memory (bytes): SQLite's default, 2,000 KiB, set on every
    /// connection so that `SQLitePageCache` is sized from what is in force.
    static let readerCacheLimit = 2000 << 10
    /// Most reading connections open at once (GRDB's default, made explicit because
    /// `SQLitePageCache` is sized from it).
    static let readerLimit = 5

    public let pool: DatabasePool
    public let path: String
    public let checkpointer: WALCheckpointer

    /// Opens (creating the folder and file when missing) and migrates the database at
    /// `path`: the core schema (streams, users), then what `domainMigrations` registers.
    /// `checkpoints` says when its WAL is copied back (see `WALCheckpointer`).
    public init(
        path: String, checkpoints: WALCheckpointer.Limits = .init(),
        domainMigrations: (inout DatabaseMigrator) -> Void = { _ in }
    ) throws {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.maximumReaderCount = Self.readerLimit
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            try db.execute(sql: "PRAGMA cache_size = -\(Self.readerCacheLimit >> 10)")
        }
        let pool = try DatabasePool(path: path, configuration: configuration)
        var migrator = Self.migrator
        domainMigrations(&migrator)
        try migrator.migrate(pool)
        let checkpointer = try WALCheckpointer(path: path, limits: checkpoints)
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_size_limit = \(Self.walFileLimit)")
            try db.execute(sql: "PRAGMA cache_size = -\(Self.writerCacheLimit >> 10)")
            checkpointer.attach(to: db)
        }
        self.pool = pool
        self.path = path
        self.checkpointer = checkpointer
    }

    /// Bytes SQLite holds in memory for every database of the process: page caches (the
    /// writer's up to `writerCacheLimit`, each reader's up to `readerCacheLimit`), prepared
    /// statements, schemas. With a reserved `SQLitePageCache` the caches' pages are the whole
    /// block, used or not, and what SQLite allocates beyond it.
    public static var memoryInUse: Int { Int(sqlite3_memory_used()) + (SQLitePageCache.reserved?.bytes ?? 0) }

    deinit {
        // The writer's WAL hook points at the checkpointer: close the pool before it goes.
        try? pool.close()
    }

    /// The core schema: durable streams, users and the outbound calls' queue. Domains add theirs after it.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-streams-users") { db in
            try db.execute(
                sql: """
                    CREATE TABLE stream (
                        channel TEXT PRIMARY KEY NOT NULL,
                        epoch TEXT NOT NULL,
                        top_offset INTEGER NOT NULL
                    );
                    CREATE TABLE publication (
                        channel TEXT NOT NULL,
                        "offset" INTEGER NOT NULL,
                        data BLOB NOT NULL,
                        info BLOB,
                        created_at_ms INTEGER NOT NULL,
                        PRIMARY KEY (channel, "offset")
                    ) WITHOUT ROWID;
                    CREATE TABLE user (
                        id TEXT PRIMARY KEY NOT NULL,
                        name TEXT NOT NULL,
                        telegram_id INTEGER UNIQUE,
                        telegram_username TEXT,
                        photo_url TEXT,
                        created_at_ms INTEGER NOT NULL
                    );
                    """)
        }
        // When a stream's offset and epoch are dropped (`history_meta_ttl` after its last
        // publication); NULL for streams written before, kept until their next publication.
        migrator.registerMigration("v2-stream-meta-expiry") { db in
            try db.execute(sql: "ALTER TABLE stream ADD COLUMN meta_expires_at_ms INTEGER")
        }
        // Publication tags (a JSON object of strings, NULL without tags) and the version of a
        // stream's latest versioned publication (`publish`'s `version`, 0 for none).
        migrator.registerMigration("v3-publication-tags-stream-version") { db in
            try db.execute(
                sql: """
                    ALTER TABLE publication ADD COLUMN tags BLOB;
                    ALTER TABLE stream ADD COLUMN top_version INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE stream ADD COLUMN top_version_epoch TEXT NOT NULL DEFAULT '';
                    """)
        }
        // The durable queue of calls to outside services (the domains' `OutboundCalls`).
        migrator.registerMigration("v4-outbound-calls") { db in
            try db.execute(
                sql: """
                    CREATE TABLE outbound_call (
                        id TEXT PRIMARY KEY NOT NULL,
                        service TEXT NOT NULL,
                        label TEXT NOT NULL,
                        payload TEXT NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        created_at_ms INTEGER NOT NULL,
                        next_attempt_at_ms INTEGER NOT NULL
                    );
                    CREATE INDEX outbound_call_due ON outbound_call (service, next_attempt_at_ms);
                    """)
        }
        return migrator
    }
}
