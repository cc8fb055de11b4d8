import Foundation
import GondolaGeo
import Testing

@Suite struct GeofenceTests {
    func square(_ centre: GeoPoint, _ metres: Double) -> [GeoPoint] {
        let corners = [45.0, 135.0, 225.0, 315.0].map { Geodesy.destination(from: centre, bearing: $0, metres: metres * 2.0.squareRoot() / 2) }
        return corners + [corners[0]]
    }

    @Test func indexMatchesBruteForceOverManyFences() {
        var random = SeededRandom(seed: 7)
        let centre = GeoPoint(lat: 45.3, lon: 6.6)
        var index = GeofenceIndex<Int>(cellDegrees: 0.005)
        var fences: [Geofence<Int>] = []
        for id in 0..<400 {
            let middle = random.point(near: centre, metres: 5000)
            let outer = square(middle, .random(in: 50...1500, using: &random))
            let holes = id % 3 == 0 ? [square(middle, 30)] : []
            let fence = Geofence(id: id, polygons: [Polygon(outline: outer, holes: holes)])
            fences.append(fence)
            index.insert(fence)
        }
        let huge = Geofence(id: 9999, polygons: [Polygon(outline: square(centre, 40_000))])
        fences.append(huge)
        index.insert(huge)
        for _ in 0..<2000 {
            let point = random.point(near: centre, metres: 6000)
            let expected = Set(fences.filter { $0.contains(point) }.map(\.id))
            #expect(Set(index.containing(point)) == expected)
        }
    }

    /// `candidates(near:)` never misses a fence within `reach` metres of the point.
    @Test func candidatesNearAPointIncludeEveryFenceWithinReach() {
        let seed: UInt64 = 11
        var random = SeededRandom(seed: seed)
        let centre = GeoPoint(lat: 45.3, lon: 6.6)
        var index = GeofenceIndex<Int>(cellDegrees: 0.01, reach: 600)
        var fences: [Geofence<Int>] = []
        for id in 0..<300 {
            let fence = Geofence(
                id: id, polygons: [Polygon(outline: square(random.point(near: centre, metres: 8000), .random(in: 100...2000, using: &random)))])
            fences.append(fence)
            index.insert(fence)
        }
        for _ in 0..<2000 {
            let point = random.point(near: centre, metres: 9000)
            let found = Set(index.candidates(near: point).map(\.id))
            let near = Set(fences.filter { $0.contains(point) || $0.distanceToBoundary(point) <= 600 }.map(\.id))
            #expect(near.isSubset(of: found), "seed \(seed): \(near.subtracting(found)) missing at \(point)")
        }
    }

    @Test func aBoxWidenedAcrossTheAntimeridianWraps() {
        let box = BoundingBox(minLat: 0, minLon: 179.9, maxLat: 1, maxLon: 179.95).widened(by: 20_000)
        #expect(box.crossesAntimeridian)
        #expect(box.contains(GeoPoint(lat: 0.5, lon: -179.9)) && !box.contains(GeoPoint(lat: 0.5, lon: 179.5)))
        #expect(BoundingBox(minLat: 89.9, minLon: 0, maxLat: 89.95, maxLon: 1).widened(by: 20_000).longitudeRanges == [-180...180])
    }

    @Test func multiPolygonAcrossTheAntimeridian() {
        let east = Polygon(outline: [
            GeoPoint(lat: -1, lon: 179.5), GeoPoint(lat: -1, lon: -179.5), GeoPoint(lat: 1, lon: -179.5), GeoPoint(lat: 1, lon: 179.5),
            GeoPoint(lat: -1, lon: 179.5),
        ])
        var index = GeofenceIndex<String>()
        index.insert(Geofence(id: "dateline", polygons: [east]))
        #expect(index.containing(GeoPoint(lat: 0, lon: 179.9)) == ["dateline"])
        #expect(index.containing(GeoPoint(lat: 0, lon: -179.9)) == ["dateline"])
        #expect(index.containing(GeoPoint(lat: 0, lon: 179)).isEmpty)
    }

