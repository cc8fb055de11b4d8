import Foundation
import GondolaGeo

/// The regions positions travel in between the nodes of a cluster (see
/// `Node.replicate(topic:region:_:)`): a traveller on a resort's mountain map is in
/// that resort's region (`resort:<id>`), anyone else in a cell of a coarse grid
/// (`cell:<row>:<column>`, `cellDegrees` on a side, about 55 km north to south). A
/// node follows the regions its watchers can see, so no node applies every position
/// of the world.
struct TravelRegions: Sendable {
    /// The grid's cell side, in degrees of latitude and longitude.
    static let cellDegrees = 0.5
    /// Most cells a watcher follows (a very large radius follows the nearest ones).
    static let maxCellsPerWatcher = 64

    let selector: MapSelector

    /// The region of a position whose map is `choice`.
    func region(of point: GeoPoint, choice: MapChoice) -> String {
        if let resort = choice.resort { return "resort:\(resort)" }
        return Self.cell(row: Self.index(point.lat), column: Self.index(Geodesy.normalizedLongitude(point.lon)))
    }

    /// The regions a watcher at `point` sees within `radius` metres: the cells the
    /// circle touches, and the resorts whose boundary box it touches (grown by twice
    /// the selector's margin, as far as a traveller may stay on a resort's map).
    func regions(near point: GeoPoint, radius: Double) -> Set<String> {
        let box = BoundingBox(around: point, radius: radius + 2 * selector.margin)
        var regions: Set<String> = []
        for resort in selector.resorts where resort.boundary.bounds.intersects(box) { regions.insert("resort:\(resort.id)") }
        let rows = Self.index(box.minLat)...Self.index(box.maxLat)
        for range in box.longitudeRanges {
            for row in rows {
                for column in Self.index(range.lowerBound)...Self.index(min(range.upperBound, 180 - 1e-9)) {
                    guard regions.count < Self.maxCellsPerWatcher else { return regions }
                    regions.insert(Self.cell(row: row, column: column))
                }
            }
        }
        return regions
    }

    private static func index(_ degrees: Double) -> Int {
        Int((degrees / cellDegrees).rounded(.down))
    }

    private static func cell(row: Int, column: Int) -> String {
        "cell:\(row):\(column)"
    }
}
