import GondolaGeo
import Testing

/// Routing on small hand-built resorts.
@Suite struct RoutingTests {
    let bottom = GeoPoint(lat: 45.000, lon: 6.000, alt: 1300)
    let top = GeoPoint(lat: 45.020, lon: 6.000, alt: 2100)
    let bend = GeoPoint(lat: 45.010, lon: 6.015, alt: 1700)
    let steep = GeoPoint(lat: 45.010, lon: 6.001, alt: 1700)

    func graph(extra: [SkiWay] = []) -> SkiGraph {
        SkiGraph(
            ways: [
                SkiWay(kind: .lift, name: "Chair", difficulty: nil, aerialway: "chair_lift", coordinates: [bottom, top]),
                SkiWay(kind: .piste, name: "Long Blue", difficulty: .easy, aerialway: nil, coordinates: [top, bend, bottom]),
                SkiWay(kind: .piste, name: "Black Wall", difficulty: .advanced, aerialway: nil, coordinates: [top, steep, bottom]),
            ] + extra)
    }

    @Test func takesTheQuickestPisteAllowed() throws {
        let graph = graph()
        let any = try #require(graph.route(from: top, to: bottom))
        #expect(any.legs.map(\.name) == ["Black Wall"])
        #expect(any.legs[0].color == DifficultyColors.european.color(for: .advanced))
        #expect(abs(any.descent - 800) < 1e-9 && any.ascent == 0)
        let easy = try #require(graph.route(from: top, to: bottom, maxDifficulty: .intermediate))
        #expect(easy.legs.map(\.name) == ["Long Blue"])
        #expect(easy.legs[0].difficulty == .easy && easy.legs[0].color == "#1f6fd1")
        #expect(easy.duration > any.duration)
    }

    @Test func goesUpByLiftAndWalksToTheLine() throws {
        let start = GeoPoint(lat: 44.9995, lon: 6.0, alt: 1300)
        let route = try #require(graph().route(from: start, to: top))
        #expect(route.legs.map(\.kind) == [.walk, .lift])
        #expect(route.legs[1].duration == Geodesy.distance(bottom, top) / 2.5 + 60)
        #expect(abs(route.ascent - 800) < 1e-9)
        #expect(abs(route.distance - (Geodesy.distance(start, bottom) + Geodesy.distance(bottom, top))) < 1e-6)
    }

    @Test func unreachableTargetIsNoRoute() {
        let farBottom = GeoPoint(lat: 45.2, lon: 6.2, alt: 1000)
        let farTop = GeoPoint(lat: 45.22, lon: 6.2, alt: 1500)
        // An isolated piste: nothing leads from our lift system to its top.
        let isolated = SkiWay(kind: .piste, name: "Elsewhere", difficulty: .easy, aerialway: nil, coordinates: [farTop, farBottom])
        let graph = graph(extra: [isolated])
        #expect(graph.route(from: bottom, to: farTop) == nil)
        // Pistes are one-way: there is no way up without the lift's direction.
        let noLift = SkiGraph(ways: [SkiWay(kind: .piste, name: "Down", difficulty: .easy, aerialway: nil, coordinates: [top, bottom])])
        #expect(noLift.route(from: bottom, to: top) == nil)
        #expect(noLift.route(from: top, to: bottom)?.legs.map(\.name) == ["Down"])
    }

    @Test func nothingHarderThanTheCapEvenWhenItIsTheOnlyWay() {
        let graph = SkiGraph(ways: [
            SkiWay(kind: .lift, name: "Lift", difficulty: nil, aerialway: "gondola", coordinates: [bottom, top]),
            SkiWay(kind: .piste, name: "Couloir", difficulty: .expert, aerialway: nil, coordinates: [top, bottom]),
        ])
        #expect(graph.route(from: top, to: bottom, maxDifficulty: .advanced) == nil)
        #expect(graph.route(from: top, to: bottom, maxDifficulty: .expert)?.legs.map(\.name) == ["Couloir"])
    }
}
