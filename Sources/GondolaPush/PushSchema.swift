import GRDB
import GondolaPostgres

/// The push module's tables: the devices users registered, their notification settings, and
/// the outbox of notifications waiting for (or done with) APNs and FCM. The same tables in
/// SQLite and (cluster mode) PostgreSQL.
enum PushSchema {
    static func registerMigrations(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("push-v1") { db in
            try db.execute(
                sql: """
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
        migrator.registerMigration("push-v2") { db in
            try db.execute(
                sql: """
                    CREATE TABLE push_outbox (
                        id TEXT PRIMARY KEY NOT NULL,
                        token TEXT NOT NULL,
                        platform TEXT NOT NULL,
                        user_id TEXT NOT NULL,
                        category TEXT NOT NULL,
                        text_key TEXT NOT NULL,
                        text_values TEXT NOT NULL,
                        locale TEXT,
                        link TEXT NOT NULL,
                        collapse_key TEXT,
                        count INTEGER NOT NULL,
                        silent INTEGER NOT NULL,
                        event_at_ms INTEGER NOT NULL,
                        expires_at_ms INTEGER NOT NULL,
                        next_attempt_at_ms INTEGER NOT NULL,
                        claimed_by TEXT,
                        claim_until_ms INTEGER,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        sent_at_ms INTEGER,
                        given_up_at_ms INTEGER,
                        last_error TEXT
                    ) WITHOUT ROWID;
                    CREATE INDEX push_outbox_due ON push_outbox(next_attempt_at_ms) WHERE sent_at_ms IS NULL AND given_up_at_ms IS NULL;
                    CREATE INDEX push_outbox_thread ON push_outbox(token, collapse_key) WHERE sent_at_ms IS NULL AND given_up_at_ms IS NULL;
                    CREATE INDEX push_outbox_sent ON push_outbox(sent_at_ms) WHERE sent_at_ms IS NOT NULL;
                    CREATE INDEX push_outbox_given_up ON push_outbox(given_up_at_ms) WHERE given_up_at_ms IS NOT NULL;
                    """)
        }
    }

    static func register(in migrator: inout PostgresMigrator) {
        migrator.register(
            "push-v1",
            [
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
        migrator.register(
            "push-v2",
            [
                """
                CREATE TABLE push_outbox (
                    id TEXT PRIMARY KEY,
                    token TEXT NOT NULL,
                    platform TEXT NOT NULL,
                    user_id TEXT NOT NULL,
                    category TEXT NOT NULL,
                    text_key TEXT NOT NULL,
                    text_values TEXT NOT NULL,
                    locale TEXT,
                    link TEXT NOT NULL,
                    collapse_key TEXT,
                    count INTEGER NOT NULL,
                    silent BOOLEAN NOT NULL,
                    event_at_ms BIGINT NOT NULL,
                    expires_at_ms BIGINT NOT NULL,
                    next_attempt_at_ms BIGINT NOT NULL,
                    claimed_by TEXT,
                    claim_until_ms BIGINT,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    sent_at_ms BIGINT,
                    given_up_at_ms BIGINT,
                    last_error TEXT
                )
                """,
                "CREATE INDEX push_outbox_due ON push_outbox(next_attempt_at_ms) WHERE sent_at_ms IS NULL AND given_up_at_ms IS NULL",
                "CREATE INDEX push_outbox_thread ON push_outbox(token, collapse_key) WHERE sent_at_ms IS NULL AND given_up_at_ms IS NULL",
                "CREATE INDEX push_outbox_sent ON push_outbox(sent_at_ms) WHERE sent_at_ms IS NOT NULL",
                "CREATE INDEX push_outbox_given_up ON push_outbox(given_up_at_ms) WHERE given_up_at_ms IS NOT NULL",
            ])
    }
}
