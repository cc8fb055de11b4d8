import GondolaGeo
import GondolaHub
import GondolaTestSupport
import Testing

@testable import GondolaRentals

@Suite struct RentalRulesTests {
    @Test func rentalsAreChargedInWholeDaysRoundedUp() {
        let day = Rental.dayMilliseconds
        #expect(Rental.days(from: 0, to: 0) == 1)
        #expect(Rental.days(from: 0, to: 60_000) == 1)
        #expect(Rental.days(from: 0, to: day) == 1)
        #expect(Rental.days(from: 0, to: day + 1) == 2)
        #expect(Rental.days(from: 1_000, to: 1_000 + 3 * day - 1) == 3)
    }

    @Test func cellsAreZoom15TilesAndTheirChannelsParseBack() throws {
        // Innsbruck's old town: tile 15/17421/11489 by the slippy-map formula (x from the longitude, y from asinh(tan(lat))).
        let cell = CarCell(lat: 47.2669, lon: 11.3933)
        #expect(cell.x == 17_421 && cell.y == 11_489)
        #expect(cell.channel == "cars:17421.11489")
        #expect(CarCell(channelSuffix: "17421.11489") == cell)
        for bad in ["", "1", "1.2.3", "-1.0", "32768.0", "01.2", "+1.2", "a.b"] { #expect(CarCell(channelSuffix: Substring(bad)) == nil, "\(bad)") }
        #expect(cell.bounds.contains(GeoPoint(lat: 47.2669, lon: 11.3933)))
        let box = BoundingBox(minLat: 47.26, minLon: 11.38, maxLat: 47.27, maxLon: 11.40)
        let cells = try #require(CarCell.covering(box, limit: 64))
        #expect(cells.contains(cell) && cells.count <= 12)
        #expect(CarCell.covering(BoundingBox(minLat: 40, minLon: 0, maxLat: 50, maxLon: 20), limit: 64) == nil)
    }

    @Test func swappedCoordinatesAreCaughtOnlyWhenMostPointsSaySo() throws {
        let square = Polygon(outline: [
            GeoPoint(lat: 47.2, lon: 11.3), GeoPoint(lat: 47.2, lon: 11.5), GeoPoint(lat: 47.3, lon: 11.5),
            GeoPoint(lat: 47.3, lon: 11.3),
        ])
        let areas = ServiceAreas(areas: [("Innsbruck", square)])
        func car(_ lat: Double, _ lon: Double) -> Car {
            Car(id: "c", make: "m", model: "m", year: 2020, seats: 4, pricePerDayCents: 100, lat: lat, lon: lon, imageURL: nil, updatedAt: 0)
        }
        try areas.checkOrientation([car(47.25, 11.4), car(47.26, 11.41)])
        #expect(throws: HubError.self) { try areas.checkOrientation([car(11.4, 47.25), car(11.41, 47.26), car(47.25, 11.4)]) }
        try areas.checkOrientation([car(11.4, 47.25), car(47.25, 11.4)])
        try areas.checkOrientation([car(-33.9, 18.4)])
        try ServiceAreas.none.checkOrientation([car(11.4, 47.25)])
    }

    @Test func aThrottleSlowsAKeyDownForTheRestOfItsWindowAndForgetsOldKeysWhenFull() {
        let throttle = AttemptThrottle(limit: 3, window: 10_000, maxKeys: 4)
        for time in [0, 1_000, 2_000] as [Int64] {
            #expect(throttle.retryAfter("a", now: time) == nil)
            throttle.record("a", now: time)
        }
        #expect(throttle.retryAfter("a", now: 2_500) == 8)
        #expect(throttle.retryAfter("a", now: 10_001) == nil, "the oldest attempt left the window")
        #expect(throttle.retryAfter("b", now: 2_500) == nil)
        throttle.clear("a")
        #expect(throttle.retryAfter("a", now: 2_500) == nil)
        for (index, key) in ["k1", "k2", "k3", "k4", "k5", "k6"].enumerated() {
            for _ in 0..<3 { throttle.record(key, now: 20_000 + Int64(index)) }
        }
        #expect(throttle.retryAfter("k6", now: 20_010) != nil, "the newest key is kept")
        #expect(throttle.retryAfter("k1", now: 20_010) == nil, "the oldest key was forgotten to make room")
    }

    @Test func theFleetTellsBothCellsWhenACarMovesBetweenThem() {
        var fleet = Fleet()
        let car = Car(
            id: "c", make: "m", model: "m", year: 2020, seats: 4, pricePerDayCents: 100, lat: 47.2669, lon: 11.3933, imageURL: nil, updatedAt: 0)
        #expect(fleet.upsert(car).map(\.cell) == [car.cell])
        let moved = fleet.move("c", lat: 47.30, lon: 11.45, at: 1)
        #expect(moved.count == 2 && moved[0].cell == car.cell && moved[0].data["reason"] == "moved" && moved[1].data["type"] == "car")
        #expect(fleet.setOpenRental("c", ("r", .planned)).first?.data["reason"] == "reserved")
        #expect(fleet.near(GeoPoint(lat: 47.30, lon: 11.45), radius: 100, limit: 5, maxPrice: nil).isEmpty, "a reserved car is not offered")
        #expect(fleet.setOpenRental("c", nil).first?.data["type"] == "car")
        #expect(fleet.near(GeoPoint(lat: 47.30, lon: 11.45), radius: 100, limit: 5, maxPrice: 99).isEmpty)
        #expect(fleet.near(GeoPoint(lat: 47.30, lon: 11.45), radius: 100, limit: 5, maxPrice: 100).count == 1)
    }
}

/// The rentals domain's replica payload reads back what it writes.
@Suite struct FleetReplicaTests {
    @Test func aFleetChangeSurvivesItsJSON() throws {
        try expectReadBack(FleetChange(cars: ["demo-001", "demo-002"]))
    }
}
