import Foundation

/// A match of a `PointGrid` radius query: the slot, its distance from the centre
/// and its position as the grid holds it (32 bytes, so sorting matches moves little).
public struct GridMatch: Sendable {
    public var distance: Double
    public var lat: Double
    public var lon: Double
    /// The altitude in metres as the grid keeps it (a `Float`), NaN when the point has none.
    @usableFromInline var storedAlt: Float
    public var slot: Int32

    @inlinable
    public init(distance: Double, lat: Double, lon: Double, alt: Double? = nil, slot: Int32) {
        self.distance = distance
        self.lat = lat
        self.lon = lon
        storedAlt = alt.map(Float.init) ?? .nan
        self.slot = slot
    }

    @inlinable
    init(distance: Double, lat: Double, lon: Double, entry: GridEntry) {
        self.distance = distance
        self.lat = lat
        self.lon = lon
        storedAlt = entry.alt
        slot = entry.slot
    }

    /// Metres, when the point was placed with an altitude.
    @inlinable public var alt: Double? { storedAlt.isNaN ? nil : Double(storedAlt) }
}

/// The spatial core of the moving-point indexes: points numbered by dense `Int32`
/// slots (the caller's numbering) in a uniform grid of square cells (`cellMetres`
/// of latitude; the same angle in longitude). Each cell's points are one contiguous
/// run of entries in a pool (`CellRuns`), each entry a point's offset from its cell's
/// corner (two `Float`s: about 0.03 mm of resolution), its altitude and its slot, so a query scans
/// each cell it visits as one block. A move inside a cell rewrites one entry; a move
/// across cells is a swap-remove and an append. Queries visit the cells under the
/// query's bounding box, so their cost follows the neighbourhood, not the total. The
/// grid was chosen over geohash buckets and an R-tree by measurement
/// (`Scripts/bench-geo`, benchmarks/history.md).
///
/// The grid keeps nothing but positions; ids, times and whatever else belongs to a
/// point live with the caller, indexed by the same slot (`MovingPointIndex`,
/// `ProximityMap`). Memory per slot: 16 bytes of entry (up to twice that while a
/// cell's run has room to grow) and 16 of bookkeeping.
///
/// Thread safety: a value type with no locks; touch it from one executor at a time.
public struct PointGrid: Sendable {
    @usableFromInline let grid: GridCells
    @usableFromInline var runs: CellRuns

    /// - Parameter cellMetres: grid cell size; about the usual query radius works best.
    @inlinable public init(cellMetres: Double = 300) {
        grid = GridCells(cellMetres: cellMetres)
        runs = CellRuns(columns: grid.columns)
    }

    /// Edge of a grid cell in metres (north–south).
    @inlinable public var cellMetres: Double { grid.cellMetres }

    /// Points in the grid.
    @inlinable public var count: Int { runs.count }

    /// Whether `slot` holds a point.
    @inlinable public func contains(_ slot: Int32) -> Bool { runs.contains(slot) }

    // MARK: Updates

    /// Puts `slot` at `point`.
    @inlinable public mutating func place(_ slot: Int32, at point: GeoPoint) {
        precondition(point.isValid, "invalid point \(point)")
        precondition(slot >= 0, "slots are not negative")
        let cell = grid.key(lat: point.lat, lon: point.lon)
        runs.put(entry(point, slot: slot, cell: cell), in: cell)
    }

    /// Takes `slot`'s point out; false when it had none.
    @discardableResult
    @inlinable public mutating func remove(_ slot: Int32) -> Bool { runs.remove(slot) }

    /// Where `slot` is (latitude and longitude as the grid holds them), if anywhere.
    @inlinable public func point(of slot: Int32) -> GeoPoint? {
        guard let (cell, entry) = runs.entry(of: slot) else { return nil }
        let (south, west) = grid.corner(of: cell)
        let (lat, lon) = Self.position(south, west, entry)
        return GeoPoint(lat: lat, lon: lon, alt: entry.altitude)
    }

    // MARK: Queries

