import GRDB

/// The crash domain's tables: crashes with what was collected, their last report and
/// share link, and their photos (the file store keeps photo and report bytes by hash);
/// the phone number each user gets crash texts on.
enum CrashSchema {
    static func registerMigrations(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("crash-v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE crash (
                        id TEXT PRIMARY KEY NOT NULL,
                        owner TEXT NOT NULL,
                        source TEXT NOT NULL CHECK (source IN ('detected', 'manual')),
                        occurred_at_ms INTEGER NOT NULL,
                        lat REAL,
                        lon REAL,
                        injured TEXT NOT NULL DEFAULT '',
                        note TEXT NOT NULL DEFAULT '',
                        created_at_ms INTEGER NOT NULL,
                        updated_at_ms INTEGER NOT NULL,
                        reported_at_ms INTEGER,
                        report_hash TEXT,
                        share_id TEXT,
                        share_expires_at_ms INTEGER
                    );
                    CREATE INDEX crash_owner ON crash(owner);
                    CREATE TABLE crash_photo (
                        id TEXT PRIMARY KEY NOT NULL,
                        crash_id TEXT NOT NULL REFERENCES crash(id) ON DELETE CASCADE,
                        section TEXT NOT NULL,
                        file_hash TEXT NOT NULL,
                        file_name TEXT NOT NULL,
                        content_type TEXT NOT NULL,
                        size INTEGER NOT NULL,
                        width INTEGER NOT NULL,
                        height INTEGER NOT NULL,
                        created_at_ms INTEGER NOT NULL
                    );
                    CREATE INDEX crash_photo_crash ON crash_photo(crash_id, section);
                    CREATE INDEX crash_photo_file ON crash_photo(file_hash);
                    CREATE TABLE crash_contact (
                        user_id TEXT PRIMARY KEY NOT NULL,
                        phone TEXT NOT NULL
                    ) WITHOUT ROWID;
                    """)
        }
    }
}