    /// Random walks: the tracker's enters and exits equal the documented rule applied by brute force.
    @Test func trackerFollowsTheHysteresisRule() {
        var random = SeededRandom(seed: 8)
        let centre = GeoPoint(lat: 46, lon: 7)
        var index = GeofenceIndex<Int>(cellDegrees: 0.002)
        var fences: [Geofence<Int>] = []
        for id in 0..<30 {
            let fence = Geofence(
                id: id, polygons: [Polygon(outline: square(random.point(near: centre, metres: 800), .random(in: 100...600, using: &random)))])
            fences.append(fence)
            index.insert(fence)
        }
        var tracker = GeofenceTracker<Int, Int>(fences: index, margin: 25)
        var positions = (0..<20).map { _ in random.point(near: centre, metres: 900) }
        var inside: [Int: Set<Int>] = [:]
        var exits = 0
        for _ in 0..<4000 {
            let object = Int.random(in: 0..<20, using: &random)
            positions[object] = random.point(near: positions[object], metres: 40)
            let point = positions[object]
            var expected: Set<String> = []
            var now = inside[object] ?? []
            for fence in fences {
                if fence.contains(point), !now.contains(fence.id) {
                    now.insert(fence.id)
                    expected.insert("enter \(fence.id)")
                } else if !fence.contains(point), now.contains(fence.id), fence.distanceToBoundary(point) > 25 {
                    now.remove(fence.id)
                    expected.insert("exit \(fence.id)")
                    exits += 1
                }
            }
            inside[object] = now
            let got = Set(tracker.update(object, to: point).map { "\($0.kind.rawValue) \($0.fence)" })
            #expect(got == expected)
            #expect(tracker.fences(of: object) == now)
        }
        #expect(exits > 10)
    }
}

@Suite struct ElevationGridTests {
    let grid = """
        ncols 3
        nrows 2
        xllcorner 6.0
        yllcorner 45.0
        cellsize 0.5
        NODATA_value -9999
        100 200 300
        400 500 -9999
        """

    @Test func valuesAtCentresAndBilinearBetween() throws {
        let dem = try ElevationGrid(asciiGrid: grid)
        // Centres: columns at lon 6.25, 6.75, 7.25; the north row (lat 45.75) is 100 200 300.
        #expect(dem.elevation(at: GeoPoint(lat: 45.75, lon: 6.25)) == 100)
        #expect(dem.elevation(at: GeoPoint(lat: 45.25, lon: 6.25)) == 400)
        #expect(dem.elevation(at: GeoPoint(lat: 45.5, lon: 6.5)) == 300)
        #expect(dem.elevation(at: GeoPoint(lat: 45.75, lon: 6.5)) == 150)
        #expect(dem.elevation(at: GeoPoint(lat: 45.1, lon: 6.1)) == 400)
        #expect(dem.elevation(at: GeoPoint(lat: 45.5, lon: 7.0)) == nil)
        #expect(dem.elevation(at: GeoPoint(lat: 44.9, lon: 6.2)) == nil)
        #expect(dem.value(column: 2, rowFromSouth: 0) == nil)
    }

    @Test func centerHeaderAndSeparateSteps() throws {
        let dem = try ElevationGrid(asciiGrid: "ncols 2\nnrows 2\nxllcenter 10\nyllcenter 20\ndx 1\ndy 2\n0 10\n0 10\n")
        #expect(dem.elevation(at: GeoPoint(lat: 21, lon: 10.5)) == 5)
        #expect(dem.elevation(at: GeoPoint(lat: 22, lon: 11)) == 10)
    }

    @Test(arguments: [
        ("ncols 2\nnrows x\nxllcorner 0\nyllcorner 0\ncellsize 1\n1 2\n3 4", 2, "nrows"),
        ("ncols 2\nnrows 2\nxllcorner 0\nyllcorner 0\n1 2\n3 4", 5, "dx"),
        ("ncols 2\nnrows 2\nxllcorner 0\nyllcorner 0\ncellsize 1\n1 2\n3", 7, "row 2"),
        ("ncols 2\nnrows 2\nxllcorner 0\nyllcorner 0\ncellsize 1\n1 2\n3 abc", 7, "row 2, column 2"),
        ("ncols 2\nnrows 2\nxllcorner 0\nyllcorner 0\ncellsize 1\n1 2\n3 4x", 7, "row 2, column 2"),
        ("ncols 2\nnrows 2\nxllcorner 0\nyllcorner 0\ncellsize 1\n1 inf\n3 4", 6, "row 1, column 2"),
        ("ncols 2\nnrows 2\nxllcorner 0\nyllcorner 0\ncellsize 1\n1 2", 7, "data"),
        ("ncols 2\nnrows 2\nxllcorner 0\nyllcorner 0\ncellsize 1\nbogus 3\n1 2\n3 4", 6, "bogus"),
        ("ncols 2\nnrows 2\nxllcorner 0\nyllcorner 0\ncellsize -1\n1 2\n3 4", 5, "cellsize/dx"),
    ])
    func malformedFilesNameLineAndField(_ text: String, _ line: Int, _ field: String) {
        do {
            _ = try ElevationGrid(asciiGrid: text)
            Issue.record("parsed a malformed grid")
        } catch {
            #expect(error.line == line, "\(error)")
            #expect(error.field == field, "\(error)")
        }
    }
}

