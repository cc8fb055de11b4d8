import GondolaPostgres

/// The rentals domain's tables in PostgreSQL (cluster mode): the same as in SQLite (accounts
/// on the core `app_user`), one open rental per car a unique index.
enum RentalsPostgresSchema {
    static func register(in migrator: inout PostgresMigrator) {
        migrator.register(
            "rentals-v1",
            [
                """
                CREATE TABLE account (
                    user_id TEXT PRIMARY KEY REFERENCES app_user(id),
                    email TEXT NOT NULL UNIQUE,
                    password_hash TEXT NOT NULL,
                    created_at_ms BIGINT NOT NULL,
                    activated_at_ms BIGINT
                )
                """,
                """
                CREATE TABLE account_key (
                    key_hash TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES account(user_id) ON DELETE CASCADE,
                    purpose TEXT NOT NULL CHECK (purpose IN ('activate', 'reset')),
                    expires_at_ms BIGINT NOT NULL,
                    used_at_ms BIGINT
                )
                """,
                "CREATE INDEX account_key_user ON account_key(user_id, purpose)",
                """
                CREATE TABLE mail_outbox (
                    id TEXT PRIMARY KEY,
                    recipient TEXT NOT NULL,
                    sender TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    text_body TEXT NOT NULL,
                    html_body TEXT NOT NULL,
                    created_at_ms BIGINT NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    next_attempt_at_ms BIGINT NOT NULL,
                    last_error TEXT,
                    sent_at_ms BIGINT,
                    given_up_at_ms BIGINT
                )
                """,
                "CREATE INDEX mail_outbox_due ON mail_outbox(next_attempt_at_ms) WHERE sent_at_ms IS NULL AND given_up_at_ms IS NULL",
                "CREATE INDEX mail_outbox_recipient ON mail_outbox(recipient, created_at_ms)",
                """
                CREATE TABLE car (
                    id TEXT PRIMARY KEY,
                    make TEXT NOT NULL,
                    model TEXT NOT NULL,
                    year INTEGER NOT NULL,
                    seats INTEGER NOT NULL,
                    price_per_day_cents BIGINT NOT NULL,
                    lat DOUBLE PRECISION NOT NULL,
                    lon DOUBLE PRECISION NOT NULL,
                    image_url TEXT,
                    updated_at_ms BIGINT NOT NULL
                )
                """,
                """
                CREATE TABLE rental (
                    id TEXT PRIMARY KEY,
                    car_id TEXT NOT NULL,
                    user_id TEXT NOT NULL,
                    state TEXT NOT NULL CHECK (state IN ('planned', 'active', 'finished', 'cancelled')),
                    starts_at_ms BIGINT NOT NULL,
                    started_at_ms BIGINT,
                    ended_at_ms BIGINT,
                    price_per_day_cents BIGINT NOT NULL,
                    days INTEGER,
                    amount_cents BIGINT,
                    end_lat DOUBLE PRECISION,
                    end_lon DOUBLE PRECISION,
                    created_at_ms BIGINT NOT NULL,
                    updated_at_ms BIGINT NOT NULL
                )
                """,
                "CREATE UNIQUE INDEX rental_open_car ON rental(car_id) WHERE state IN ('planned', 'active')",
                "CREATE INDEX rental_user ON rental(user_id, created_at_ms)",
            ])
        migrator.register("rentals-v2", ["ALTER TABLE rental ADD COLUMN reminded_at_ms BIGINT"])
    }
}
