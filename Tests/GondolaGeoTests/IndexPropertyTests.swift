import GondolaGeo
import Testing

/// The index's answers equal brute force over the same points.
@Suite struct IndexPropertyTests {
    struct Model {
        var points: [Int: GeoPoint] = [:]
        func nearby(_ center: GeoPoint, radius: Double) -> [(Int, Double)] {
            points.compactMap { id, point in
                let distance = Geodesy.distance(center, point)
                return distance <= radius ? (id, distance) : nil
            }.sorted { $0.1 < $1.1 }
        }
    }

    /// Distances agree to a tenth of a millimetre (the index keeps positions to about 0.03 mm).
    func close(_ a: [Double], _ b: [Double]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { abs($0 - $1) < 1e-4 }
    }

    func populate(_ seed: UInt64, centre: GeoPoint, count: Int, spread: Double, cell: Double) -> (MovingPointIndex<Int>, Model, SeededRandom) {
        var random = SeededRandom(seed: seed)
        var index = MovingPointIndex<Int>(cellMetres: cell)
        var model = Model()
        for id in 0..<count {
            let point = random.point(near: centre, metres: spread)
            index.upsert(id, at: point, timestamp: Int64(id))
            model.points[id] = point
        }
        // Move a third of them, remove a tenth.
        for id in stride(from: 0, to: count, by: 3) {
            let point = random.point(near: model.points[id]!, metres: spread / 10)
            index.upsert(id, at: point, timestamp: Int64(count + id))
            model.points[id] = point
        }
        for id in stride(from: 1, to: count, by: 10) {
            let removed = index.remove(id)
            #expect(removed)
            model.points[id] = nil
        }
        let removedMissing = index.remove(-1)
        #expect(!removedMissing)
        #expect(index.count == model.points.count)
        return (index, model, random)
    }

    @Test(arguments: Array(testCentres.enumerated()))
    func nearbyAndNearestMatchBruteForce(_ entry: (offset: Int, element: GeoPoint)) {
        var (index, model, random) = populate(UInt64(10 + entry.offset), centre: entry.element, count: 1500, spread: 3000, cell: 250)
        for _ in 0..<150 {
            let center = random.point(near: entry.element, metres: 3500)
            let radius = Double.random(in: 0...1200, using: &random)
            let expected = model.nearby(center, radius: radius)
            let got = index.nearby(center, radius: radius)
            #expect(Set(got.map(\.id)) == Set(expected.map(\.0)))
            #expect(close(got.map(\.distance), expected.map(\.1)))
            let limit = Int.random(in: 1...10, using: &random)
            let limited = index.nearby(center, radius: radius, limit: limit)
            #expect(close(limited.map(\.distance), Array(expected.map(\.1).prefix(limit))))
            #expect(limited.map(\.id) == got.prefix(limit).map(\.id), "the ring search answers what the whole scan does, ties included")
            let evenOnly = index.nearby(center, radius: radius, filter: { $0 % 2 == 0 })
            #expect(Set(evenOnly.map(\.id)) == Set(expected.map(\.0).filter { $0 % 2 == 0 }))
            let k = Int.random(in: 1...8, using: &random)
            let nearest = index.nearest(center, k: k)
            let all = model.nearby(center, radius: .infinity)
            #expect(close(nearest.map(\.distance), Array(all.map(\.1).prefix(k))))
        }
    }

    @Test(arguments: Array(testCentres.enumerated()))
    func aDenseNeighbourhoodsNearestAreTheWholeScansFirst(_ entry: (offset: Int, element: GeoPoint)) {
        // Resort-like density: the nearest 50 lie well inside the radius, so the ring search stops early.
        var (index, model, random) = populate(UInt64(40 + entry.offset), centre: entry.element, count: 6000, spread: 1500, cell: 100)
        for _ in 0..<100 {
            let center = random.point(near: entry.element, metres: 1600)
            let radius = Double.random(in: 50...600, using: &random)
            let limit = Int.random(in: 1...80, using: &random)
            let whole = index.nearby(center, radius: radius)
            #expect(Set(whole.map(\.id)) == Set(model.nearby(center, radius: radius).map(\.0)))
            #expect(index.nearby(center, radius: radius, limit: limit).map(\.id) == whole.prefix(limit).map(\.id))
        }
    }

    @Test(arguments: Array(testCentres.enumerated()))
    func boxesMatchBruteForce(_ entry: (offset: Int, element: GeoPoint)) {
        var (index, model, random) = populate(UInt64(20 + entry.offset), centre: entry.element, count: 1000, spread: 3000, cell: 400)
        for _ in 0..<100 {
            let box = BoundingBox(around: random.point(near: entry.element, metres: 3000), radius: Double.random(in: 10...2000, using: &random))
            let expected = Set(model.points.filter { box.contains($0.value) }.keys)
            #expect(Set(index.within(box)) == expected)
        }
    }

    @Test(arguments: Array(testCentres.prefix(4).enumerated()))
    func polygonsWithHolesMatchBruteForce(_ entry: (offset: Int, element: GeoPoint)) {
        var (index, model, random) = populate(UInt64(30 + entry.offset), centre: entry.element, count: 1000, spread: 3000, cell: 300)
        for _ in 0..<60 {
            let centre = random.point(near: entry.element, metres: 2000)
            let outline = star(around: centre, radius: Double.random(in: 300...2500, using: &random), using: &random)
            let hole = star(around: centre, radius: Double.random(in: 50...250, using: &random), using: &random)
            let polygon = Polygon(outline: outline, holes: [hole])
            let expected = Set(model.points.filter { polygon.contains($0.value) }.keys)
            #expect(Set(index.within(polygon)) == expected)
            // Brute force of the same rule must also agree with a winding test on plain cases.
            for (id, point) in model.points where expected.contains(id) {
                #expect(!Polygon(outline: hole).contains(point))
            }
        }
    }

    func star(around centre: GeoPoint, radius: Double, using random: inout SeededRandom) -> [GeoPoint] {
        let count = Int.random(in: 5...12, using: &random)
        var ring = (0..<count).map { step in
            Geodesy.destination(from: centre, bearing: Double(step) * 360 / Double(count), metres: radius * .random(in: 0.4...1, using: &random))
        }
        ring.append(ring[0])
        return ring
    }

    @Test func expireDropsOldPoints() {
        var index = MovingPointIndex<String>(cellMetres: 100)
        index.upsert("a", at: GeoPoint(lat: 1, lon: 1), timestamp: 10)
        index.upsert("b", at: GeoPoint(lat: 1, lon: 1.0001), timestamp: 20)
        index.upsert("a", at: GeoPoint(lat: 1, lon: 1.0002), timestamp: 30)
        #expect(index.expire(olderThan: 25) == ["b"])
        #expect(index.count == 1 && index.point(of: "b") == nil && index.timestamp(of: "a") == 30)
        index.upsert("c", at: GeoPoint(lat: 1, lon: 1, alt: 1800), timestamp: 40)
        #expect(index.point(of: "c")?.alt == 1800)
    }
}