    /// The points within `radius` metres of `center` that `accept` takes (given the
    /// slot and the distance), nearest first (ties by slot), at most `limit`.
    ///
    /// With a limit, the cells are searched nearest first (by the distance from the
    /// centre to their nearest edge; cells are narrower east–west than north–south away
    /// from the equator), and the search stops once the `limit`-th nearest found so far is
    /// strictly nearer than the next cell can hold anything (ties are decided by slot, so a
    /// point as far as the last one might still be wanted): a dense neighbourhood is
    /// answered from its middle.
    @inlinable public func nearby(_ center: GeoPoint, radius: Double, limit: Int = .max, accepting accept: (Int32, Double) -> Bool) -> [GridMatch] {
        guard limit > 0, radius >= 0 else { return [] }
        let probe = DistanceProbe(center, radius: radius)
        let box = BoundingBox(around: center, radius: radius)
        var nearest = NearestMatches(limit: limit)
        let ranges = grid.ranges(of: box)
        guard limit < .max, ranges.wrapped == nil, ranges.count > 9, ranges.count <= min(Int64(runs.occupiedCells), 256) else {
            forEachEntry(in: box, near: probe) { lat, lon, entry in Self.consider(lat, lon, entry, probe: probe, accept: accept, into: &nearest) }
            return nearest.sorted()
        }
        for cell in nearestFirst(ranges, from: center, within: box) {
            // Once `limit` are kept, nothing farther than the farthest of them can be wanted.
            let reach = nearest.reach ?? radius
            if reach < cell.nearest { break }
            let run = runs.run(of: cell.number)
            if run.isEmpty { continue }
            forEach(run, in: cell.number, near: probe, within: reach) { lat, lon, entry in
                Self.consider(lat, lon, entry, probe: probe, accept: accept, into: &nearest)
            }
        }
        return nearest.sorted()
    }

    /// The cells of `ranges`, by the least distance in metres a point in each can be from
    /// `center` (a hair less than the true least, so never more).
    @inlinable func nearestFirst(_ ranges: GridCells.Ranges, from center: GeoPoint, within box: BoundingBox) -> [(number: Int64, nearest: Double)] {
        // East–west metres per degree where it is least: the box's highest latitude.
        let highest = min(90, max(abs(box.minLat), abs(box.maxLat)))
        let eastWest = Geodesy.metresPerDegree * cos(highest * .pi / 180)
        var order: [(number: Int64, nearest: Double)] = []
        order.reserveCapacity(Int(ranges.count))
        for r in ranges.rows {
            let south = Double(r) * grid.cellDegrees - 90
            let dy = max(0, south - center.lat, center.lat - (south + grid.cellDegrees)) * Geodesy.metresPerDegree
            for c in ranges.columns {
                let west = Double(c) * grid.cellDegrees - 180
                let dx = max(0, west - center.lon, center.lon - (west + grid.cellDegrees)) * eastWest
                order.append((r * grid.columns + c, (dx * dx + dy * dy).squareRoot() * 0.999))
            }
        }
        order.sort { $0.nearest < $1.nearest }
        return order
    }

    /// Keeps the point at `lat`, `lon` (a candidate of `probe`'s prefilter) in `nearest` when it is within
    /// the probe's radius, nearer than what `nearest` already holds, and `accept` takes it (asked last).
    @inlinable static func consider(
        _ lat: Double, _ lon: Double, _ entry: GridEntry, probe: DistanceProbe, accept: (Int32, Double) -> Bool,
        into nearest: inout NearestMatches
    ) {
        let distance = probe.distance(lat: lat, lon: lon)
        guard distance <= probe.radius, nearest.wants(distance, entry.slot), accept(entry.slot, distance) else { return }
        nearest.keep(GridMatch(distance: distance, lat: lat, lon: lon, entry: entry))
    }

    /// Calls `body` with the position and slot of every point in the cells that `box`
    /// covers (some may lie outside `box`: the caller checks).
    @inlinable public func forEachEntry(in box: BoundingBox, _ body: (Double, Double, Int32) -> Void) {
        forEachEntry(in: box, near: nil) { lat, lon, entry in body(lat, lon, entry.slot) }
    }

    /// Calls `body` with the position and entry of every point in the cells that `box` covers, or with
    /// only those `probe`'s prefilter lets through when there is one.
    @inlinable func forEachEntry(in box: BoundingBox, near probe: DistanceProbe?, _ body: (Double, Double, GridEntry) -> Void) {
        let ranges = grid.ranges(of: box)
        // A box covering more cells than are occupied is cheaper to scan through the occupied cells.
        if ranges.count > Int64(runs.occupiedCells) {
            runs.forEachOccupiedCell { cell, run in
                if grid.contains(ranges, cell) { forEach(run, in: cell, near: probe, body) }
            }
            return
        }
        forEachEntry(rows: ranges.rows, columns: ranges.columns, near: probe, body)
        if let wrapped = ranges.wrapped { forEachEntry(rows: ranges.rows, columns: wrapped, near: probe, body) }
    }

