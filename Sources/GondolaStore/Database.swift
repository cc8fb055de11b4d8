import Foundation
import GRDB

/// The SQLite database of a Gondola server: one file in WAL mode, migrated on open.
public final class GondolaDatabase: Sendable {
    public let pool: DatabasePool
    public let path: String

    /// Opens (creating the folder and file when missing) and migrates the database at `path`.
    public init(path: String) throws {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        self.pool = try DatabasePool(path: path, configuration: configuration)
        self.path = path
        try Self.migrator.migrate(pool)
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-streams-users") { db in
            try db.execute(sql: """
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
        return migrator
    }
}
