import GRDB

/// The rentals domain's tables: accounts with their one-time keys, the mail outbox,
/// cars and rentals. One open (planned or active) rental per car is a unique index, so
/// two requests for the same car cannot both be stored, whatever their timing.
enum RentalsSchema {
    static func registerMigrations(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("rentals-v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE account (
                        user_id TEXT PRIMARY KEY NOT NULL REFERENCES user(id),
                        email TEXT NOT NULL UNIQUE,
                        password_hash TEXT NOT NULL,
                        created_at_ms INTEGER NOT NULL,
                        activated_at_ms INTEGER
                    ) WITHOUT ROWID;
                    CREATE TABLE account_key (
                        key_hash TEXT PRIMARY KEY NOT NULL,
                        user_id TEXT NOT NULL REFERENCES account(user_id) ON DELETE CASCADE,
                        purpose TEXT NOT NULL CHECK (purpose IN ('activate', 'reset')),
                        expires_at_ms INTEGER NOT NULL,
                        used_at_ms INTEGER
                    ) WITHOUT ROWID;
                    CREATE INDEX account_key_user ON account_key(user_id, purpose);
                    CREATE TABLE mail_outbox (
                        id TEXT PRIMARY KEY NOT NULL,
                        recipient TEXT NOT NULL,
                        sender TEXT NOT NULL,
                        subject TEXT NOT NULL,
                        text_body TEXT NOT NULL,
                        html_body TEXT NOT NULL,
                        created_at_ms INTEGER NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        next_attempt_at_ms INTEGER NOT NULL,
                        last_error TEXT,
                        sent_at_ms INTEGER,
                        given_up_at_ms INTEGER
                    ) WITHOUT ROWID;
                    CREATE INDEX mail_outbox_due ON mail_outbox(next_attempt_at_ms) WHERE sent_at_ms IS NULL AND given_up_at_ms IS NULL;
                    CREATE INDEX mail_outbox_recipient ON mail_outbox(recipient, created_at_ms);
                    CREATE TABLE car (
                        id TEXT PRIMARY KEY NOT NULL,
                        make TEXT NOT NULL,
                        model TEXT NOT NULL,
                        year INTEGER NOT NULL,
                        seats INTEGER NOT NULL,
                        price_per_day_cents INTEGER NOT NULL,
                        lat REAL NOT NULL,
                        lon REAL NOT NULL,
                        image_url TEXT,
                        updated_at_ms INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    CREATE TABLE rental (
                        id TEXT PRIMARY KEY NOT NULL,
                        car_id TEXT NOT NULL,
                        user_id TEXT NOT NULL,
                        state TEXT NOT NULL CHECK (state IN ('planned', 'active', 'finished', 'cancelled')),
                        starts_at_ms INTEGER NOT NULL,
                        started_at_ms INTEGER,
                        ended_at_ms INTEGER,
                        price_per_day_cents INTEGER NOT NULL,
                        days INTEGER,
                        amount_cents INTEGER,
                        end_lat REAL,
                        end_lon REAL,
                        created_at_ms INTEGER NOT NULL,
                        updated_at_ms INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    CREATE UNIQUE INDEX rental_open_car ON rental(car_id) WHERE state IN ('planned', 'active');
                    CREATE INDEX rental_user ON rental(user_id, created_at_ms);
                    """)
        }
        // When the user was reminded that a planned rental starts soon (once per rental).
        migrator.registerMigration("rentals-v2") { db in
            try db.execute(sql: "ALTER TABLE rental ADD COLUMN reminded_at_ms INTEGER")
        }
    }
}
