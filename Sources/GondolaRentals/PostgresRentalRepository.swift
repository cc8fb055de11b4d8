import GondolaPostgres
import PostgresNIO

/// Cars and rentals in PostgreSQL (cluster mode), with the same unique index on one open
/// rental per car as in SQLite. Cars are written as arrays in one statement (an absent
/// image URL travels as the empty string, which no car has: the input requires a URL).
struct PostgresRentalRepository: RentalRepository {
    let pool: PostgresPool

    private static let carColumns = "id, make, model, year, seats, price_per_day_cents, lat, lon, image_url, updated_at_ms"
    private static let rentalColumns = """
        id, car_id, user_id, state, starts_at_ms, started_at_ms, ended_at_ms, price_per_day_cents, days, amount_cents, end_lat, end_lon, \
        created_at_ms, updated_at_ms
        """

    func allCars() async throws -> [Car] {
        try await pool.query("SELECT \(unescaped: Self.carColumns) FROM car").map(Self.car)
    }

    func upsert(_ cars: [Car]) async throws {
        guard !cars.isEmpty else { return }
        try await pool.query(
            """
            INSERT INTO car (\(unescaped: Self.carColumns))
            SELECT id, make, model, year, seats, price, lat, lon, NULLIF(image_url, ''), updated_at FROM unnest(\(cars.map(\.id))::text[], \(cars.map(\.make))::text[], \(cars.map(\.model))::text[],
                                 \(cars.map { Int32($0.year) })::int[], \(cars.map { Int32($0.seats) })::int[],
                                 \(cars.map(\.pricePerDayCents))::bigint[], \(cars.map(\.lat))::float8[], \(cars.map(\.lon))::float8[],
                                 \(cars.map { $0.imageURL ?? "" })::text[], \(cars.map(\.updatedAt))::bigint[])
                AS given(id, make, model, year, seats, price, lat, lon, image_url, updated_at)
            ON CONFLICT (id) DO UPDATE SET make = EXCLUDED.make, model = EXCLUDED.model, year = EXCLUDED.year, seats = EXCLUDED.seats,
              price_per_day_cents = EXCLUDED.price_per_day_cents, lat = EXCLUDED.lat, lon = EXCLUDED.lon, image_url = EXCLUDED.image_url,
              updated_at_ms = EXCLUDED.updated_at_ms
            """)
    }

    func removeCar(_ id: String) async throws {
        try await pool.query("DELETE FROM car WHERE id = \(id)")
    }

    func openRentals() async throws -> [Rental] {
        try await pool.query("SELECT \(unescaped: Self.rentalColumns) FROM rental WHERE state IN ('planned', 'active')").map(Self.rental)
    }

    func planned(startingBefore time: Int64, limit: Int) async throws -> [Rental] {
        try await pool.query(
            """
            SELECT \(unescaped: Self.rentalColumns) FROM rental WHERE state = 'planned' AND starts_at_ms < \(time)
            ORDER BY starts_at_ms LIMIT \(Int64(limit))
            """
        ).map(Self.rental)
    }

    func claimReminders(startingBefore time: Int64, now: Int64, limit: Int) async throws -> [Rental] {
        try await pool.query(
            """
            UPDATE rental SET reminded_at_ms = \(now) WHERE id IN (
                SELECT id FROM rental WHERE state = 'planned' AND reminded_at_ms IS NULL AND starts_at_ms < \(time)
                ORDER BY starts_at_ms LIMIT \(Int64(limit)) FOR UPDATE SKIP LOCKED)
            RETURNING \(unescaped: Self.rentalColumns)
            """
        ).map(Self.rental)
    }

    func rental(_ id: String) async throws -> Rental? {
        try await pool.query("SELECT \(unescaped: Self.rentalColumns) FROM rental WHERE id = \(id)").first.map(Self.rental)
    }

