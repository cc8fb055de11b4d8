import GondolaPostgres

/// The cluster's own tables: the nodes and their heartbeats, presence entries, the bus
/// payloads too large for a notification, and the answers of idempotency keys.
enum ClusterSchema {
    static func register(in migrator: inout PostgresMigrator) {
        migrator.register(
            "v1-cluster",
            [
                """
                CREATE UNLOGGED TABLE cluster_node (
                    uid TEXT PRIMARY KEY,
                    name TEXT NOT NULL,
                    version TEXT NOT NULL,
                    started_at_ms BIGINT NOT NULL,
                    seen_at_ms BIGINT NOT NULL,
                    clients INT NOT NULL DEFAULT 0,
                    users INT NOT NULL DEFAULT 0,
                    channels INT NOT NULL DEFAULT 0,
                    subscriptions INT NOT NULL DEFAULT 0
                )
                """,
                """
                CREATE UNLOGGED TABLE cluster_presence (
                    channel TEXT NOT NULL,
                    client TEXT NOT NULL,
                    node TEXT NOT NULL,
                    info BYTEA NOT NULL,
                    PRIMARY KEY (channel, client)
                )
                """,
                "CREATE INDEX cluster_presence_node ON cluster_presence (node)",
                """
                CREATE UNLOGGED TABLE cluster_bus_payload (
                    id BIGSERIAL PRIMARY KEY,
                    body BYTEA NOT NULL,
                    created_at_ms BIGINT NOT NULL
                )
                """,
            ])
        // The positions publications with an idempotency key answered, for `BusWriter`'s
        // checks: `offset` NULL for a publication without a stream (or one in flight).
        migrator.register(
            "v2-publish-results",
            [
                """
                CREATE TABLE cluster_publish_result (
                    channel TEXT NOT NULL,
                    key TEXT NOT NULL,
                    "offset" BIGINT,
                    epoch TEXT,
                    expires_ms BIGINT NOT NULL,
                    PRIMARY KEY (channel, key)
                )
                """
            ])
    }
}
