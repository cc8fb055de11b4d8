import GondolaPostgres

/// The crash domain's tables in PostgreSQL (cluster mode): the SQLite tables, and
/// `crash_file` holding the photo and report bytes that a node keeps in its data folder
/// in SQLite mode, so that every node serves every file. Photos and reports reference
/// their bytes by a foreign key: bytes cannot go while a row still needs them.
enum CrashPostgresSchema {
    static func register(in migrator: inout PostgresMigrator) {
        migrator.register(
            "crash-v1",
            [
                """
                CREATE TABLE crash_file (
                    hash TEXT PRIMARY KEY,
                    bytes BYTEA NOT NULL,
                    stored_at_ms BIGINT NOT NULL
                )
                """,
                """
                CREATE TABLE crash (
                    id TEXT PRIMARY KEY,
                    owner TEXT NOT NULL,
                    source TEXT NOT NULL CHECK (source IN ('detected', 'manual')),
                    occurred_at_ms BIGINT NOT NULL,
                    lat DOUBLE PRECISION,
                    lon DOUBLE PRECISION,
                    injured TEXT NOT NULL DEFAULT '',
                    note TEXT NOT NULL DEFAULT '',
                    created_at_ms BIGINT NOT NULL,
                    updated_at_ms BIGINT NOT NULL,
                    reported_at_ms BIGINT,
                    report_hash TEXT REFERENCES crash_file(hash),
                    share_id TEXT,
                    share_expires_at_ms BIGINT
                )
                """,
                "CREATE INDEX crash_owner ON crash(owner)",
                "CREATE INDEX crash_report ON crash(report_hash)",
                """
                CREATE TABLE crash_photo (
                    id TEXT PRIMARY KEY,
                    crash_id TEXT NOT NULL REFERENCES crash(id) ON DELETE CASCADE,
                    section TEXT NOT NULL,
                    file_hash TEXT NOT NULL REFERENCES crash_file(hash),
                    file_name TEXT NOT NULL,
                    content_type TEXT NOT NULL,
                    size INTEGER NOT NULL,
                    width INTEGER NOT NULL,
                    height INTEGER NOT NULL,
                    created_at_ms BIGINT NOT NULL
                )
                """,
                "CREATE INDEX crash_photo_crash ON crash_photo(crash_id, section)",
                "CREATE INDEX crash_photo_file ON crash_photo(file_hash)",
                "CREATE TABLE crash_contact (user_id TEXT PRIMARY KEY, phone TEXT NOT NULL)",
            ])
    }
}
