import Foundation
import GondolaGeo
import Testing

@testable import GondolaOSM

extension OSMImportSuites {
    /// The ski graph on real data: runs cut where others join them, routes between
    /// real lift stations with a difficulty cap, and the report of unreachable pieces.
    @Suite struct RealResortRoutingTests {
        static let winterPark = try! SkiResort(geoJSON: Imported.winterPark.geoJSON())

        func lift(_ name: String) throws -> SkiWay { try #require(Self.winterPark.ways.first { $0.kind == .lift && $0.name == name }) }

        @Test func routeBetweenTwoLiftStationsUsesLiftsAndPistes() throws {
            let graph = Self.winterPark.graph
            let from = try lift("Explorer Express").coordinates.first!
            let to = try lift("Panoramic Express").coordinates.last!
            let route = try #require(graph.route(from: from, to: to))
            #expect(route.legs.contains { $0.kind == .lift && $0.name == "Panoramic Express" })
            #expect(route.legs.contains { $0.kind == .piste })
            // The pieces of one run travelled in a row are one leg.
            for (a, b) in zip(route.legs, route.legs.dropFirst()) where a.kind != .walk {
                #expect(!(a.kind == b.kind && a.name == b.name && a.coordinates.last == b.coordinates.first), "\(a.name) split in two legs")
            }
            #expect(route.duration > 0 && route.distance > 1000)
        }

        @Test func aDifficultyCapKeepsHarderAndUnratedRunsOut() throws {
            let graph = Self.winterPark.graph
            let from = try lift("The Gondola").coordinates.last!
            let to = try lift("Gemini Express").coordinates.first!
            let open = try #require(graph.route(from: from, to: to))
            let capped = try #require(graph.route(from: from, to: to, maxDifficulty: .easy))
            for leg in capped.legs where leg.kind == .piste {
                let difficulty = try #require(leg.difficulty, "an unrated run in a capped route: \(leg.name)")
                #expect(difficulty <= .easy, "\(leg.name) is \(difficulty)")
            }
            #expect(capped.duration >= open.duration)
        }

        @Test func runsAreCutWhereOtherWaysJoinThem() {
            let graph = Self.winterPark.graph
            #expect(graph.ways.count > Self.winterPark.ways.count)
            // Every piece keeps its way's name, kind and difficulty, and the pieces of a way chain end to start.
            for (index, piece) in graph.ways.enumerated() {
                let source = Self.winterPark.ways[graph.sourceOfWay[index]]
                #expect(piece.name == source.name && piece.kind == source.kind && piece.difficulty == source.difficulty)
            }
            for (index, next) in zip(graph.ways.indices, graph.ways.indices.dropFirst()) where graph.sourceOfWay[index] == graph.sourceOfWay[next] {
                #expect(graph.ways[index].coordinates.last == graph.ways[next].coordinates.first)
            }
        }

        @Test func aRunEndingOnAnotherRunsMiddleJoinsIt() throws {
            let start = GeoPoint(lat: 45, lon: 7)
            let main = SkiWay(
                kind: .piste, name: "main", difficulty: .easy, aerialway: nil,
                coordinates: [start, start.offset(north: -500, east: 0), start.offset(north: -1000, east: 0)])
            let side = SkiWay(
                kind: .piste, name: "side", difficulty: .easy, aerialway: nil,
                coordinates: [start.offset(north: -200, east: 800), start.offset(north: -500, east: 5)])
            let lift = SkiWay(
                kind: .lift, name: "lift", difficulty: nil, aerialway: "chair_lift",
                coordinates: [start.offset(north: -1000, east: 0), start.offset(north: -200, east: 800)])
            let graph = SkiGraph(ways: [main, side, lift], walkMetres: 10)
            #expect(graph.ways.count == 4)
            let route = try #require(graph.route(from: start.offset(north: -200, east: 800), to: start.offset(north: -1000, east: 0)))
            #expect(route.legs.map(\.name) == ["side", "main"])
            // From the bottom: the lift, the side run and the lower half of the main run; its top half starts where nothing arrives.
            let report = graph.unreachable(from: start.offset(north: -1000, east: 0))
            #expect(report.notReached == [0] && report.noWayBack.isEmpty)
        }

        @Test func unreachablePiecesAreReported() {
            let start = GeoPoint(lat: 45, lon: 7)
            let lift = SkiWay(
                kind: .lift, name: "lift", difficulty: nil, aerialway: "chair_lift",
                coordinates: [start, start.offset(north: 1000, east: 0)])
            let home = SkiWay(
                kind: .piste, name: "home", difficulty: .easy, aerialway: nil,
                coordinates: [start.offset(north: 1000, east: 0), start.offset(north: 0, east: 5)])
            let island = SkiWay(
                kind: .piste, name: "island", difficulty: .easy, aerialway: nil,
                coordinates: [start.offset(north: 3000, east: 3000), start.offset(north: 2000, east: 3000)])
            let graph = SkiGraph(ways: [lift, home, island])
            let (notReached, noWayBack) = graph.unreachable(from: start)
            #expect(notReached == [2] && noWayBack == [2])
        }

        @Test func theImportReportsUnreachableRuns() throws {
            let imported = Imported.winterPark
            // The Village Cabriolet runs from the town's parking to the village, apart from the ski graph.
            #expect(imported.report.notReachedFromBase.contains("Village Cabriolet"))
            #expect(imported.report.lines.contains { $0.hasPrefix("not reachable from the base: \(imported.report.notReachedFromBase.count): ") })
        }
    }

    /// What `gondola-load travellers --resort` does on a real resort: simulated skiers
    /// ride its lifts and ski its runs, and stay on the mountain.
    @Suite struct RealResortWalkerTests {
        @Test func walkersRideAndSkiWinterPark() {
            let resort = RealResortRoutingTests.winterPark
            let graph = resort.graph
            let reach = resort.boundary.map { Polygon(rings: $0.rings) }
            var kinds: [SkiWay.Kind: Int] = [:]
            for index in 0..<20 {
                var walker = SkiWalker(graph: graph, node: index * 7, seed: UInt64(index) + 35)
                // An hour in ten-second steps.
                for _ in 0..<360 {
                    let point = walker.advance(in: graph, seconds: 10)
                    if let way = walker.leg.way { kinds[graph.ways[way].kind, default: 0] += 1 }
                    let inside = reach.contains { $0.contains(point) || $0.distanceToBoundary(point) < 3000 }
                    #expect(inside, "walker \(index) (seed \(UInt64(index) + 35)) left the resort at \(point)")
                }
                #expect(walker.legsTaken > 3, "walker \(index) (seed \(UInt64(index) + 35)) took \(walker.legsTaken) legs in an hour")
            }
            #expect(kinds[.lift, default: 0] > 0 && kinds[.piste, default: 0] > 0)
        }
    }
}
