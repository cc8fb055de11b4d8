import Foundation
import GondolaGeo
import Testing

@testable import GondolaOSM

extension OSMImportSuites {
    /// Overpass API JSON in both of its shapes, `ele` tags, and altitudes from a DEM
    /// (ESRI ASCII grid or SRTM tile).
    @Suite struct OverpassAndElevationTests {
        /// A lift and a run, the run only through its route relation, and a boundary of two open ways.
        static let body = """
            {"version": 0.6, "generator": "Overpass API", "elements": [
              {"type": "node", "id": 1, "lat": 45.000, "lon": 7.000, "tags": {"ele": "1500"}},
              {"type": "node", "id": 2, "lat": 45.010, "lon": 7.000, "tags": {"ele": "6562 ft"}},
              {"type": "node", "id": 3, "lat": 44.990, "lon": 6.990},
              {"type": "node", "id": 4, "lat": 45.020, "lon": 6.990},
              {"type": "node", "id": 5, "lat": 45.020, "lon": 7.010},
              {"type": "node", "id": 6, "lat": 44.990, "lon": 7.010},
              {"type": "way", "id": 10, "nodes": [1, 2], "tags": {"aerialway": "chair_lift", "name": "Up"}},
              {"type": "way", "id": 11, "nodes": [2, 1], "tags": {"highway": "track", "name": "Forest Road 12"}},
              {"type": "way", "id": 12, "nodes": [3, 4, 5]},
              {"type": "way", "id": 13, "nodes": [3, 6, 5]},
              {"type": "relation", "id": 20, "members": [{"type": "way", "ref": 11, "role": ""}],
               "tags": {"type": "route", "route": "piste", "piste:type": "downhill", "piste:difficulty": "easy", "piste:name": "Down"}},
              {"type": "relation", "id": 21, "members": [{"type": "way", "ref": 12, "role": "outer"}, {"type": "way", "ref": 13, "role": "outer"}],
               "tags": {"type": "multipolygon", "landuse": "winter_sports", "name": "Little Hill"}}
            ]}
            """

        @Test func overpassBody() throws {
            let resort = try ResortImporter.importResort(
                OSMReader.read(Data(Self.body.utf8)), id: "hill", name: nil, elevation: nil, file: "hill.json")
            #expect(resort.report.format == "Overpass JSON")
            #expect(resort.report.lifts == ["chair_lift": 1] && resort.report.pistes == ["easy": 1] && resort.report.pistesFromRelations == 1)
            #expect(resort.pistes[0].name == "Down")
            #expect(resort.name == "Little Hill" && resort.boundary[0].rings[0].count == 5)
            // ele tags give the altitudes, feet converted.
            #expect(resort.lifts[0].coordinates.map(\.alt) == [1500, 6562 * 0.3048])
            #expect(resort.report.altitudes == ["ele": 4])
            // With altitudes, the base is the lowest bottom station.
            #expect(resort.base == resort.lifts[0].coordinates[0])
        }

        @Test func overpassGeometryInline() throws {
            let geom = """
                {"elements": [
                  {"type": "way", "id": 10, "tags": {"aerialway": "t-bar", "name": "Up"}, "geometry": [{"lat": 45.0, "lon": 7.0}, {"lat": 45.01, "lon": 7.0}]},
                  {"type": "relation", "id": 21, "tags": {"type": "multipolygon", "landuse": "winter_sports", "name": "Inline"}, "members": [
                    {"type": "way", "ref": 12, "role": "outer", "geometry": [{"lat": 44.99, "lon": 6.99}, {"lat": 45.02, "lon": 6.99}, {"lat": 45.02, "lon": 7.01}]},
                    {"type": "way", "ref": 13, "role": "outer", "geometry": [{"lat": 45.02, "lon": 7.01}, {"lat": 44.99, "lon": 7.01}, {"lat": 44.99, "lon": 6.99}]}]}
                ]}
                """
            let resort = try ResortImporter.importResort(OSMReader.read(Data(geom.utf8)), id: "hill", name: "Hill", elevation: nil, file: "hill.json")
            #expect(resort.report.lifts == ["t-bar": 1])
            #expect(resort.boundary.count == 1 && resort.boundary[0].rings[0].count == 5 && resort.name == "Hill")
        }

