import Foundation
import Testing

@testable import GondolaGeo

/// Host fences: geometry checks, circles, the index's removal, and `FenceWatch` crossings
/// against a brute-force check of every fence, with jitter at an edge, positions out of
/// order, dwell times and roaming fences.
@Suite struct FenceWatchTests {
    static let base = GeoPoint(lat: 45.30, lon: 6.58)

    /// A closed counterclockwise square of `side` metres with its south-west corner at `corner`.
    static func square(_ corner: GeoPoint, _ side: Double) -> [GeoPoint] {
        let ne = corner.offset(north: side, east: side)
        return [
            corner, GeoPoint(lat: corner.lat, lon: ne.lon), ne, GeoPoint(lat: ne.lat, lon: corner.lon), corner,
        ]
    }

    @Test func badGeometryIsNamed() {
        let square = Self.square(Self.base, 100)
        let cases: [([[GeoPoint]], String)] = [
            ([Array(square.dropLast())], "the outline (ring 0) is not closed: its last position must repeat its first"),
            ([Array(square.prefix(3))], "the outline (ring 0) has 3 positions; a closed ring needs at least 4"),
            ([square.reversed()], "the outline (ring 0) runs clockwise; it must run counterclockwise (RFC 7946 right-hand rule)"),
            (
                [[square[0], square[2], square[1], square[3], square[0]]],
                "the outline (ring 0) crosses itself: edge 0 meets edge 2"
            ),
            (
                [[GeoPoint(lat: 95, lon: 0)] + square],
                "position 0 of the outline (ring 0) is out of range: (95.0, 0.0) (latitude within ±90, longitude within ±180)"
            ),
            (
                [square, Self.square(Self.base.offset(north: 20, east: 20), 10)],
                "hole 1 runs counterclockwise; a hole must run clockwise (RFC 7946 right-hand rule)"
            ),
            (
                [square, Self.square(Self.base.offset(north: 500, east: 500), 10).reversed()],
                "hole 1 lies outside the outline (its first position (45.30458, 6.5883) is not inside ring 0)"
            ),
            ([Array(repeating: Self.base, count: 1_001)], "the polygon has 1001 positions, more than 1000"),
        ]
        for (rings, problem) in cases {
            let found = FenceGeometry.problem(of: rings)
            #expect(found?.hasPrefix(String(problem.prefix(40))) == true, "expected \(problem), got \(found ?? "nil")")
        }
        #expect(FenceGeometry.problem(of: [square, Self.square(Self.base.offset(north: 20, east: 20), 10).reversed()]) == nil)
    }

    @Test func circlesContainAndMeasure() {
        let circle = Geofence(id: 1, center: Self.base, radius: 200)
        #expect(circle.contains(Self.base.offset(north: 150, east: 0)))
        #expect(!circle.contains(Self.base.offset(north: 250, east: 0)))
        #expect(abs(circle.distanceToBoundary(Self.base.offset(north: 250, east: 0)) - 50) < 0.5)
        #expect(circle.polygons.isEmpty)
    }

    @Test func removedFencesAreNotFoundAndTheirSlotsAreReused() {
        var index = GeofenceIndex<Int>(reach: 25)
        index.insert(Geofence(id: 1, center: Self.base, radius: 100))
        index.insert(Geofence(id: 2, center: Self.base, radius: 50))
        index.remove(1)
        #expect(index.containing(Self.base) == [2] && index.count == 1)
        index.insert(Geofence(id: 3, center: Self.base, radius: 10))
        #expect(Set(index.containing(Self.base)) == [2, 3] && index.fence(1) == nil)
        index.insert(Geofence(id: 2, center: Self.base.offset(north: 5_000, east: 0), radius: 10))
        #expect(index.containing(Self.base) == [3], "a fence inserted again under its id replaces the old one")
    }

    /// The watch's events against a brute-force judge of every fence with the same rule,
    /// over a seeded random walk of many objects among many fences.
    @Test(arguments: [UInt64(7), 8, 9])
    func aRandomWalkGivesTheEventsOfABruteForceCheck(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        let margin = 25.0
        var watch = FenceWatch<Int, Int>(margin: margin)
        var fences: [Geofence<Int>] = []
        for id in 0..<300 {
            let center = random.point(near: Self.base, metres: 3_000)
            let fence =
                id.isMultiple(of: 2)
                ? Geofence(id: id, center: center, radius: Double.random(in: 30...400, using: &random))
                : Geofence(id: id, polygons: [Polygon(outline: Self.square(center, Double.random(in: 50...600, using: &random)))])
            fences.append(fence)
            watch.add(FenceRule(id: id, shape: .fixed(fence.area)))
        }
        var positions = (0..<25).map { _ in random.point(near: Self.base, metres: 3_000) }
        var bruteInside = [Set<Int>](repeating: [], count: positions.count)
        for step in 0..<400 {
            for object in positions.indices {
                positions[object] = random.point(near: positions[object], metres: 60)
                let events = watch.update(object, to: positions[object], at: Int64(step))
                var expected: Set<FenceEvent<Int, Int>> = []
                for fence in fences {
                    let edge = fence.distanceToBoundary(positions[object])
                    let distance = fence.contains(positions[object]) ? -edge : edge
                    let was = bruteInside[object].contains(fence.id)
                    let now = distance <= 0 || (was && distance <= margin)
                    if now != was {
                        expected.insert(FenceEvent(kind: now ? .enter : .exit, object: object, fence: fence.id, milliseconds: Int64(step)))
                        if now { bruteInside[object].insert(fence.id) } else { bruteInside[object].remove(fence.id) }
                    }
                }
                guard Set(events) == expected, events.count == expected.count else {
                    Issue.record("seed \(seed), step \(step), object \(object): \(events) against \(expected)")
                    return
                }
            }
        }
        #expect(positions.indices.allSatisfy { watch.fences(of: $0) == bruteInside[$0] })
    }

