import GondolaHub

/// The core tables in PostgreSQL: channel streams (durable and volatile), users and the outbound calls' queue.
/// Domains and the cluster register theirs after these.
public enum PostgresSchema {
    /// A migrator holding the core steps.
    public static var migrator: PostgresMigrator {
        var migrator = PostgresMigrator()
        migrator.register(
            "v1-streams-users",
            [
                streamTables(prefix: "", logged: true),
                publicationTable(prefix: "", logged: true),
                streamTables(prefix: "volatile_", logged: false),
                publicationTable(prefix: "volatile_", logged: false),
                """
                CREATE TABLE app_user (
                    id TEXT PRIMARY KEY,
                    name TEXT NOT NULL,
                    telegram_id BIGINT UNIQUE,
                    telegram_username TEXT,
                    photo_url TEXT,
                    created_at_ms BIGINT NOT NULL
                )
                """,
            ])
        // When a stream's offset and epoch are dropped: `history_meta_ttl` after its last
        // publication (streams written before get the default 30 days from their last one).
        migrator.register(
            "v2-stream-meta-expiry",
            ["", "volatile_"].flatMap { prefix in
                [
                    "ALTER TABLE \(prefix)stream ADD COLUMN meta_expires_ms BIGINT",
                    "UPDATE \(prefix)stream SET meta_expires_ms = last_append_ms + \(Int64(NamespaceOptions.defaultHistoryMetaTTL.components.seconds) * 1000)",
                ]
            })
        // Publication tags: a JSON object of strings, NULL without tags.
        migrator.register("v3-publication-tags", ["", "volatile_"].map { "ALTER TABLE \($0)publication ADD COLUMN tags BYTEA" })
        // A stream's latest version (`version` of publish), NULL before its first versioned publication.
        migrator.register(
            "v4-stream-version", ["", "volatile_"].map { "ALTER TABLE \($0)stream ADD COLUMN version BIGINT, ADD COLUMN version_epoch TEXT" })
        // The durable queue of calls to outside services (the domains' `OutboundCalls`).
        migrator.register(
            "v5-outbound-calls",
            [
                """
                CREATE TABLE outbound_call (
                    id TEXT PRIMARY KEY,
                    service TEXT NOT NULL,
                    label TEXT NOT NULL,
                    payload TEXT NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    created_at_ms BIGINT NOT NULL,
                    next_attempt_at_ms BIGINT NOT NULL
                )
                """,
                "CREATE INDEX outbound_call_due ON outbound_call (service, next_attempt_at_ms)",
            ])
        return migrator
    }

    /// Volatile streams (namespaces without `history_durable`) are UNLOGGED: cheaper to
    /// write, emptied by PostgreSQL after a crash — the shared counterpart of memory.
    private static func streamTables(prefix: String, logged: Bool) -> String {
        """
        CREATE \(logged ? "" : "UNLOGGED ")TABLE \(prefix)stream (
            channel TEXT PRIMARY KEY,
            epoch TEXT NOT NULL,
            top_offset BIGINT NOT NULL,
            last_append_ms BIGINT NOT NULL
        )
        """
    }

    private static func publicationTable(prefix: String, logged: Bool) -> String {
        """
        CREATE \(logged ? "" : "UNLOGGED ")TABLE \(prefix)publication (
            channel TEXT NOT NULL,
            "offset" BIGINT NOT NULL,
            data BYTEA NOT NULL,
            info BYTEA,
            created_at_ms BIGINT NOT NULL,
            PRIMARY KEY (channel, "offset")
        )
        """
    }
}