        /// A synthetic 3 arc-second tile whose height rises 1 m per sample northwards and 2 m eastwards.
        static func tile() -> Data {
            var bytes = [UInt8](repeating: 0, count: 1201 * 1201 * 2)
            for row in 0..<1201 {
                for column in 0..<1201 {
                    let height = UInt16(1000 + (1200 - row) + 2 * column)
                    let index = 2 * (row * 1201 + column)
                    bytes[index] = UInt8(height >> 8)
                    bytes[index + 1] = UInt8(height & 0xFF)
                }
            }
            // A void in the south-west corner.
            bytes[2 * (1200 * 1201)] = 0x80
            bytes[2 * (1200 * 1201) + 1] = 0x00
            return Data(bytes)
        }

        @Test func srtmTile() throws {
            let grid = try ElevationGrid(hgt: Self.tile(), named: "N44E006.hgt")
            let step = 1.0 / 1200
            #expect(abs(grid.elevation(at: GeoPoint(lat: 45, lon: 7))! - (1000 + 1200 + 2400)) < 1e-6)
            #expect(abs(grid.elevation(at: GeoPoint(lat: 44 + 600 * step, lon: 6 + 300 * step))! - (1000 + 600 + 600)) < 1e-6)
            #expect(grid.value(column: 0, rowFromSouth: 0) == nil)
            #expect(throws: SRTMTileError(message: "dem.hgt: an SRTM tile is named by its south-west corner, like N39W106.hgt")) {
                try ElevationGrid(hgt: Self.tile(), named: "dem.hgt")
            }
            #expect(
                throws: SRTMTileError(message: "N44E006.hgt: 10 bytes is not an SRTM tile (1201² or 3601² 16-bit samples: 2884802 or 25934402 bytes)")
            ) {
                try ElevationGrid(hgt: Data(count: 10), named: "N44E006.hgt")
            }
        }

        @Test func croppedGridRoundTripsThroughASCII() throws {
            let grid = try ElevationGrid(hgt: Self.tile(), named: "N44E006.hgt")
            let box = BoundingBox(minLat: 44.99, minLon: 6.99, maxLat: 45.0, maxLon: 7.0)
            let cropped = try #require(grid.cropped(to: box))
            #expect(cropped.columns < 20 && cropped.rows < 20)
            let read = try ElevationGrid(asciiGrid: cropped.asciiGrid())
            var random = SeededRandom(seed: 7)
            for _ in 0..<50 {
                let point = GeoPoint(lat: 44.99 + Double(random.next() % 1000) / 100_000, lon: 6.99 + Double(random.next() % 1000) / 100_000)
                let expected = try #require(grid.elevation(at: point))
                #expect(abs(try #require(read.elevation(at: point)) - expected) < 0.051, "at \(point) (seed 7)")
            }
        }

        @Test func aDEMGivesAltitudesAndTurnsRunsDownhill() throws {
            // The same file without ele tags, and its run drawn uphill.
            let plain = Self.body.replacingOccurrences(of: #", "tags": {"ele": "1500"}"#, with: "")
                .replacingOccurrences(of: #", "tags": {"ele": "6562 ft"}"#, with: "")
            let grid = try ElevationGrid(hgt: Self.tile(), named: "N45E006.hgt")
            let imported = try ResortImporter.importResort(
                OSMReader.read(Data(plain.utf8)), id: "hill", name: nil, elevation: grid, file: "hill.json")
            #expect(imported.report.altitudes == ["dem": 4])
            let resort = try SkiResort(geoJSON: imported.geoJSON())
            let run = try #require(resort.ways.first { $0.kind == .piste })
            #expect(run.coordinates.first!.alt! > run.coordinates.last!.alt!)
            #expect(resort.base.alt != nil)
        }
    }
}