    @Test func jitterAtAnEdgeIsOneCrossing() {
        var watch = FenceWatch<String, String>(margin: 25)
        watch.add(FenceRule(id: "meet", shape: .fixed(Geofence(id: "meet", center: Self.base, radius: 100).area)))
        var events: [FenceEvent<String, String>] = []
        var random = SeededRandom(seed: 11)
        for step in 0..<200 {
            let metres = 100 + Double.random(in: -10...10, using: &random)
            events += watch.update("ann", to: Self.base.offset(north: metres, east: 0), at: Int64(step))
        }
        #expect(events.map(\.kind) == [.enter], "seed 11: \(events)")
        events = watch.update("ann", to: Self.base.offset(north: 130, east: 0), at: 300)
        #expect(events.map(\.kind) == [.exit])
    }

    @Test func aPositionOlderThanTheLatestIsIgnored() {
        var watch = FenceWatch<String, String>(margin: 25)
        watch.add(FenceRule(id: "zone", shape: .fixed(Geofence(id: "zone", center: Self.base, radius: 100).area)))
        #expect(watch.update("bo", to: Self.base, at: 1_000).map(\.kind) == [.enter])
        // A position from before, far outside, arrives late: nothing happens.
        #expect(watch.update("bo", to: Self.base.offset(north: 1_000, east: 0), at: 500).isEmpty)
        #expect(watch.stalePositions == 1 && watch.fences(of: "bo") == ["zone"])
        #expect(watch.update("bo", to: Self.base.offset(north: 1_000, east: 0), at: 2_000).map(\.kind) == [.exit])
    }

    @Test func dwellEventsComeOncePerStayAndAbsence() {
        var watch = FenceWatch<String, String>(margin: 25)
        let fence = Geofence(id: "lift", center: Self.base, radius: 100)
        watch.add(FenceRule(id: "lift", shape: .fixed(fence.area), detects: [.enter, .exit, .inside, .outside], dwellMilliseconds: 60_000))
        var kinds: [FenceEventKind] = []
        for second in stride(from: 0, through: 180, by: 30) {
            kinds += watch.update("cy", to: Self.base, at: Int64(second) * 1_000).map(\.kind)
        }
        #expect(kinds == [.enter, .inside])
        kinds = []
        for second in stride(from: 200, through: 400, by: 30) {
            kinds += watch.update("cy", to: Self.base.offset(north: 500, east: 0), at: Int64(second) * 1_000).map(\.kind)
        }
        #expect(kinds == [.exit, .outside])
    }

    /// An object that sends no position after it entered (or left) is reported `inside` (or
    /// `outside`) when time passes the dwell's end, at that moment, once.
    @Test func timePassingReportsTheDwellOfAnObjectThatSendsNothing() {
        var watch = FenceWatch<String, String>(margin: 25)
        let fence = Geofence(id: "meet", center: Self.base, radius: 100)
        watch.add(FenceRule(id: "meet", shape: .fixed(fence.area), detects: [.enter, .exit, .inside, .outside], dwellMilliseconds: 60_000))
        #expect(watch.update("di", to: Self.base, at: 10_000).map(\.kind) == [.enter])
        #expect(watch.advance(to: 69_999).isEmpty)
        #expect(watch.advance(to: 75_000) == [FenceEvent(kind: .inside, object: "di", fence: "meet", milliseconds: 70_000)])
        #expect(watch.advance(to: 200_000).isEmpty, "once per stay")
        #expect(watch.update("di", to: Self.base, at: 210_000).isEmpty)
        #expect(watch.update("di", to: Self.base.offset(north: 500, east: 0), at: 220_000).map(\.kind) == [.exit])
        #expect(watch.advance(to: 280_000) == [FenceEvent(kind: .outside, object: "di", fence: "meet", milliseconds: 280_000)])
        #expect(watch.advance(to: 400_000).isEmpty)
        // The same dwell noticed at a position carries the same moment.
        #expect(watch.update("di", to: Self.base, at: 500_000).map(\.kind) == [.enter])
        #expect(watch.update("di", to: Self.base, at: 600_000).last == FenceEvent(kind: .inside, object: "di", fence: "meet", milliseconds: 560_000))
    }

    @Test func aRoamingFenceFollowsItsAnchor() {
        var watch = FenceWatch<String, String>(margin: 25)
        watch.add(FenceRule(id: "near-guide", shape: .roaming(anchor: "guide", radius: 2_000), detects: [.enter, .exit]))
        #expect(watch.update("dee", to: Self.base, at: 0).isEmpty, "no anchor yet: nothing to judge")
        var events = watch.update("guide", to: Self.base.offset(north: 500, east: 0), at: 1)
        #expect(events == [FenceEvent(kind: .enter, object: "dee", fence: "near-guide", milliseconds: 1)])
        // The guide walks away: the traveller leaves the guide's fence without moving.
        events = watch.update("guide", to: Self.base.offset(north: 2_020, east: 0), at: 2)
        #expect(events.isEmpty, "within the margin")
        events = watch.update("guide", to: Self.base.offset(north: 2_100, east: 0), at: 3)
        #expect(events == [FenceEvent(kind: .exit, object: "dee", fence: "near-guide", milliseconds: 3)])
        #expect(watch.update("dee", to: Self.base.offset(north: 1_000, east: 0), at: 4).map(\.kind) == [.enter])
        #expect(watch.fences(of: "guide").isEmpty, "the anchor is never in its own fence")
        watch.remove("near-guide")
        #expect(watch.update("dee", to: Self.base.offset(north: 9_000, east: 0), at: 5).isEmpty && watch.fenceCount == 0)
    }
}
