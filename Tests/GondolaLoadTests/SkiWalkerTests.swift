import Foundation
import GondolaGeo
import Testing

/// The traveller scenario's planner: simulated skiers move along the ski graph.
@Suite struct SkiWalkerTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../resorts")

    func demo() throws -> SkiResort {
        let dem = try ElevationGrid(contentsOf: Self.folder.appendingPathComponent("demo.asc"))
        return try SkiResort(geoJSON: Data(contentsOf: Self.folder.appendingPathComponent("demo.geojson")), elevation: dem)
    }

    @Test func routesFollowTheGraphAtPlausibleSpeeds() throws {
        let graph = try demo().graph
        let fastest = max(graph.speeds.skiing.values.max()!, graph.speeds.lifts.values.max()!)
        var kinds: Set<SkiWay.Kind> = []
        for index in 0..<40 {
            var walker = SkiWalker(graph: graph, node: index, seed: UInt64(index))
            var previous = walker.position(in: graph)
            var leg = walker.leg
            var from = walker.from
            // Two simulated hours in one-second steps.
            for _ in 0..<7200 {
                let point = walker.advance(in: graph, seconds: 1)
                // Never faster than the fastest lift or piste (a straight line is at most the path),
                // but for the shift between two ways' ends that are one node.
                let changed = walker.leg != leg || walker.from != from
                #expect(Geodesy.distance(previous, point) <= fastest + 0.5 + (changed ? 2 * graph.snapMetres : 0))
                if walker.leg != leg || walker.from != from {
                    // A new leg starts where the last one ended, and is a way out of that node.
                    #expect(walker.from == leg.to)
                    #expect(graph.departures(from: walker.from).contains(walker.leg))
                    leg = walker.leg
                    from = walker.from
                }
                if let way = walker.leg.way {
                    let speed = walker.speed(in: graph)
                    kinds.insert(graph.ways[way].kind)
                    #expect(speed >= 1 && speed <= fastest, "\(graph.ways[way].name) at \(speed) m/s")
                }
                previous = point
            }
            #expect(walker.legsTaken > 5, "walker \(index) took only \(walker.legsTaken) legs in two hours")
        }
        #expect(kinds == [.lift, .piste])
    }

    @Test func liftsRideUpAndPistesRunDown() throws {
        let graph = try demo().graph
        var walker = SkiWalker(graph: graph, node: 0, seed: 7)
        var checked = 0
        for _ in 0..<500 {
            let leg = walker.leg
            let start = walker.position(in: graph)
            let length = walker.length(in: graph) - walker.metres
            let speed = walker.speed(in: graph)
            // Stop just short of the end of the leg.
            let end = walker.advance(in: graph, seconds: max(0, (length - 1) / speed))
            guard walker.leg == leg, let way = leg.way, let startAlt = start.alt, let endAlt = end.alt, length > 100 else {
                _ = walker.advance(in: graph, seconds: 2)
                continue
            }
            if graph.ways[way].kind == .lift { #expect(endAlt > startAlt, "\(graph.ways[way].name)") }
            if graph.ways[way].kind == .piste { #expect(endAlt < startAlt, "\(graph.ways[way].name)") }
            checked += 1
            _ = walker.advance(in: graph, seconds: 2)
        }
        #expect(checked > 50)
    }

    @Test func theSameSeedWalksTheSameRoute() throws {
        let graph = try demo().graph
        var a = SkiWalker(graph: graph, node: 3, seed: 42)
        var b = SkiWalker(graph: graph, node: 3, seed: 42)
        for _ in 0..<600 { #expect(a.advance(in: graph, seconds: 5) == b.advance(in: graph, seconds: 5)) }
    }

    @Test func aWalkerAtADeadEndWalksOutToTheNearestWayOut() {
        let lift = SkiWay(
            kind: .lift, name: "lonely", difficulty: nil, aerialway: "chair_lift",
            coordinates: [GeoPoint(lat: 45, lon: 6, alt: 1000), GeoPoint(lat: 45.01, lon: 6, alt: 1400)])
        let graph = SkiGraph(ways: [lift])
        var walker = SkiWalker(graph: graph, node: 0, seed: 1)
        // Up the lift (1,112 m at 2.5 m/s after 60 s boarding), then nothing leaves the top but the walk back down.
        while walker.legsTaken == 0 { _ = walker.advance(in: graph, seconds: 10) }
        #expect(walker.leg.way == nil && walker.leg.to == graph.nearestNode(to: lift.coordinates[0]))
        while walker.legsTaken == 1 { _ = walker.advance(in: graph, seconds: 10) }
        #expect(walker.leg.way == 0)
        // A route never takes such a walk: there is no way from the top to the bottom.
        #expect(graph.route(from: lift.coordinates[1], to: lift.coordinates[0]) == nil)
    }
}
