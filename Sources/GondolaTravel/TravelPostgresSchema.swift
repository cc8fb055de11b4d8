import GondolaPostgres

/// The travel domain's tables in PostgreSQL (cluster mode): the same tables as in
/// SQLite, with the profile columns on the core `app_user`. A chat keeps its top
/// offset in its row, which each batch of messages locks; a unique index on the
/// sender's client id recognises retries that reach another node.
enum TravelPostgresSchema {
    static func register(in migrator: inout PostgresMigrator) {
        migrator.register(
            "travel-v1",
            [
                """
                ALTER TABLE app_user ADD COLUMN bio TEXT NOT NULL DEFAULT '', ADD COLUMN links TEXT NOT NULL DEFAULT '{}',
                    ADD COLUMN visibility TEXT NOT NULL DEFAULT 'everyone', ADD COLUMN staff BOOLEAN NOT NULL DEFAULT false
                """,
                """
                CREATE TABLE trip (
                    id TEXT PRIMARY KEY, name TEXT NOT NULL, resort TEXT,
                    starts_at_ms BIGINT NOT NULL, ends_at_ms BIGINT NOT NULL, created_at_ms BIGINT NOT NULL
                )
                """,
                """
                CREATE TABLE trip_member (
                    trip_id TEXT NOT NULL REFERENCES trip(id) ON DELETE CASCADE,
                    user_id TEXT NOT NULL REFERENCES app_user(id) ON DELETE CASCADE,
                    role TEXT NOT NULL CHECK (role IN ('host', 'traveller')),
                    PRIMARY KEY (trip_id, user_id)
                )
                """,
                "CREATE INDEX trip_member_user ON trip_member(user_id)",
                """
                CREATE TABLE friend_request (
                    from_user TEXT NOT NULL REFERENCES app_user(id) ON DELETE CASCADE,
                    to_user TEXT NOT NULL REFERENCES app_user(id) ON DELETE CASCADE,
                    created_at_ms BIGINT NOT NULL,
                    PRIMARY KEY (from_user, to_user)
                )
                """,
                """
                CREATE TABLE chat (
                    id TEXT PRIMARY KEY,
                    kind TEXT NOT NULL CHECK (kind IN ('direct', 'group', 'trip')),
                    title TEXT,
                    trip_id TEXT REFERENCES trip(id) ON DELETE CASCADE,
                    pair_key TEXT UNIQUE,
                    epoch TEXT NOT NULL,
                    top_offset BIGINT NOT NULL DEFAULT 0,
                    created_by TEXT,
                    created_at_ms BIGINT NOT NULL
                )
                """,
                """
                CREATE TABLE chat_member (
                    chat_id TEXT NOT NULL REFERENCES chat(id) ON DELETE CASCADE,
                    user_id TEXT NOT NULL,
                    read_offset BIGINT NOT NULL DEFAULT 0,
                    PRIMARY KEY (chat_id, user_id)
                )
                """,
                "CREATE INDEX chat_member_user ON chat_member(user_id)",
                """
                CREATE TABLE chat_message (
                    chat_id TEXT NOT NULL REFERENCES chat(id) ON DELETE CASCADE,
                    "offset" BIGINT NOT NULL,
                    id TEXT NOT NULL,
                    from_user TEXT NOT NULL,
                    client_message_id TEXT NOT NULL,
                    ts BIGINT NOT NULL,
                    data BYTEA NOT NULL,
                    PRIMARY KEY (chat_id, "offset"),
                    UNIQUE (chat_id, from_user, client_message_id)
                )
                """,
                "CREATE INDEX chat_message_ts ON chat_message(ts)",
                """
                CREATE TABLE event (
                    id TEXT PRIMARY KEY, creator TEXT NOT NULL, title TEXT NOT NULL, description TEXT NOT NULL DEFAULT '',
                    starts_at_ms BIGINT NOT NULL, ends_at_ms BIGINT, place_name TEXT, place_lat DOUBLE PRECISION, place_lon DOUBLE PRECISION,
                    trip_id TEXT, audience TEXT NOT NULL, created_at_ms BIGINT NOT NULL
                )
                """,
                "CREATE INDEX event_creator ON event(creator)",
                """
                CREATE TABLE event_invitee (
                    event_id TEXT NOT NULL REFERENCES event(id) ON DELETE CASCADE,
                    user_id TEXT NOT NULL,
                    response TEXT CHECK (response IN ('going', 'maybe', 'declined')),
                    responded_at_ms BIGINT,
                    PRIMARY KEY (event_id, user_id)
                )
                """,
                "CREATE INDEX event_invitee_user ON event_invitee(user_id)",
            ])
        migrator.register(
            "travel-v2-fences",
            [
                """
                CREATE TABLE trip_fence (
                    id TEXT PRIMARY KEY, trip_id TEXT NOT NULL, definition TEXT NOT NULL, created_by TEXT NOT NULL, created_at_ms BIGINT NOT NULL
                )
                """,
                "CREATE INDEX trip_fence_trip ON trip_fence(trip_id)",
                "CREATE TABLE trip_fence_webhook (trip_id TEXT PRIMARY KEY, url TEXT NOT NULL, secret TEXT NOT NULL)",
                """
                CREATE TABLE fence_webhook_outbox (
                    id TEXT PRIMARY KEY, trip_id TEXT NOT NULL, body BYTEA NOT NULL, created_at_ms BIGINT NOT NULL,
                    next_attempt_at_ms BIGINT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT,
                    delivered_at_ms BIGINT, given_up_at_ms BIGINT
                )
                """,
                "CREATE INDEX fence_webhook_outbox_due ON fence_webhook_outbox(next_attempt_at_ms) WHERE delivered_at_ms IS NULL AND given_up_at_ms IS NULL",
            ])
    }
}