    func rentals(of user: String, pastLimit: Int) async throws -> [Rental] {
        try await pool.query(
            """
            SELECT \(unescaped: Self.rentalColumns) FROM rental WHERE user_id = \(user) AND state IN ('planned', 'active')
            UNION ALL
            (SELECT \(unescaped: Self.rentalColumns) FROM rental WHERE user_id = \(user) AND state IN ('finished', 'cancelled')
             ORDER BY updated_at_ms DESC LIMIT \(Int64(pastLimit)))
            """
        ).map(Self.rental).sorted { $0.createdAt > $1.createdAt }
    }

    func insertOpen(_ rental: Rental) async throws -> Bool {
        let rows = try await pool.query(
            """
            INSERT INTO rental (id, car_id, user_id, state, starts_at_ms, started_at_ms, price_per_day_cents, created_at_ms, updated_at_ms)
            VALUES (\(rental.id), \(rental.car), \(rental.user), \(rental.state.rawValue), \(rental.startsAt), \(rental.startedAt),
                    \(rental.pricePerDayCents), \(rental.createdAt), \(rental.updatedAt))
            ON CONFLICT (car_id) WHERE state IN ('planned', 'active') DO NOTHING
            RETURNING id
            """)
        return rows.first != nil
    }

    func update(_ rental: Rental, from state: RentalState, carPosition: (lat: Double, lon: Double, at: Int64)?) async throws -> Bool {
        try await pool.transaction { connection in
            let updated = try await pool.run(
                """
                UPDATE rental SET state = \(rental.state.rawValue), started_at_ms = \(rental.startedAt), ended_at_ms = \(rental.endedAt),
                  days = \(rental.days.map(Int32.init)), amount_cents = \(rental.amountCents), end_lat = \(rental.endLat), end_lon = \(rental.endLon),
                  updated_at_ms = \(rental.updatedAt)
                WHERE id = \(rental.id) AND state = \(state.rawValue) RETURNING id
                """, on: connection)
            guard updated.first != nil else { return false }
            if let carPosition {
                try await pool.run(
                    "UPDATE car SET lat = \(carPosition.lat), lon = \(carPosition.lon), updated_at_ms = \(carPosition.at) WHERE id = \(rental.car)",
                    on: connection)
            }
            return true
        }
    }

    func fleetState(of ids: [String]) async throws -> (cars: [Car], open: [Rental]) {
        guard !ids.isEmpty else { return ([], []) }
        return try await pool.withConnection { connection in
            (
                try await pool.run("SELECT \(unescaped: Self.carColumns) FROM car WHERE id = ANY(\(ids)::text[])", on: connection).map(Self.car),
                try await pool.run(
                    """
                    SELECT \(unescaped: Self.rentalColumns) FROM rental WHERE state IN ('planned', 'active') AND car_id = ANY(\(ids)::text[])
                    """, on: connection
                ).map(Self.rental)
            )
        }
    }

    private static func car(_ row: PostgresRow) throws -> Car {
        let (id, make, model, year, seats, price, lat, lon, imageURL, updatedAt) =
            try row.decode((String, String, String, Int32, Int32, Int64, Double, Double, String?, Int64).self)
        return Car(
            id: id, make: make, model: model, year: Int(year), seats: Int(seats), pricePerDayCents: price, lat: lat, lon: lon,
            imageURL: imageURL, updatedAt: updatedAt)
    }

    private static func rental(_ row: PostgresRow) throws -> Rental {
        let columns = row.makeRandomAccess()
        return Rental(
            id: try columns[0].decode(String.self), car: try columns[1].decode(String.self), user: try columns[2].decode(String.self),
            state: RentalState(rawValue: try columns[3].decode(String.self)) ?? .cancelled, startsAt: try columns[4].decode(Int64.self),
            startedAt: try columns[5].decode(Int64?.self), endedAt: try columns[6].decode(Int64?.self),
            pricePerDayCents: try columns[7].decode(Int64.self), days: try columns[8].decode(Int32?.self).map(Int.init),
            amountCents: try columns[9].decode(Int64?.self), endLat: try columns[10].decode(Double?.self),
            endLon: try columns[11].decode(Double?.self),
            createdAt: try columns[12].decode(Int64.self), updatedAt: try columns[13].decode(Int64.self))
    }
}
