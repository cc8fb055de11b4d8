import Foundation

/// A match of a `PointGrid` radius query: the slot, its distance from the centre
/// and its position as the grid holds it.
public struct GridMatch: Sendable {
    public var distance: Double
    public var lat: Double
    public var lon: Double
    public var slot: Int32

    @inlinable
    public init(distance: Double, lat: Double, lon: Double, slot: Int32) {
        self.distance = distance
        self.lat = lat
        self.lon = lon
        self.slot = slot
    }
}

/// The spatial core of the moving-point indexes: points numbered by dense `Int32`
/// slots (the caller's numbering) in a uniform grid of square cells (`cellMetres`
/// of latitude; the same angle in longitude), kept in a hash map from cell to a
/// compact array of entries. Each entry holds a point's offset from its cell's
/// corner (two `Float`s: about 0.03 mm of resolution) and its slot, so a query
/// scans those arrays contiguously. A move inside a cell rewrites one entry; a
/// move across cells is a swap-remove and an append. Queries visit the cells
/// under the query's bounding box, so their cost follows the neighbourhood, not
/// the total. The grid was chosen over geohash buckets and an R-tree by
/// measurement (`Scripts/bench-geo`, benchmarks/history.md).
///
/// The grid keeps nothing but positions; ids, times and whatever else belongs to a
/// point live with the caller, indexed by the same slot (`MovingPointIndex`,
/// `ProximityMap`). Memory per slot: 12 bytes of entry and 12 of bookkeeping.
///
/// Thread safety: a value type with no locks; touch it from one executor at a time.
public struct PointGrid: Sendable {
    /// A point as stored in its cell: offsets in degrees from the cell's south-west corner.
    @usableFromInline
    struct Entry: Sendable {
        @usableFromInline var latOffset: Float
        @usableFromInline var lonOffset: Float
        @usableFromInline var slot: Int32

        @inlinable
        init(latOffset: Float, lonOffset: Float, slot: Int32) {
            self.latOffset = latOffset
            self.lonOffset = lonOffset
            self.slot = slot
        }
    }

    @usableFromInline let grid: GridCells
    /// The cell of each slot, `absent` when the slot holds no point.
    @usableFromInline var cellOf: [Int64] = []
    @usableFromInline var indexInCell: [Int32] = []
    @usableFromInline var cells: [Int64: [Entry]] = [:]
    @usableFromInline var placed = 0
    @usableFromInline static var absent: Int64 { -1 }

    /// - Parameter cellMetres: grid cell size; about the usual query radius works best.
    @inlinable public init(cellMetres: Double = 300) {
        grid = GridCells(cellMetres: cellMetres)
    }

    /// Edge of a grid cell in metres (north–south).
    @inlinable public var cellMetres: Double { grid.cellMetres }

    /// Points in the grid.
    @inlinable public var count: Int { placed }

    /// Whether `slot` holds a point.
    @inlinable public func contains(_ slot: Int32) -> Bool {
        Int(slot) < cellOf.count && cellOf[Int(slot)] != Self.absent
    }

    // MARK: Updates

    /// Puts `slot` at `point` (latitude and longitude; altitude is the caller's).
    @inlinable public mutating func place(_ slot: Int32, at point: GeoPoint) {
        precondition(point.isValid, "invalid point \(point)")
        precondition(slot >= 0, "slots are not negative")
        let index = Int(slot)
        if index >= cellOf.count {
            cellOf.append(contentsOf: repeatElement(Self.absent, count: index + 1 - cellOf.count))
            indexInCell.append(contentsOf: repeatElement(0, count: index + 1 - indexInCell.count))
        }
        let cell = grid.key(lat: point.lat, lon: point.lon)
        if cellOf[index] == cell {
            cells[cell]![Int(indexInCell[index])] = entry(point, slot: slot, cell: cell)
            return
        }
        if cellOf[index] == Self.absent { placed += 1 } else { removeFromCell(slot) }
        cellOf[index] = cell
        indexInCell[index] = Int32(cells[cell, default: []].count)
        cells[cell, default: []].append(entry(point, slot: slot, cell: cell))
    }

    /// Takes `slot`'s point out; false when it had none.
    @discardableResult
    @inlinable public mutating func remove(_ slot: Int32) -> Bool {
        guard contains(slot) else { return false }
        removeFromCell(slot)
        cellOf[Int(slot)] = Self.absent
        placed -= 1
        return true
    }

