import Foundation
import GondolaProtocol
import Testing

@testable import GondolaRentals

/// Cars in Innsbruck, inside the service area the repository's `fleets/` folder defines.
private func car(_ id: String, lat: Double = 47.2650, lon: Double = 11.3950, price: Int64 = 5_000) -> JSON {
    [
        "id": .string(id), "make": "Skoda", "model": "Fabia", "year": 2022, "seats": 5, "price_per_day_cents": .int(price),
        "lat": .double(lat), "lon": .double(lon),
    ]
}

@Suite struct RentalTests {
    @Test func carsAreFoundNearestFirstAndEveryCellSeesItsChanges() async throws {
        let server = try await startRentalsServer()
        let imported = try await server.api(
            "car_import",
            [
                "cars": [
                    car("near", lat: 47.2651, lon: 11.3951), car("far", lat: 47.2700, lon: 11.4100),
                    car("pricey", lat: 47.2652, lon: 11.3952, price: 20_000),
                ]
            ])
        #expect(imported["imported"] == 3)
        let ann = try await server.client("ann")
        let near = try await ann.rpc("cars.near", ["lat": 47.2650, "lon": 11.3950, "radius": 3000])
        #expect(near["cars"]?.arrayValue.map { $0["id"]?.stringValue } == ["near", "pricey", "far"])
        let cheap = try await ann.rpc("cars.near", ["lat": 47.2650, "lon": 11.3950, "max_price": 10_000, "limit": 1])
        #expect(cheap["cars"]?.arrayValue.map { $0["id"]?.stringValue } == ["near"])
        let boxed = try await ann.rpc("cars.in_box", ["bbox": [11.39, 47.26, 11.40, 47.27]])
        #expect(boxed["cars"]?.arrayValue.count == 2 && boxed["truncated"] == false)

        let nearCell = try #require(near["cars"]?.arrayValue.first?["cell"]?.stringValue)
        let farCell = try #require(near["cars"]?.arrayValue.last?["cell"]?.stringValue)
        #expect(nearCell != farCell)
        let cells = try await ann.rpc("cars.cells", ["bbox": [11.3949, 47.2649, 11.4101, 47.2701]])
        #expect(cells["channels"]?.arrayValue.contains(.string(nearCell)) == true && cells["channels"]?.arrayValue.contains(.string(farCell)) == true)
        let snapshot = try #require(try await ann.subscribe(nearCell))
        #expect(Set(snapshot["cars"]?.arrayValue.compactMap { $0["id"]?.stringValue } ?? []) == ["near", "pricey"])
        try await ann.subscribe(farCell)

        // A price change, then a move across cells: the old cell loses the car, the new one gains it.
        _ = try await server.api("car_upsert", car("near", lat: 47.2651, lon: 11.3951, price: 4_500))
        _ = try await server.api("car_upsert", car("near", lat: 47.2701, lon: 11.4101, price: 4_500))
        let nearEvents = try await ann.awaitPublications(nearCell, count: 2)
        #expect(nearEvents.first?["car"]?["price_per_day_cents"] == 4_500)
        #expect(nearEvents.last == ["type": "car_gone", "id": "near", "reason": "moved"])
        #expect(try await ann.awaitPublications(farCell, count: 1).first?["car"]?["id"] == "near")

        // Rented: gone from the map; returned elsewhere: back in that cell.
        let rental = try await ann.rpc("rental.start", ["car": "pricey"])["rental"]
        #expect(try await ann.awaitPublications(nearCell, count: 3).last == ["type": "car_gone", "id": "pricey", "reason": "rented"])
        #expect(try await ann.rpc("cars.near", ["lat": 47.2650, "lon": 11.3950, "radius": 500])["cars"] == [])
        let stopped = try await ann.rpc("rental.stop", ["rental": rental?["id"] ?? .null, "lat": 47.2702, "lon": 11.4102])["rental"]
        #expect(stopped?["state"] == "finished" && stopped?["days"] == 1 && stopped?["amount_cents"] == 20_000)
        #expect(try await ann.awaitPublications(farCell, count: 2).last?["car"]?["id"] == "pricey")

        _ = try await server.api("car_remove", ["id": "far"])
        #expect(try await ann.awaitPublications(farCell, count: 3).last == ["type": "car_gone", "id": "far", "reason": "removed"])
        await ann.close()
        try await server.stop()
    }

