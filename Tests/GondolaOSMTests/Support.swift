import Foundation
import Testing

@testable import GondolaOSM

/// Every suite of this target, one test at a time: an import is seconds of synchronous
/// work in a debug build, and the cooperative pool has two threads here, which the
/// other targets' tests (servers, clients, their deadlines) need too.
@Suite(.serialized) enum OSMImportSuites {}

/// The OpenStreetMap exports in `data/osm` (ODbL 1.0, see its README).
enum Exports {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("data/osm")

    static func data(_ name: String) throws -> Data { try Data(contentsOf: folder.appendingPathComponent(name)) }
}

/// Each export imported once for the whole target (a debug build takes about a second for
/// Winter Park, and suites of other modules share the two cores).
enum Imported {
    static func resort(_ file: String) throws -> ImportedResort {
        try ResortImporter.importResort(OSMReader.read(Exports.data(file)), id: "r", name: nil, elevation: nil, file: file)
    }

    static let winterPark = try! resort("winter_park_co.osm")
    static let taos = try! resort("taos_nm.osm")
    static let arapahoeBasin = try! resort("arapahoe_basin_co.osm")
    static let bearMountain = try! resort("bear_mountain_ca.geojson")

    static func named(_ file: String) -> ImportedResort {
        switch file {
        case "winter_park_co.osm": winterPark
        case "taos_nm.osm": taos
        case "arapahoe_basin_co.osm": arapahoeBasin
        default: bearMountain
        }
    }
}
