import GondolaPostgres
import GRDB

/// The push module's tables: the devices users registered and their notification settings.
/// The same tables in SQLite and (cluster mode) PostgreSQL.
enum PushSchema {
    static func registerMigrations(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("push-v1") { db in
            try db.execute(sql: """
                CREATE TABLE push_device (
                    token TEXT PRIMARY KEY NOT NULL,
                    platform TEXT NOT NULL CHECK (platform IN ('apns', 'fcm')),
                    user_id TEXT NOT NULL,
                    app TEXT,
                    locale TEXT,
                    registered_at_ms INTEGER NOT NULL
                ) WITHOUT ROWID;
                CREATE INDEX push_device_user ON push_device(user_id, registered_at_ms);
                CREATE TABLE push_settings (
                    user_id TEXT PRIMARY KEY NOT NULL,
                    chats INTEGER NOT NULL,
                    broadcasts INTEGER NOT NULL,
                    invites INTEGER NOT NULL,
                    quiet_start_min INTEGER,
                    quiet_end_min INTEGER,
                    quiet_utc_offset_min INTEGER
                ) WITHOUT ROWID;
                """)
        }
    }

    static func register(in migrator: inout PostgresMigrator) {
        migrator.register("push-v1", [
            """
            CREATE TABLE push_device (
                token TEXT PRIMARY KEY,
                platform TEXT NOT NULL CHECK (platform IN ('apns', 'fcm')),
                user_id TEXT NOT NULL,
                app TEXT,
                locale TEXT,
                registered_at_ms BIGINT NOT NULL
            )
            """,
            "CREATE INDEX push_device_user ON push_device(user_id, registered_at_ms)",
            """
            CREATE TABLE push_settings (
                user_id TEXT PRIMARY KEY,
                chats BOOLEAN NOT NULL,
                broadcasts BOOLEAN NOT NULL,
                invites BOOLEAN NOT NULL,
                quiet_start_min INTEGER,
                quiet_end_min INTEGER,
                quiet_utc_offset_min INTEGER
            )
            """,
        ])
    }
}