    @Test func badCarsAndSwappedCoordinatesAreRefusedNamingTheProblem() async throws {
        let server = try await startRentalsServer()
        let swapped = (0..<10).map { car("s\($0)", lat: 11.39 + Double($0) * 0.001, lon: 47.265) }
        await #expect(throws: RPCFailure.self) { try await server.api("car_import", ["cars": .array(swapped)]) }
        do {
            _ = try await server.api("car_import", ["cars": .array(swapped)])
        } catch let failure as RPCFailure {
            #expect(failure.code == 107 && failure.message.contains("lat and lon swapped") && failure.message.contains("Innsbruck"))
        }
        let refusals: [(JSON, String)] = [
            (car("x", lat: 91), "lat"), (car("x", lon: -181), "lon"), (car("bad id"), "id"), (car("x").adding("year", 1800), "year"),
            (car("x").adding("seats", 0), "seats"), (car("x").adding("image_url", "ftp://x"), "image_url"),
        ]
        for (body, field) in refusals {
            do {
                _ = try await server.api("car_upsert", body)
                Issue.record("car_upsert accepted a bad \(field)")
            } catch let failure as RPCFailure {
                #expect(failure.code == 107 && failure.message.contains(field), "\(failure)")
            }
        }
        do {
            _ = try await server.api("car_import", ["cars": [car("dup"), car("dup")]])
        } catch let failure as RPCFailure {
            #expect(failure.message.contains("cars[1]") && failure.message.contains("twice"))
        }
        do {
            _ = try await server.api("car_import", ["cars": []])
            Issue.record("car_import accepted an empty batch")
        } catch let failure as RPCFailure {
            #expect(failure.code == 107 && failure.message.contains("cars: 1 to \(CarInput.maxImportCount) per batch, got none"), "\(failure)")
        }
        let ann = try await server.client("ann")
        #expect(try await ann.rpc("cars.near", ["lat": 47.265, "lon": 11.395])["cars"] == [], "nothing of a refused batch was stored")
        for (method, data, code) in [
            ("cars.near", ["lat": 47.2] as JSON, UInt32(107)), ("cars.in_box", ["bbox": [11.4, 47.2, 11.3, 47.3]], 107),
            ("cars.cells", ["bbox": [0, 0, 10, 10]], 107), ("rental.plan", ["car": "ghost", "starts_at": 1], 107),
            ("rental.start", ["car": "a", "rental": "b"], 107), ("rental.cancel", ["rental": "rental-ghost"], 103),
        ] as [(String, JSON, UInt32)] {
            do {
                _ = try await ann.rpc(method, data)
                Issue.record("\(method) \(data.text) was accepted")
            } catch let failure as RPCFailure {
                #expect(failure.code == code, "\(method): \(failure)")
            }
        }
        do {
            try await ann.subscribe("cars:99999999.1")
        } catch let failure as RPCFailure {
            #expect(failure.code == 107 && failure.message.contains("not a car cell"))
        }
        _ = try await server.api("car_upsert", car("ok"))
        #expect(try await ann.rpc("cars.near", ["lat": 47.265, "lon": 11.395])["cars"]?.arrayValue.count == 1, "still serving")
        await ann.close()
        try await server.stop()
    }

