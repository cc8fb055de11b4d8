import GondolaPostgres

/// The rentals domain's car and rental tables in PostgreSQL (cluster mode): the same as in
/// SQLite, one open rental per car a unique index.
enum RentalsPostgresSchema {
    static func register(in migrator: inout PostgresMigrator) {
        migrator.register("rentals-v1", [
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
    }
}
