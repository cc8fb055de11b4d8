import GondolaGeo
import GondolaHub
import GondolaProtocol
import Testing

@testable import GondolaTravel

/// Fence definitions as hosts send them: GeoJSON read into polygons with holes, the
/// limits, and a stored fence read back as it was defined.
@Suite struct TripFenceTests {
    /// A square ring around (45.3, 6.6) of `half` degrees, counterclockwise unless `clockwise`.
    static func square(_ half: Double, clockwise: Bool = false) -> JSON {
        var corners = [[6.6 - half, 45.3 - half], [6.6 + half, 45.3 - half], [6.6 + half, 45.3 + half], [6.6 - half, 45.3 + half]]
        if clockwise { corners.reverse() }
        corners.append(corners[0])
        return .array(corners.map { .array($0.map(JSON.double)) })
    }

    static func request(_ geometry: JSON) -> JSON {
        ["trip": "t1", "name": "Zone", "geometry": geometry]
    }

    @Test func aMultiPolygonWithAHoleIsReadAndContainsWhatItShould() throws {
        let geometry: JSON = [
            "type": "MultiPolygon",
            "coordinates": .array([.array([Self.square(0.01), Self.square(0.002, clockwise: true)]), .array([Self.square(0.001)])]),
        ]
        let definition = try FenceDefinition.decode(Self.request(geometry))
        guard case let .polygons(polygons, kept) = definition.shape else {
            Issue.record("not polygons")
            return
        }
        #expect(polygons.count == 2 && kept == geometry)
        let fence = Geofence(id: 0, polygons: polygons)
        #expect(fence.contains(GeoPoint(lat: 45.3 + 0.005, lon: 6.6)))
        #expect(fence.contains(GeoPoint(lat: 45.3, lon: 6.6)), "inside the second polygon, within the first's hole")
        #expect(!fence.contains(GeoPoint(lat: 45.3 + 0.0015, lon: 6.6)), "in the hole, outside the second polygon")
        #expect(definition.detects == [.enter, .exit] && definition.users == nil && definition.dwellMilliseconds == 0)
    }

    @Test func eachProblemIsNamed() {
        let many = JSON.array((0..<1_001).map { index in .array([.double(6.6 + Double(index) * 1e-5), .double(45.3)]) })
        let cases: [(JSON, String)] = [
            (["type": "Polygon", "coordinates": .array([Self.square(0.01, clockwise: true)])], "counterclockwise"),
            (["type": "Polygon", "coordinates": .array([Self.square(0.01), Self.square(0.002)])], "hole 1 runs counterclockwise"),
            (["type": "Polygon", "coordinates": .array([many])], "more than 1000"),
            (["type": "Polygon", "coordinates": [[[6.6, 45.3], [6.7, 45.3]]]], "at least 4"),
            (["type": "Polygon", "coordinates": [[["6.6", 45.3]]]], "[longitude, latitude]"),
            (["type": "Polygon"], "non-empty array of rings"),
            (["type": "LineString", "coordinates": [[6.6, 45.3], [6.7, 45.3]]], "Polygon or MultiPolygon"),
        ]
        for (geometry, words) in cases {
            do {
                _ = try FenceDefinition.decode(Self.request(geometry))
                Issue.record("accepted \(geometry.text)")
            } catch {
                #expect("\(error)".contains(words), "\(error) should say \(words)")
            }
        }
    }

    @Test func aStoredFenceReadsBackAsDefined() throws {
        let request = try FenceDefinition.decode([
            "trip": "t1", "name": "Guide", "roaming": ["user": "guide", "radius": 2000], "detect": ["outside", "exit"], "dwell_ms": 60_000,
            "users": ["bob", "alice", "bob"],
        ])
        let fence = TripFence(
            id: "f1", trip: "t1", name: request.name, shape: request.shape, detects: request.detects, dwellMilliseconds: request.dwellMilliseconds,
            users: request.users, createdBy: "hana", createdAt: 5)
        #expect(fence.users == ["alice", "bob"])
        let stored = try TripFence(id: "f1", trip: "t1", definition: fence.definition.text, createdBy: "hana", createdAt: 5)
        #expect(stored == fence)
        #expect(fence.json["detect"] == ["exit", "outside"])
    }
}
