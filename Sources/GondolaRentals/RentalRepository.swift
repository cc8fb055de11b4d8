import GRDB
import GondolaStore

/// Where cars and rentals live. One open (planned or active) rental per car is the
/// storage's own rule (a unique index), so two requests for one car cannot both be
/// stored, whichever process or node makes them.
protocol RentalRepository: Sendable {
    func allCars() async throws -> [Car]
    /// Writes cars in one transaction.
    func upsert(_ cars: [Car]) async throws
    func removeCar(_ id: String) async throws
    /// Every planned or active rental.
    func openRentals() async throws -> [Rental]
    /// Planned rentals whose start is before `time`, oldest first.
    func planned(startingBefore time: Int64, limit: Int) async throws -> [Rental]
    /// Planned rentals starting before `time` whose users were not reminded yet, marked as
    /// reminded at `now` in the same transaction (each is answered once, whichever node asks).
    func claimReminders(startingBefore time: Int64, now: Int64, limit: Int) async throws -> [Rental]
    func rental(_ id: String) async throws -> Rental?
    /// The user's open rentals and the last `pastLimit` closed ones, newest first.
    func rentals(of user: String, pastLimit: Int) async throws -> [Rental]
    /// Stores a new open rental; false when the car already has one.
    func insertOpen(_ rental: Rental) async throws -> Bool
    /// Writes a rental's new state if it is still in state `from` (another node may have
    /// changed it meanwhile); with `carPosition`, moves its car in the same transaction.
    /// Answers whether it was written.
    func update(_ rental: Rental, from state: RentalState, carPosition: (lat: Double, lon: Double, at: Int64)?) async throws -> Bool
    /// The stored cars among `ids`, and their open rentals (what another node changed).
    func fleetState(of ids: [String]) async throws -> (cars: [Car], open: [Rental])
}

extension RentalRepository {
    func update(_ rental: Rental, from state: RentalState) async throws -> Bool { try await update(rental, from: state, carPosition: nil) }
}

/// Cars and rentals in SQLite.
struct SQLiteRentalRepository: RentalRepository {
    let database: GondolaDatabase

    // MARK: Cars

    func allCars() throws -> [Car] {
        try database.pool.read { db in try Row.fetchAll(db, sql: "SELECT * FROM car").map(Self.car) }
    }

    /// Writes cars in one transaction.
    func upsert(_ cars: [Car]) throws {
        try database.pool.write { db in
            let statement = try db.cachedStatement(
                sql: """
                    INSERT INTO car (id, make, model, year, seats, price_per_day_cents, lat, lon, image_url, updated_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET make = excluded.make, model = excluded.model, year = excluded.year, seats = excluded.seats,
                      price_per_day_cents = excluded.price_per_day_cents, lat = excluded.lat, lon = excluded.lon, image_url = excluded.image_url,
                      updated_at_ms = excluded.updated_at_ms
                    """)
            for car in cars {
                try statement.execute(arguments: [
                    car.id, car.make, car.model, car.year, car.seats, car.pricePerDayCents, car.lat, car.lon,
                    car.imageURL, car.updatedAt,
                ])
            }
        }
    }

    func removeCar(_ id: String) throws {
        try database.pool.write { db in try db.execute(sql: "DELETE FROM car WHERE id = ?", arguments: [id]) }
    }

    static func car(_ row: Row) -> Car {
        Car(
            id: row["id"], make: row["make"], model: row["model"], year: row["year"], seats: row["seats"],
            pricePerDayCents: row["price_per_day_cents"], lat: row["lat"], lon: row["lon"], imageURL: row["image_url"],
            updatedAt: row["updated_at_ms"])
    }

    // MARK: Rentals

    func openRentals() throws -> [Rental] {
        try database.pool.read { db in try Row.fetchAll(db, sql: "SELECT * FROM rental WHERE state IN ('planned', 'active')").map(Self.rental) }
    }

