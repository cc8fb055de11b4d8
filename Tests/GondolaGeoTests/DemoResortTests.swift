import Foundation
import GondolaGeo
import Testing

@Suite struct DemoResortTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../resorts")

    func load() throws -> (SkiResort, ElevationGrid) {
        let dem = try ElevationGrid(contentsOf: Self.folder.appendingPathComponent("demo.asc"))
        let resort = try SkiResort(geoJSON: Data(contentsOf: Self.folder.appendingPathComponent("demo.geojson")), elevation: dem)
        return (resort, dem)
    }

    @Test func loadsWithEveryDifficultyAndEnoughLifts() throws {
        let (resort, dem) = try load()
        #expect(resort.id == "demo")
        #expect(resort.ways.filter { $0.kind == .lift }.count >= 6)
        #expect(resort.ways.filter { $0.kind == .piste }.count >= 20)
        // Every difficulty but extreme, which needs climbing gear and has no place in a demo.
        #expect(Set(resort.ways.compactMap(\.difficulty)) == Set(Difficulty.allCases).subtracting([.extreme]))
        #expect(dem.columns == 200 && dem.rows == 200)
        // About 5 km each way.
        let box = dem.bounds
        let width = Geodesy.distance(GeoPoint(lat: box.minLat, lon: box.minLon), GeoPoint(lat: box.minLat, lon: box.maxLon))
        #expect(abs(width - 5000) < 50)
        for way in resort.ways {
            let first = try #require(way.coordinates.first?.alt)
            let last = try #require(way.coordinates.last?.alt)
            #expect(way.kind == .lift ? last > first : last < first, "\(way.name) runs the wrong way")
        }
    }

    @Test func everyLiftTopRoutesToTheBase() throws {
        let (resort, _) = try load()
        for lift in resort.ways where lift.kind == .lift {
            let route = try #require(resort.graph.route(from: lift.coordinates.last!, to: resort.base), "no route from \(lift.name)")
            #expect(route.descent > 0)
            #expect(route.legs.contains { $0.kind == .piste })
            #expect(route.legs.allSatisfy { $0.kind != .lift || $0.coordinates.last!.alt! > $0.coordinates.first!.alt! })
        }
        let beginner = try #require(
            resort.graph.route(
                from: resort.ways.first { $0.name == "Summit Express" }!.coordinates.last!,
                to: resort.base, maxDifficulty: .easy))
        #expect(beginner.legs.allSatisfy { ($0.difficulty ?? .novice) <= .easy })
    }

    @Test func mapSelectionAroundTheDemoResort() throws {
        let (resort, dem) = try load()
        let selector = MapSelector(
            resorts: [ResortArea(id: resort.id, boundary: resort.boundary, baseElevation: resort.baseElevation)], elevation: [dem])
        #expect(selector.choose(for: GeoPoint(lat: resort.base.lat, lon: resort.base.lon)) == .mountain("demo"))
        #expect(selector.choose(for: GeoPoint(lat: 45.0, lon: 6.0)) == .street)
        #expect(selector.altitude(of: resort.base).map { abs($0 - resort.baseElevation) < 5 } == true)
    }
}
