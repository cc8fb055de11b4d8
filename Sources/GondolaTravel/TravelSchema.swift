import GRDB

/// The travel domain's tables: trips and their members, friend requests, the user's
/// profile fields, chats and events. The identifiers are those of the files written
/// before the domains had schemas of their own, so such files open unchanged.
enum TravelSchema {
    static func registerMigrations(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v2-travel") { db in
            try db.execute(
                sql: """
                    ALTER TABLE user ADD COLUMN bio TEXT NOT NULL DEFAULT '';
                    ALTER TABLE user ADD COLUMN links TEXT NOT NULL DEFAULT '{}';
                    ALTER TABLE user ADD COLUMN visibility TEXT NOT NULL DEFAULT 'everyone';
                    ALTER TABLE user ADD COLUMN staff INTEGER NOT NULL DEFAULT 0;
                    CREATE TABLE trip (
                        id TEXT PRIMARY KEY NOT NULL,
                        name TEXT NOT NULL,
                        resort TEXT,
                        starts_at_ms INTEGER NOT NULL,
                        ends_at_ms INTEGER NOT NULL,
                        created_at_ms INTEGER NOT NULL
                    );
                    CREATE TABLE trip_member (
                        trip_id TEXT NOT NULL REFERENCES trip(id) ON DELETE CASCADE,
                        user_id TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                        role TEXT NOT NULL CHECK (role IN ('host', 'traveller')),
                        PRIMARY KEY (trip_id, user_id)
                    ) WITHOUT ROWID;
                    CREATE INDEX trip_member_user ON trip_member(user_id);
                    CREATE TABLE friend_request (
                        from_user TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                        to_user TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                        created_at_ms INTEGER NOT NULL,
                        PRIMARY KEY (from_user, to_user)
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("v3-chat") { db in
            try db.execute(
                sql: """
                    CREATE TABLE chat (
                        id TEXT PRIMARY KEY NOT NULL,
                        kind TEXT NOT NULL CHECK (kind IN ('direct', 'group', 'trip')),
                        title TEXT,
                        trip_id TEXT REFERENCES trip(id) ON DELETE CASCADE,
                        pair_key TEXT UNIQUE,
                        epoch TEXT NOT NULL,
                        top_offset INTEGER NOT NULL DEFAULT 0,
                        created_by TEXT,
                        created_at_ms INTEGER NOT NULL
                    );
                    CREATE TABLE chat_member (
                        chat_id TEXT NOT NULL REFERENCES chat(id) ON DELETE CASCADE,
                        user_id TEXT NOT NULL,
                        read_offset INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (chat_id, user_id)
                    ) WITHOUT ROWID;
                    CREATE INDEX chat_member_user ON chat_member(user_id);
                    CREATE TABLE chat_message (
                        chat_id TEXT NOT NULL REFERENCES chat(id) ON DELETE CASCADE,
                        "offset" INTEGER NOT NULL,
                        id TEXT NOT NULL,
                        from_user TEXT NOT NULL,
                        client_message_id TEXT NOT NULL,
                        ts INTEGER NOT NULL,
                        data BLOB NOT NULL,
                        PRIMARY KEY (chat_id, "offset")
                    ) WITHOUT ROWID;
                    CREATE UNIQUE INDEX chat_message_client ON chat_message(chat_id, from_user, client_message_id);
                    """)
        }
        migrator.registerMigration("v4-events") { db in
            try db.execute(
                sql: """
                    CREATE TABLE event (
                        id TEXT PRIMARY KEY NOT NULL,
                        creator TEXT NOT NULL,
                        title TEXT NOT NULL,
                        description TEXT NOT NULL DEFAULT '',
                        starts_at_ms INTEGER NOT NULL,
                        ends_at_ms INTEGER,
                        place_name TEXT,
                        place_lat REAL,
                        place_lon REAL,
                        trip_id TEXT,
                        audience TEXT NOT NULL,
                        created_at_ms INTEGER NOT NULL
                    );
                    CREATE INDEX event_creator ON event(creator);
                    CREATE TABLE event_invitee (
                        event_id TEXT NOT NULL REFERENCES event(id) ON DELETE CASCADE,
                        user_id TEXT NOT NULL,
                        response TEXT CHECK (response IN ('going', 'maybe', 'declined')),
                        responded_at_ms INTEGER,
                        PRIMARY KEY (event_id, user_id)
                    ) WITHOUT ROWID;
                    CREATE INDEX event_invitee_user ON event_invitee(user_id);
                    """)
        }
        migrator.registerMigration("v5-chat-top-from-messages") { db in
            // A chat's top offset is its newest message's offset: the counter every chat batch rewrote goes.
            try db.execute(sql: "ALTER TABLE chat DROP COLUMN top_offset")
        }
        migrator.registerMigration("v6-chat-recent-sends") { db in
            // Retries are recognised in memory (the chat service's recent sends, reloaded from each
            // chat's newest messages at start): the index put a random B-tree leaf in every commit.
            try db.execute(sql: "DROP INDEX chat_message_client")
        }
        migrator.registerMigration("v7-fences") { db in
            try db.execute(
                sql: """
                    CREATE TABLE trip_fence (
                        id TEXT PRIMARY KEY NOT NULL,
                        trip_id TEXT NOT NULL,
                        definition TEXT NOT NULL,
                        created_by TEXT NOT NULL,
                        created_at_ms INTEGER NOT NULL
                    );
                    CREATE INDEX trip_fence_trip ON trip_fence(trip_id);
                    CREATE TABLE trip_fence_webhook (
                        trip_id TEXT PRIMARY KEY NOT NULL,
                        url TEXT NOT NULL,
                        secret TEXT NOT NULL
                    );
                    CREATE TABLE fence_webhook_outbox (
                        id TEXT PRIMARY KEY NOT NULL,
                        trip_id TEXT NOT NULL,
                        body BLOB NOT NULL,
                        created_at_ms INTEGER NOT NULL,
                        next_attempt_at_ms INTEGER NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        last_error TEXT,
                        delivered_at_ms INTEGER,
                        given_up_at_ms INTEGER
                    );
                    CREATE INDEX fence_webhook_outbox_due ON fence_webhook_outbox(next_attempt_at_ms)
                        WHERE delivered_at_ms IS NULL AND given_up_at_ms IS NULL;
                    """)
        }
    }
}