    /// Planned rentals whose start is before `time`, oldest first.
    func planned(startingBefore time: Int64, limit: Int) throws -> [Rental] {
        try database.pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM rental WHERE state = 'planned' AND starts_at_ms < ? ORDER BY starts_at_ms LIMIT ?",
                arguments: [time, limit]
            ).map(Self.rental)
        }
    }

    func claimReminders(startingBefore time: Int64, now: Int64, limit: Int) throws -> [Rental] {
        try database.pool.write { db in
            let due = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM rental WHERE state = 'planned' AND reminded_at_ms IS NULL AND starts_at_ms < ? ORDER BY starts_at_ms LIMIT ?
                    """, arguments: [time, limit]
            ).map(Self.rental)
            for rental in due { try db.execute(sql: "UPDATE rental SET reminded_at_ms = ? WHERE id = ?", arguments: [now, rental.id]) }
            return due
        }
    }

    func rental(_ id: String) throws -> Rental? {
        try database.pool.read { db in try Row.fetchOne(db, sql: "SELECT * FROM rental WHERE id = ?", arguments: [id]).map(Self.rental) }
    }

    /// The user's open rentals and the last `pastLimit` closed ones, newest first.
    func rentals(of user: String, pastLimit: Int) throws -> [Rental] {
        try database.pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM rental WHERE user_id = ? AND state IN ('planned', 'active')
                    UNION ALL
                    SELECT * FROM (SELECT * FROM rental WHERE user_id = ? AND state IN ('finished', 'cancelled') ORDER BY updated_at_ms DESC LIMIT ?)
                    """, arguments: [user, user, pastLimit]
            ).map(Self.rental).sorted { $0.createdAt > $1.createdAt }
        }
    }

    /// Stores a new open rental; false when the car already has one (the unique index
    /// on open rentals per car refused it).
    func insertOpen(_ rental: Rental) throws -> Bool {
        do {
            try database.pool.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO rental (id, car_id, user_id, state, starts_at_ms, started_at_ms, price_per_day_cents, created_at_ms, updated_at_ms)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        rental.id, rental.car, rental.user, rental.state.rawValue, rental.startsAt, rental.startedAt,
                        rental.pricePerDayCents, rental.createdAt, rental.updatedAt,
                    ])
            }
            return true
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            return false
        }
    }

    /// Writes a rental's new state; with `carPosition`, moves its car in the same transaction.
    func update(_ rental: Rental, from state: RentalState, carPosition: (lat: Double, lon: Double, at: Int64)?) throws -> Bool {
        try database.pool.write { db in
            try db.execute(
                sql: """
                    UPDATE rental SET state = ?, started_at_ms = ?, ended_at_ms = ?, days = ?, amount_cents = ?, end_lat = ?, end_lon = ?, updated_at_ms = ?
                    WHERE id = ? AND state = ?
                    """,
                arguments: [
                    rental.state.rawValue, rental.startedAt, rental.endedAt, rental.days, rental.amountCents, rental.endLat, rental.endLon,
                    rental.updatedAt, rental.id, state.rawValue,
                ])
            guard db.changesCount == 1 else { return false }
            if let carPosition {
                try db.execute(
                    sql: "UPDATE car SET lat = ?, lon = ?, updated_at_ms = ? WHERE id = ?",
                    arguments: [carPosition.lat, carPosition.lon, carPosition.at, rental.car])
            }
            return true
        }
    }

    func fleetState(of ids: [String]) throws -> (cars: [Car], open: [Rental]) {
        guard !ids.isEmpty else { return ([], []) }
        return try database.pool.read { db in
            let list = Array(ids)
            let marks = databaseQuestionMarks(count: list.count)
            return (
                try Row.fetchAll(db, sql: "SELECT * FROM car WHERE id IN (\(marks))", arguments: StatementArguments(list)).map(Self.car),
                try Row.fetchAll(
                    db, sql: "SELECT * FROM rental WHERE state IN ('planned', 'active') AND car_id IN (\(marks))",
                    arguments: StatementArguments(list)
                ).map(Self.rental)
            )
        }
    }

    static func rental(_ row: Row) -> Rental {
        Rental(
            id: row["id"], car: row["car_id"], user: row["user_id"], state: RentalState(rawValue: row["state"]) ?? .cancelled,
            startsAt: row["starts_at_ms"], startedAt: row["started_at_ms"], endedAt: row["ended_at_ms"], pricePerDayCents: row["price_per_day_cents"],
            days: row["days"], amountCents: row["amount_cents"], endLat: row["end_lat"], endLon: row["end_lon"],
            createdAt: row["created_at_ms"], updatedAt: row["updated_at_ms"])
    }
}
