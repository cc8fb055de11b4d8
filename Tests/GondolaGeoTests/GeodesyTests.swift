import GondolaGeo
import Testing

@Suite struct GeodesyTests {
    @Test func haversineKnownDistances() {
        let paris = GeoPoint(lat: 48.8566, lon: 2.3522)
        let london = GeoPoint(lat: 51.5074, lon: -0.1278)
        #expect(abs(Geodesy.distance(paris, london) - 343_560) < 500)
        let oneDegree = Geodesy.distance(GeoPoint(lat: 0, lon: 0), GeoPoint(lat: 0, lon: 1))
        #expect(abs(oneDegree - 111_195) < 1)
        #expect(abs(Geodesy.distance(GeoPoint(lat: 0, lon: 179.9), GeoPoint(lat: 0, lon: -179.9)) - 22_239) < 1)
        #expect(abs(Geodesy.distance(GeoPoint(lat: 90, lon: 0), GeoPoint(lat: 90, lon: 137))) < 1e-6)
    }

    /// The documented bound: below 0.1% relative error up to 10 km and ±85° latitude.
    @Test func fastDistanceErrorBound() {
        var random = SeededRandom(seed: 1)
        var worst = 0.0
        for _ in 0..<20_000 {
            let a = GeoPoint(lat: .random(in: -85...85, using: &random), lon: .random(in: -180...180, using: &random))
            let b = random.point(near: a, metres: 7000)
            let exact = Geodesy.distance(a, b)
            guard exact > 1, exact <= 10_000, abs(b.lat) <= 85 else { continue }
            worst = max(worst, abs(Geodesy.fastDistance(a, b) - exact) / exact)
        }
        #expect(worst < 0.001, "worst relative error \(worst)")
    }

    @Test func bearingsAndDestinations() {
        let origin = GeoPoint(lat: 0, lon: 0)
        #expect(abs(Geodesy.bearing(origin, GeoPoint(lat: 1, lon: 0))) < 1e-9)
        #expect(abs(Geodesy.bearing(origin, GeoPoint(lat: 0, lon: 1)) - 90) < 1e-9)
        #expect(abs(Geodesy.bearing(origin, GeoPoint(lat: -1, lon: 0)) - 180) < 1e-9)
        #expect(abs(Geodesy.bearing(GeoPoint(lat: 0, lon: 179.9), GeoPoint(lat: 0, lon: -179.9)) - 90) < 1e-6)
        var random = SeededRandom(seed: 2)
        for _ in 0..<1000 {
            let start = GeoPoint(lat: .random(in: -80...80, using: &random), lon: .random(in: -180...180, using: &random))
            let bearing = Double.random(in: 0..<360, using: &random)
            let metres = Double.random(in: 1...50_000, using: &random)
            let end = Geodesy.destination(from: start, bearing: bearing, metres: metres)
            #expect(abs(Geodesy.distance(start, end) - metres) < 0.01)
        }
    }

    @Test func metresAndDegrees() {
        #expect(abs(Geodesy.latitudeDegrees(metres: 111_195) - 1) < 1e-4)
        #expect(abs(Geodesy.longitudeDegrees(metres: 55_597.5, atLatitude: 60) - 1) < 1e-3)
        #expect(abs(Geodesy.metres(longitudeDegrees: 1, atLatitude: 60) - 55_597.5) < 1)
        #expect(Geodesy.longitudeDegrees(metres: 10, atLatitude: 90) == 180)
    }

    @Test func boxesAcrossTheAntimeridianAndPoles() {
        let box = BoundingBox(around: GeoPoint(lat: 10, lon: 179.99), radius: 5000)
        #expect(box.crossesAntimeridian)
        #expect(box.contains(GeoPoint(lat: 10, lon: -179.99)))
        #expect(box.contains(GeoPoint(lat: 10, lon: 179.97)))
        #expect(!box.contains(GeoPoint(lat: 10, lon: 0)))
        let polar = BoundingBox(around: GeoPoint(lat: 89.99, lon: 10), radius: 5000)
        #expect(polar.minLon == -180 && polar.maxLon == 180 && polar.maxLat == 90)
        #expect(box.intersects(BoundingBox(minLat: 9, minLon: -180, maxLat: 11, maxLon: -179.999)))
        #expect(!box.intersects(BoundingBox(minLat: 9, minLon: 0, maxLat: 11, maxLon: 1)))
    }
}

@Suite struct DistanceProbeTests {
    @Test func agreesWithHaversineAndItsPrefilterNeverRejectsAMember() {
        var random = SeededRandom(seed: 9)
        for centre in testCentres {
            for _ in 0..<3000 {
                let radius = [50.0, 300, 5000, 80_000].randomElement(using: &random)!
                let probe = DistanceProbe(centre, radius: radius)
                let point = random.point(near: centre, metres: radius * 1.5)
                let exact = Geodesy.distance(centre, point)
                let fast = probe.distance(lat: point.lat, lon: point.lon)
                #expect(abs(fast - exact) <= max(1e-6, exact * 1e-12), "\(centre) \(point)")
                if exact <= radius { #expect(probe.mayBeWithin(lat: point.lat, lon: point.lon)) }
            }
        }
    }
}
