/// When something last changed in each cell of a coarse latitude/longitude grid,
/// so a nearby watcher can tell whether anything in reach moved since its last
/// frame without scanning the travellers around it.
///
/// Stamps are change numbers (`ProximityMap.version`). Only cells changed within the
/// last interval matter (every watcher looks at least once per interval), so
/// `forget(notAfter:)` keeps the grid as small as the cells touched in one interval.
public struct ChangeGrid: Sendable {
    let cells: GridCells
    /// The last change number of each cell that changed since the last `forget`.
    public private(set) var stamps: [Int64: Int] = [:]

    public init(cellMetres: Double) {
        cells = GridCells(cellMetres: cellMetres)
    }

    /// Records change number `version` at `point`.
    public mutating func mark(_ point: GeoPoint, version: Int) {
        stamps[cells.key(lat: point.lat, lon: point.lon)] = version
    }

    /// Whether a cell that `box` touches changed after change number `version`.
    public func changed(in box: BoundingBox, after version: Int) -> Bool {
        let ranges = cells.ranges(of: box)
        // A box covering more cells than were stamped is cheaper to check through the stamps.
        if ranges.count > Int64(stamps.count) {
            return stamps.contains { key, stamp in stamp > version && cells.contains(ranges, key) }
        }
        return changed(rows: ranges.rows, columns: ranges.columns, after: version)
            || ranges.wrapped.map { changed(rows: ranges.rows, columns: $0, after: version) } == true
    }

    private func changed(rows: ClosedRange<Int64>, columns: ClosedRange<Int64>, after version: Int) -> Bool {
        for row in rows {
            for column in columns where (stamps[row * cells.columns + column] ?? 0) > version { return true }
        }
        return false
    }

    /// Drops the stamps of cells unchanged after change number `version`.
    public mutating func forget(notAfter version: Int) {
        stamps = stamps.filter { $0.value > version }
    }
}