    // MARK: Cells

    /// An entry's position; clamped because the `Float` offset may round a pole or ±180° a hair outside.
    @inlinable static func position(_ south: Double, _ west: Double, _ entry: GridEntry) -> (Double, Double) {
        (min(90, south + Double(entry.latOffset)), min(180, west + Double(entry.lonOffset)))
    }

    @inlinable func entry(_ point: GeoPoint, slot: Int32, cell: Int64) -> GridEntry {
        let (south, west) = grid.corner(of: cell)
        return GridEntry(latOffset: Float(point.lat - south), lonOffset: Float(point.lon - west), alt: point.alt.map(Float.init) ?? .nan, slot: slot)
    }

    /// Looks up the runs of up to 16 cells, and starts loading each, before reading any, so their
    /// header and entry loads overlap instead of each waiting behind the scan of the cell before.
    @inlinable func forEachEntry(
        rows: ClosedRange<Int64>, columns range: ClosedRange<Int64>, near probe: DistanceProbe?, _ body: (Double, Double, GridEntry) -> Void
    ) {
        var batch = InlineArray<16, (run: Range<Int>, cell: Int64)>(repeating: (0..<0, 0))
        var batched = 0
        for r in rows {
            for c in range {
                let run = runs.run(row: r, column: c)
                if run.isEmpty { continue }
                runs.prefetch(run)
                batch[batched] = (run, r * grid.columns + c)
                batched += 1
                if batched == batch.count {
                    for index in batch.indices { forEach(batch[index].run, in: batch[index].cell, near: probe, body) }
                    batched = 0
                }
            }
        }
        for index in 0..<batched { forEach(batch[index].run, in: batch[index].cell, near: probe, body) }
    }

    /// Calls `body` with the position and entry of each entry of `run`, the pool range of `cell`, or of
    /// only those `probe`'s prefilter lets through when there is one (for `reach` metres, at most the
    /// probe's radius, when given).
    @inlinable func forEach(
        _ run: Range<Int>, in cell: Int64, near probe: DistanceProbe?, within reach: Double? = nil,
        _ body: (Double, Double, GridEntry) -> Void
    ) {
        let (south, west) = grid.corner(of: cell)
        let filter = probe.flatMap { $0.prefilters ? OffsetFilter($0, reach: reach ?? $0.radius, south: south, west: west) : nil }
        runs.pool.withUnsafeBufferPointer { pool in
            for index in run where filter?.mayHold(pool[index]) != false {
                let (lat, lon) = Self.position(south, west, pool[index])
                body(lat, lon, pool[index])
            }
        }
    }

    /// A `DistanceProbe`'s prefilter in the frame of one cell: the centre's offsets from the cell's corner
    /// and the bound in `Float`, so the cell's entries are tested as stored, without converting them. The
    /// bound is the probe's for `reach` metres, widened by 1e-7° (about a centimetre) for the `Float`
    /// rounding, so it never drops a point within `reach`.
    @usableFromInline
    struct OffsetFilter {
        @usableFromInline let lat: Float
        @usableFromInline let lon: Float
        @usableFromInline let cos: Float
        @usableFromInline let bound: Float

        @inlinable init(_ probe: DistanceProbe, reach: Double, south: Double, west: Double) {
            lat = Float(probe.center.lat - south)
            lon = Float(Geodesy.longitudeDelta(west, probe.center.lon))
            cos = Float(probe.prefilterCos)
            let widened = DistanceProbe.prefilterDegrees(reach / Geodesy.metresPerDegree) + 1e-7
            bound = Float(widened * widened)
        }

        /// False only for entries certainly outside the probe's radius.
        @inlinable func mayHold(_ entry: GridEntry) -> Bool {
            let dLat = entry.latOffset - lat
            let dLon = (entry.lonOffset - lon) * cos
            return dLon * dLon + dLat * dLat <= bound
        }
    }
}