    /// Where `slot` is (latitude and longitude as the grid holds them), if anywhere.
    @inlinable public func point(of slot: Int32) -> GeoPoint? {
        guard contains(slot) else { return nil }
        let cell = cellOf[Int(slot)]
        let (south, west) = grid.corner(of: cell)
        let (lat, lon) = Self.position(south, west, cells[cell]![Int(indexInCell[Int(slot)])])
        return GeoPoint(lat: lat, lon: lon)
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
        var found: [GridMatch] = []
        let ranges = grid.ranges(of: box)
        guard limit < .max, ranges.wrapped == nil, ranges.count > 9, ranges.count <= min(Int64(cells.count), 256) else {
            forEachEntry(in: box) { lat, lon, slot in Self.consider(lat, lon, slot, probe: probe, accept: accept, into: &found) }
            Self.keepNearest(&found, limit: limit)
            return found
        }
        let order = nearestFirst(ranges, from: center, within: box)
        var checkedAt = 0
        for (index, cell) in order.enumerated() {
            // Whether what is left can matter: checked once enough is found, then every fourth cell.
            if found.count >= limit, checkedAt == 0 || index - checkedAt >= 4 {
                checkedAt = index
                Self.trimToNearest(&found, limit: limit)
                if found.reduce(0, { max($0, $1.distance) }) < cell.nearest { break }
            }
            guard let members = cells[cell.number] else { continue }
            forEach(members, in: cell.number) { lat, lon, slot in Self.consider(lat, lon, slot, probe: probe, accept: accept, into: &found) }
        }
        Self.keepNearest(&found, limit: limit)
        return found
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

    /// Adds the point at `lat`, `lon` to `found` when it is within the probe's radius and `accept` takes it.
    @inlinable static func consider(_ lat: Double, _ lon: Double, _ slot: Int32, probe: DistanceProbe, accept: (Int32, Double) -> Bool,
                                    into found: inout [GridMatch]) {
        guard probe.mayBeWithin(lat: lat, lon: lon) else { return }
        let distance = probe.distance(lat: lat, lon: lon)
        guard distance <= probe.radius, accept(slot, distance) else { return }
        found.append(GridMatch(distance: distance, lat: lat, lon: lon, slot: slot))
    }

    /// Leaves the `limit` smallest distances in `found`, sorted (quickselect, then a sort of the rest).
    @inlinable static func keepNearest(_ found: inout [GridMatch], limit: Int) {
        trimToNearest(&found, limit: limit)
        found.sort { $0.distance < $1.distance || ($0.distance == $1.distance && $0.slot < $1.slot) }
    }

    /// Leaves the `limit` smallest distances in `found`, in no order (quickselect).
    @inlinable static func trimToNearest(_ found: inout [GridMatch], limit: Int) {
        if found.count > limit {
            var low = 0, high = found.count - 1
            while low < high {
                let pivot = found[(low + high) / 2].distance
                var i = low, j = high
                while i <= j {
                    while found[i].distance < pivot { i += 1 }
                    while found[j].distance > pivot { j -= 1 }
                    if i <= j {
                        found.swapAt(i, j)
                        i += 1
                        j -= 1
                    }
                }
                if limit - 1 <= j { high = j } else if limit - 1 >= i { low = i } else { break }
            }
            found.removeLast(found.count - limit)
        }
    }

    /// Calls `body` with the position and slot of every point in the cells that `box`
    /// covers (some may lie outside `box`: the caller checks).
    @inlinable public func forEachEntry(in box: BoundingBox, _ body: (Double, Double, Int32) -> Void) {
        let ranges = grid.ranges(of: box)
        // A box covering more cells than are occupied is cheaper to scan through the occupied cells.
        if ranges.count > Int64(cells.count) {
            for (key, members) in cells where grid.contains(ranges, key) { forEach(members, in: key, body) }
            return
        }
        forEachEntry(rows: ranges.rows, columns: ranges.columns, body)
        if let wrapped = ranges.wrapped { forEachEntry(rows: ranges.rows, columns: wrapped, body) }
    }

    // MARK: Cells

    /// An entry's position; clamped because the `Float` offset may round a pole or ±180° a hair outside.
    @inlinable static func position(_ south: Double, _ west: Double, _ entry: Entry) -> (Double, Double) {
        (min(90, south + Double(entry.latOffset)), min(180, west + Double(entry.lonOffset)))
    }

    @inlinable func entry(_ point: GeoPoint, slot: Int32, cell: Int64) -> Entry {
        let (south, west) = grid.corner(of: cell)
        return Entry(latOffset: Float(point.lat - south), lonOffset: Float(point.lon - west), slot: slot)
    }

    @inlinable mutating func removeFromCell(_ slot: Int32) {
        let cell = cellOf[Int(slot)]
        let position = Int(indexInCell[Int(slot)])
        cells[cell]!.withUnsafeMutableBufferPointer { members in
            let last = members[members.count - 1]
            members[position] = last
            indexInCell[Int(last.slot)] = Int32(position)
        }
        cells[cell]!.removeLast()
        if cells[cell]!.isEmpty { cells[cell] = nil }
    }

    @inlinable func forEachEntry(rows: ClosedRange<Int64>, columns range: ClosedRange<Int64>, _ body: (Double, Double, Int32) -> Void) {
        for r in rows {
            let base = r * grid.columns
            for c in range {
                if let members = cells[base + c] { forEach(members, in: base + c, body) }
            }
        }
    }

    @inlinable func forEach(_ members: [Entry], in cell: Int64, _ body: (Double, Double, Int32) -> Void) {
        let (south, west) = grid.corner(of: cell)
        for entry in members {
            let (lat, lon) = Self.position(south, west, entry)
            body(lat, lon, entry.slot)
        }
    }
}