    @Test func plannedRentalsFollowTheirRulesAndAreToldOnThePersonalChannel() async throws {
        let server = try await startRentalsServer()
        _ = try await server.api("car_import", ["cars": [car("c1"), car("c2", lat: 47.266)]])
        let ann = try await server.client("ann")
        let bo = try await server.client("bo")
        try await ann.subscribe("personal:#ann")
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for startsAt in [now - 1_000, now + 91 * 86_400_000] {
            do {
                _ = try await ann.rpc("rental.plan", ["car": "c1", "starts_at": .int(startsAt)])
                Issue.record("planned at \(startsAt)")
            } catch let failure as RPCFailure {
                #expect(failure.code == 107 && failure.message.contains("within 90 days"))
            }
        }
        let planned = try #require(try await ann.rpc("rental.plan", ["car": "c1", "starts_at": .int(now + 3_600_000)])["rental"])
        #expect(planned["state"] == "planned" && planned["price_per_day_cents"] == 5_000)
        #expect(try await ann.awaitPublications("personal:#ann", count: 1).first?["rental"]?["state"] == "planned")
        do {
            _ = try await bo.rpc("rental.start", ["car": "c1"])
            Issue.record("a reserved car was started")
        } catch let failure as RPCFailure {
            #expect(failure.code == 108 && failure.message.contains("already has a planned rental"))
        }
        do {
            _ = try await ann.rpc("rental.start", ["rental": planned["id"] ?? .null])
            Issue.record("a rental started before its time")
        } catch let failure as RPCFailure {
            #expect(failure.code == 108 && failure.message.contains("starts at"))
        }
        do {
            _ = try await bo.rpc("rental.cancel", ["rental": planned["id"] ?? .null])
            Issue.record("another user cancelled the rental")
        } catch let failure as RPCFailure {
            #expect(failure.code == 103)
        }
        let cancelled = try await ann.rpc("rental.cancel", ["rental": planned["id"] ?? .null])["rental"]
        #expect(cancelled?["state"] == "cancelled")
        #expect(try await ann.awaitPublications("personal:#ann", count: 2).last?["rental"]?["state"] == "cancelled")
        let started = try await bo.rpc("rental.start", ["car": "c1"])["rental"]
        #expect(started?["state"] == "active")
        let list = try await ann.rpc("rental.list")
        #expect(list["planned"] == [] && list["past"]?.arrayValue.first?["state"] == "cancelled")
        #expect(try await bo.rpc("rental.list")["active"]?.arrayValue.count == 1)
        await ann.close()
        await bo.close()
        try await server.stop()
    }

    @Test func manyUsersPlanningOneCarAtOnceLeaveExactlyOneRental() async throws {
        let server = try await startRentalsServer()
        _ = try await server.api("car_upsert", car("wanted"))
        let users = (0..<24).map { "user\($0)" }
        var clients: [LiveClient] = []
        for user in users { clients.append(try await server.client(user)) }
        let startsAt = Int64(Date().timeIntervalSince1970 * 1000) + 86_400_000
        let outcomes = await withTaskGroup(of: UInt32?.self) { group in
            for (index, client) in clients.enumerated() {
                group.addTask {
                    index.isMultiple(of: 2)
                        ? await client.rpcErrorCode("rental.plan", ["car": "wanted", "starts_at": .int(startsAt)])
                        : await client.rpcErrorCode("rental.start", ["car": "wanted"])
                }
            }
            return await group.reduce(into: [UInt32?]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == nil }.count == 1, "exactly one wins: \(outcomes)")
        #expect(outcomes.filter { $0 == 108 }.count == users.count - 1)
        var open = 0
        for client in clients {
            let list = try await client.rpc("rental.list")
            open += (list["planned"]?.arrayValue.count ?? 0) + (list["active"]?.arrayValue.count ?? 0)
            await client.close()
        }
        #expect(open == 1)
        try await server.stop()
    }

    @Test func aPlannedRentalNotStartedWithinADayOfItsStartIsCancelledAndTheCarOfferedAgain() async throws {
        let server = try await startRentalsServer()
        _ = try await server.api("car_upsert", car("lonely"))
        let ann = try await server.client("ann")
        try await ann.subscribe("personal:#ann")
        let startsAt = Int64(Date().timeIntervalSince1970 * 1000) + 3_600_000
        let planned = try #require(try await ann.rpc("rental.plan", ["car": "lonely", "starts_at": .int(startsAt)])["rental"])
        let rentals = try #require(server.server.service(RentalService.self))
        #expect(await rentals.cancelNoShows(now: startsAt + RentalService.noShowGrace - 1) == 0, "still within its day")
        #expect(await rentals.cancelNoShows(now: startsAt + RentalService.noShowGrace + 1) == 1)
        let told = try await ann.awaitPublications("personal:#ann", count: 2)
        #expect(told.last?["rental"]?["id"] == planned["id"] && told.last?["rental"]?["state"] == "cancelled")
        #expect(try await ann.rpc("cars.near", ["lat": 47.265, "lon": 11.395])["cars"]?.arrayValue.first?["id"] == "lonely")
        #expect(await rentals.cancelNoShows(now: startsAt + 2 * RentalService.noShowGrace) == 0, "once")
        await ann.close()
        try await server.stop()
    }
}
