/// When something last changed in each cell of a coarse latitude/longitude grid,
/// so a nearby watcher can tell whether anything in reach moved since its last
/// frame without scanning the travellers around it.
///
/// Stamps are change numbers (`ProximityMap.version`). Only cells changed within the
/// last interval matter (every watcher looks at least once per interval), so
/// `forget(notAfter:)` keeps the grid as small as the cells touched in one interval.
public struct ChangeGrid: Sendable {
    let cellDegrees: Double
    let columns: Int64
    let rows: Int64
    /// The last change number of each cell that changed since the last `forget`.
    public private(set) var stamps: [Int64: Int] = [:]

    public init(cellMetres: Double) {
        cellDegrees = Geodesy.latitudeDegrees(metres: cellMetres)
        columns = Int64((360 / cellDegrees).rounded(.up))
        rows = Int64((180 / cellDegrees).rounded(.up))
    }

    private func row(_ lat: Double) -> Int64 { min(max(0, Int64(((lat + 90) / cellDegrees).rounded(.down))), rows - 1) }
    private func column(_ lon: Double) -> Int64 { min(max(0, Int64(((lon + 180) / cellDegrees).rounded(.down))), columns - 1) }

    /// Records change number `version` at `point`.
    public mutating func mark(_ point: GeoPoint, version: Int) {
        stamps[row(point.lat) * columns + column(point.lon)] = version
    }

    /// Whether a cell that `box` touches changed after change number `version`.
    public func changed(in box: BoundingBox, after version: Int) -> Bool {
        let rowRange = row(box.minLat)...row(box.maxLat)
        let columnRanges = box.crossesAntimeridian
            ? [column(box.minLon)...(columns - 1), 0...column(box.maxLon)]
            : [column(box.minLon)...column(box.maxLon)]
        let cellCount = columnRanges.reduce(0) { $0 + Int64($1.count) } * Int64(rowRange.count)
        // A box covering more cells than were stamped is cheaper to check through the stamps.
        if cellCount > Int64(stamps.count) {
            return stamps.contains { key, stamp in
                stamp > version && rowRange.contains(key / columns) && columnRanges.contains { $0.contains(key % columns) }
            }
        }
        for r in rowRange {
            for range in columnRanges {
                for c in range where (stamps[r * columns + c] ?? 0) > version { return true }
            }
        }
        return false
    }

    /// Drops the stamps of cells unchanged after change number `version`.
    public mutating func forget(notAfter version: Int) {
        stamps = stamps.filter { $0.value > version }
    }
}
