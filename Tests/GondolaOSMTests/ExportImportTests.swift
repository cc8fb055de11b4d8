import Foundation
import GondolaGeo
import Testing

@testable import GondolaOSM

extension OSMImportSuites {
    /// Each real export imports with the counts its README documents, and the file the
    /// import writes loads as the hub's resort.
    @Suite struct ExportImportTests {
        @Test func winterPark() throws {
            let resort = Imported.winterPark
            let report = resort.report
            #expect(report.format == "OSM XML" && report.nodes == 13_868 && report.ways == 725 && report.relations == 16)
            #expect(report.lifts == ["chair_lift": 18, "gondola": 2, "magic_carpet": 3, "yes": 1])
            // 163 downhill ways: 161 lines and 2 areas (Sluice Box, Re-Railer); way 878422903 has no difficulty.
            #expect(report.pistes == ["novice": 1, "easy": 41, "intermediate": 62, "advanced": 52, "expert": 4, "unrated": 1])
            #expect(report.pisteAreas == ["intermediate": 1, "advanced": 1])
            #expect(Set(resort.areas.map(\.name)) == ["Sluice Box", "Re-Railer"])
            #expect(
                report.skipped == [
                    "proposed:aerialway": 3, "aerialway=station way": 3, "aerialway=station node": 37, "aerialway=pylon node": 264,
                    "piste:type=yes": 4, "piste:type=snow_park": 3, "piste:type=sled": 1, "piste:type=nordic": 1,
                ])
            // The boundary way is also an administrative boundary; the cabriolet and the 3 carpets lie outside it.
            #expect(report.boundary == #"way 460246666 "Winter Park Ski Area" (also boundary=administrative)"#)
            #expect(report.liftsOutsideBoundary == 4)
            #expect(resort.boundary.count == 1 && resort.boundary[0].rings[0].count == 122)
            #expect(resort.name == "Winter Park Ski Area")
            #expect(resort.colors == .northAmerican)
            #expect(report.altitudes == ["none": resort.lifts.flatMap(\.coordinates).count + resort.pistes.flatMap(\.coordinates).count])
            // Split runs keep their names on every piece.
            #expect(resort.pistes.filter { $0.name == "Village Way" }.count == 6)
            #expect(resort.pistes.filter { $0.name == "unnamed" }.count == 4)
        }

        @Test func taos() throws {
            let resort = Imported.taos
            let report = resort.report
            #expect(report.lifts == ["chair_lift": 9, "gondola": 1, "magic_carpet": 4])
            // 70 downhill ways plus the 8 relation members without piste tags of their own.
            #expect(report.pistes.values.reduce(0, +) == 78 && report.pistesFromRelations == 8)
            #expect(report.pistes == ["novice": 13, "easy": 13, "intermediate": 18, "advanced": 12, "expert": 22])
            #expect(report.pisteAreas.isEmpty)
            #expect(report.skipped == ["aerialway=station node": 18, "aerialway=pylon node": 97])
            // The multipolygon's two open outer ways (49 and 132 nodes) close into one ring of 180.
            #expect(resort.boundary.count == 1 && resort.boundary[0].rings.count == 1 && resort.boundary[0].rings[0].count == 180)
            #expect(report.boundary.hasPrefix("multipolygon relation 13573224 (Taos Ski Valley)"))
            // A relation named only through piste:name names its member, not the highway's name.
            #expect(resort.pistes.contains { $0.name == "Lower Patton" })
            #expect(!resort.pistes.contains { $0.name == "Williams Lake Trail #62" })
            // Way 580637615 has no difficulty of its own: it takes its relation's.
            #expect(!report.pistes.keys.contains("unrated"))
        }

        @Test func arapahoeBasin() throws {
            let resort = Imported.arapahoeBasin
            let report = resort.report
            #expect(report.lifts == ["chair_lift": 6, "magic_carpet": 1, "rope_tow": 1])
            #expect(report.pistes == ["novice": 1, "easy": 3, "intermediate": 31, "advanced": 43, "expert": 34, "freeride": 2, "extreme": 6])
            #expect(report.pisteAreas == ["expert": 5])
            #expect(report.skipped["abandoned:aerialway"] == 1 && report.skipped["piste:type=yes"] == 1 && report.skipped["piste:type=hike"] == 1)
            #expect(resort.lifts.contains { $0.name == "unnamed magic carpet" })
        }

        @Test func bearMountainGeoJSONWithoutBoundary() throws {
            let resort = Imported.bearMountain
            let report = resort.report
            #expect(report.format == "GeoJSON")
            #expect(report.lifts == ["chair_lift": 9])
            #expect(report.pistes == ["novice": 1, "easy": 5, "intermediate": 12, "advanced": 4, "expert": 3])
            #expect(report.skipped == ["aerialway=station node": 18])
            #expect(report.boundary.hasPrefix("none in the file"))
            // The fallback boundary holds every lift and piste.
            for way in resort.lifts + resort.pistes {
                for point in way.coordinates { #expect(resort.boundary[0].contains(point), "\(way.name) at \(point)") }
            }
            #expect(resort.name == "r")  // no boundary to name it: the id
        }

        /// The written file loads as the hub's resort, with its styles and attribution.
        @Test(arguments: ["winter_park_co.osm", "taos_nm.osm", "arapahoe_basin_co.osm", "bear_mountain_ca.geojson"])
        func writtenFileLoads(file: String) throws {
            let imported = Imported.named(file)
            let resort = try SkiResort(geoJSON: imported.geoJSON())
            #expect(resort.id == "r" && resort.name == imported.name)
            #expect(resort.ways.count == imported.lifts.count + imported.pistes.count)
            #expect(resort.areas.count == imported.areas.count)
            #expect(resort.attribution == "© OpenStreetMap contributors, ODbL 1.0")
            #expect(resort.graph.colors == .northAmerican)
            #expect(resort.boundary == imported.boundary.map { Polygon(rings: $0.rings.map { $0.map(Self.rounded) }) })
            #expect(resort.graph.ways.count >= resort.ways.count)
        }

        static func rounded(_ point: GeoPoint) -> GeoPoint {
            GeoPoint(lat: (point.lat * 1e7).rounded() / 1e7, lon: (point.lon * 1e7).rounded() / 1e7, alt: point.alt)
        }

        /// Every difficulty a resort has is drawn distinctly: no two share colour and pattern.
        @Test func difficultiesAreDistinct() {
            for scheme in DifficultyColors.schemes {
                let styles = Difficulty.allCases.map { scheme.style(for: $0) } + [DifficultyColors.unrated]
                #expect(Set(styles.map { "\($0.color) \($0.pattern)" }).count == styles.count, "\(scheme.scheme)")
            }
        }
    }
}