@Suite struct MapSelectorTests {
    let centre = GeoPoint(lat: 45.3, lon: 6.6)

    func selector() -> MapSelector {
        let corners = [45.0, 135.0, 225.0, 315.0].map { Geodesy.destination(from: centre, bearing: $0, metres: 2000) }
        return MapSelector(
            resorts: [ResortArea(id: "demo", boundary: [Polygon(outline: corners + [corners[0]])], baseElevation: 1300)],
            margin: 300, elevationMargin: 50)
    }

    func at(_ metresEast: Double, alt: Double?) -> GeoPoint {
        var point = Geodesy.destination(from: centre, bearing: 90, metres: metresEast)
        point.alt = alt
        return point
    }

    @Test func insideNearAndFar() {
        let selector = selector()
        #expect(selector.choose(for: at(0, alt: 1000)) == .mountain("demo"))
        // The boundary is about 1414 m east of the centre.
        #expect(selector.choose(for: at(1600, alt: 1400)) == .mountain("demo"))
        #expect(selector.choose(for: at(1600, alt: 1320)) == .street)
        #expect(selector.choose(for: at(3000, alt: 2500)) == .street)
    }

    /// The indexed selector answers as the rule does when every resort is tested in turn
    /// (the brute force below), on 50 resorts and seeded positions around them.
    @Test func theIndexedChoiceMatchesTestingEveryResort() {
        let seed: UInt64 = 21
        var random = SeededRandom(seed: seed)
        let resorts = (0..<50).map { id in
            let middle = random.point(near: centre, metres: 30_000)
            let ring = (0..<40).map { step in
                Geodesy.destination(from: middle, bearing: Double(step) * 9, metres: .random(in: 800...2500, using: &random))
            }
            return ResortArea(id: "r\(id)", boundary: [Polygon(outline: ring + [ring[0]])], baseElevation: .random(in: 900...1600, using: &random))
        }
        let selector = MapSelector(resorts: resorts, margin: 300, elevationMargin: 50)
        func bruteForce(_ point: GeoPoint, _ previous: MapChoice) -> MapChoice {
            if let current = previous.resort, let resort = resorts.first(where: { $0.id == current }) {
                if resort.boundary.contains(point) { return previous }
                if point.alt.map({ $0 >= resort.baseElevation - 50 }) ?? true, resort.boundary.distanceToBoundary(point) <= 600 { return previous }
            }
            if let inside = resorts.first(where: { $0.boundary.contains(point) }) { return .mountain(inside.id) }
            if let altitude = point.alt,
                let near = resorts.first(where: { altitude >= $0.baseElevation + 50 && $0.boundary.distanceToBoundary(point) <= 300 })
            {
                return .mountain(near.id)
            }
            return .street
        }
        var previous = MapChoice.street
        for _ in 0..<5000 {
            var point = random.point(near: centre, metres: 32_000)
            point.alt = .random(in: 800...2000, using: &random)
            let expected = bruteForce(point, previous)
            #expect(selector.choose(for: point, previous: previous) == expected, "seed \(seed) at \(point) after \(previous)")
            previous = expected
        }
    }

    @Test func hysteresisKeepsTheMountainMapNearTheEdge() {
        let selector = selector()
        let edge = at(1900, alt: 1280)
        #expect(selector.choose(for: edge) == .street)
        #expect(selector.choose(for: edge, previous: .mountain("demo")) == .mountain("demo"))
        #expect(selector.choose(for: at(1900, alt: 1200), previous: .mountain("demo")) == .street)
        #expect(selector.choose(for: at(2200, alt: 1400), previous: .mountain("demo")) == .street)
    }
}
