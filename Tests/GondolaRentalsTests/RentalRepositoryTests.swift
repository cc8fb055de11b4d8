import Foundation
import GondolaStore
import GondolaTestSupport
import Testing

@testable import GondolaRentals

/// The car and rental repository of `engine` on empty storage.
func rentalRepository(_ engine: Engine) async throws -> any RentalRepository {
    switch engine {
    case .sqlite:
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-rentals-\(UUID().uuidString)/gondola.sqlite").path
        return SQLiteRentalRepository(database: try GondolaDatabase(path: path) { RentalsSchema.registerMigrations(in: &$0) })
    case .postgres:
        return await PostgresRentalRepository(pool: try TestPostgres.freshDatabase(RentalsPostgresSchema.register))
    }
}

func car(_ id: String, price: Int64 = 4_900, image: String? = nil, at time: Int64 = 1) -> Car {
    Car(
        id: id, make: "Skoda", model: "Octavia", year: 2022, seats: 5, pricePerDayCents: price, lat: 47.2669, lon: 11.3933,
        imageURL: image, updatedAt: time)
}

func rental(_ id: String, car: String, user: String, state: RentalState = .planned, startsAt: Int64 = 100, at time: Int64) -> Rental {
    Rental(
        id: id, car: car, user: user, state: state, startsAt: startsAt, startedAt: state == .active ? time : nil, endedAt: nil,
        pricePerDayCents: 4_900, days: nil, amountCents: nil, endLat: nil, endLon: nil, createdAt: time, updatedAt: time)
}

/// What both engines must do alike with cars and rentals.
@Suite struct RentalRepositoryTests {
    @Test(arguments: Engine.allCases)
    func carsAreWrittenInBatchesReplacedAndRemoved(engine: Engine) async throws {
        let repository = try await rentalRepository(engine)
        try await repository.upsert([car("a"), car("b", image: "https://example.com/b.jpg"), car("c")])
        try await repository.upsert([car("a", price: 5_900, at: 2)])
        try await repository.upsert([])
        try await repository.removeCar("c")
        let cars = try await repository.allCars().sorted { $0.id < $1.id }
        #expect(cars == [car("a", price: 5_900, at: 2), car("b", image: "https://example.com/b.jpg")])
    }

    @Test(arguments: Engine.allCases)
    func aCarHasAtMostOneOpenRental(engine: Engine) async throws {
        let repository = try await rentalRepository(engine)
        try await repository.upsert([car("a")])
        #expect(try await repository.insertOpen(rental("r1", car: "a", user: "ann", at: 10)))
        #expect(try await !repository.insertOpen(rental("r2", car: "a", user: "bob", state: .active, at: 11)), "the car is taken")
        var first = try #require(try await repository.rental("r1"))
        first.state = .cancelled
        first.updatedAt = 12
        #expect(try await repository.update(first, from: .planned))
        #expect(try await !repository.update(first, from: .planned), "a change applies only to the state it was read in")
        #expect(try await repository.insertOpen(rental("r3", car: "a", user: "bob", state: .active, at: 13)), "a cancelled rental frees the car")
        #expect(try await repository.openRentals().map(\.id) == ["r3"])
    }

    @Test(arguments: Engine.allCases)
    func aStoppedRentalMovesItsCarAndListsComeNewestFirst(engine: Engine) async throws {
        let repository = try await rentalRepository(engine)
        try await repository.upsert([car("a"), car("b"), car("c")])
        #expect(try await repository.insertOpen(rental("r1", car: "a", user: "ann", state: .active, at: 10)))
        var stopped = try #require(try await repository.rental("r1"))
        stopped.state = .finished
        stopped.endedAt = 500
        stopped.days = 1
        stopped.amountCents = 4_900
        stopped.endLat = 47.27
        stopped.endLon = 11.40
        stopped.updatedAt = 500
        #expect(try await repository.update(stopped, from: .active, carPosition: (47.27, 11.40, 500)))
        #expect(try await repository.rental("r1") == stopped)
        let moved = try #require(try await repository.allCars().first { $0.id == "a" })
        #expect(moved.lat == 47.27 && moved.lon == 11.40 && moved.updatedAt == 500)
        #expect(try await repository.insertOpen(rental("r2", car: "b", user: "ann", startsAt: 1_000, at: 20)))
        #expect(try await repository.insertOpen(rental("r3", car: "c", user: "ann", startsAt: 50, at: 30)))
        #expect(try await repository.rentals(of: "ann", pastLimit: 5).map(\.id) == ["r3", "r2", "r1"])
        #expect(try await repository.rentals(of: "ann", pastLimit: 0).map(\.id) == ["r3", "r2"], "only the open ones")
        #expect(try await repository.planned(startingBefore: 900, limit: 10).map(\.id) == ["r3"])
        #expect(try await repository.planned(startingBefore: 2_000, limit: 1).map(\.id) == ["r3"], "oldest start first")
        #expect(try await repository.claimReminders(startingBefore: 900, now: 40, limit: 10).map(\.id) == ["r3"])
        #expect(try await repository.claimReminders(startingBefore: 2_000, now: 41, limit: 10).map(\.id) == ["r2"], "each rental once")
        #expect(try await repository.claimReminders(startingBefore: 2_000, now: 42, limit: 10).isEmpty)
        #expect(try await repository.rental("nope") == nil)
        #expect(try await repository.rentals(of: "bob", pastLimit: 5).isEmpty)
        let state = try await repository.fleetState(of: ["a", "b", "gone"])
        #expect(state.cars.map(\.id).sorted() == ["a", "b"] && state.open.map(\.id) == ["r2"])
        #expect(try await repository.fleetState(of: []).cars.isEmpty)
    }
}
