import Foundation

/// A point found by a query, with its distance from the query's centre.
public struct Neighbour<ID: Hashable & Sendable>: Sendable, Equatable {
    public let id: ID
    public let point: GeoPoint
    /// Metres from the query centre (great-circle).
    public let distance: Double
}

/// An index of moving points (travellers) for update-heavy load: upsert by id,
/// remove, expire, radius and k-nearest queries, box and polygon queries.
///
/// Structure: a uniform grid of square cells (`cellMetres` of latitude; the same
/// angle in longitude) in a hash map from cell to the slots in it, with positions
/// stored in parallel arrays. A move inside a cell rewrites two doubles; a move
/// across cells is a swap-remove and an append. Queries visit the cells under the
/// query's bounding box, so their cost follows the neighbourhood, not the total.
/// The grid was chosen over geohash buckets and an R-tree by measurement (see
/// `Scripts/bench-geo` and BENCHMARKS.md).
///
/// Thread safety: a value type with no locks. Give each shard of the world its
/// own index and touch it from one executor (an actor or one task) only.
public struct MovingPointIndex<ID: Hashable & Sendable>: Sendable {
    /// Edge of a grid cell in metres (north–south).
    public let cellMetres: Double
    private let cellDegrees: Double
    private let columns: Int64

    private var slotOf: [ID: Int32] = [:]
    private var ids: [ID?] = []
    private var lats: [Double] = []
    private var lons: [Double] = []
    private var alts: [Float] = []
    private var times: [Int64] = []
    private var indexInCell: [Int32] = []
    private var freeSlots: [Int32] = []
    private var cells: [Int64: [Int32]] = [:]

    /// - Parameter cellMetres: grid cell size; about the usual query radius works best.
    public init(cellMetres: Double = 300) {
        precondition(cellMetres > 0, "cellMetres must be positive")
        self.cellMetres = cellMetres
        let degrees = Geodesy.latitudeDegrees(metres: cellMetres)
        // A whole number of columns around the globe so that cells wrap cleanly at ±180°.
        let columns = max(1, Int64((360 / degrees).rounded(.down)))
        self.columns = columns
        self.cellDegrees = 360 / Double(columns)
    }

    /// Points in the index.
    public var count: Int { slotOf.count }

    // MARK: Updates

    /// Inserts or moves `id` to `point`, seen at `timestamp` (any monotonic unit, e.g. ms).
    public mutating func upsert(_ id: ID, at point: GeoPoint, timestamp: Int64) {
        precondition(point.isValid, "invalid point \(point)")
        let cell = cellKey(lat: point.lat, lon: point.lon)
        if let slot = slotOf[id] {
            let index = Int(slot)
            let oldCell = cellKey(lat: lats[index], lon: lons[index])
            lats[index] = point.lat
            lons[index] = point.lon
            alts[index] = point.alt.map(Float.init) ?? .nan
            times[index] = timestamp
            if oldCell != cell {
                removeFromCell(slot, cell: oldCell)
                addToCell(slot, cell: cell)
            }
            return
        }
        let slot: Int32
        if let free = freeSlots.popLast() {
            slot = free
            let index = Int(slot)
            ids[index] = id
            lats[index] = point.lat
            lons[index] = point.lon
            alts[index] = point.alt.map(Float.init) ?? .nan
            times[index] = timestamp
        } else {
            slot = Int32(ids.count)
            ids.append(id)
            lats.append(point.lat)
            lons.append(point.lon)
            alts.append(point.alt.map(Float.init) ?? .nan)
            times.append(timestamp)
            indexInCell.append(0)
        }
        slotOf[id] = slot
        addToCell(slot, cell: cell)
    }

    /// Removes `id`; false when it was not there.
    @discardableResult
    public mutating func remove(_ id: ID) -> Bool {
        guard let slot = slotOf.removeValue(forKey: id) else { return false }
        let index = Int(slot)
        removeFromCell(slot, cell: cellKey(lat: lats[index], lon: lons[index]))
        ids[index] = nil
        freeSlots.append(slot)
        return true
    }

    /// Removes every point last seen before `timestamp` and returns their ids.
    public mutating func expire(olderThan timestamp: Int64) -> [ID] {
        var expired: [ID] = []
        for index in ids.indices where times[index] < timestamp {
            if let id = ids[index] { expired.append(id) }
        }
        for id in expired { remove(id) }
        return expired
    }

    /// Where `id` is, if indexed.
    public func point(of id: ID) -> GeoPoint? {
        guard let slot = slotOf[id] else { return nil }
        return point(at: Int(slot))
    }

    /// When `id` was last updated, if indexed.
    public func timestamp(of id: ID) -> Int64? {
        slotOf[id].map { times[Int($0)] }
    }

    // MARK: Queries

    /// Points within `radius` metres of `center`, nearest first, at most `limit`,
    /// keeping only those `filter` accepts.
    public func nearby(_ center: GeoPoint, radius: Double, limit: Int = .max, filter: ((ID) -> Bool)? = nil) -> [Neighbour<ID>] {
        guard limit > 0, radius >= 0 else { return [] }
        var found: [(distance: Double, slot: Int32)] = []
        forEachSlot(in: BoundingBox(around: center, radius: radius)) { slot in
            let index = Int(slot)
            let candidate = GeoPoint(lat: lats[index], lon: lons[index])
            let distance = Geodesy.distance(center, candidate)
            guard distance <= radius else { return }
            if let filter, !filter(ids[index]!) { return }
            found.append((distance, slot))
        }
        if found.count > limit {
            found.sort { $0.distance < $1.distance }
            found.removeLast(found.count - limit)
        } else {
            found.sort { $0.distance < $1.distance }
        }
        return found.map { Neighbour(id: ids[Int($0.slot)]!, point: point(at: Int($0.slot)), distance: $0.distance) }
    }

    /// The `k` points nearest to `center` (that `filter` accepts), nearest first.
    public func nearest(_ center: GeoPoint, k: Int, filter: ((ID) -> Bool)? = nil) -> [Neighbour<ID>] {
        guard k > 0, count > 0 else { return [] }
        var radius = cellMetres
        let halfCircumference = Geodesy.earthRadius * .pi
        while true {
            let found = nearby(center, radius: radius, limit: k, filter: filter)
            if found.count >= k || radius >= halfCircumference { return found }
            radius = min(radius * 2, halfCircumference)
        }
    }

    /// Ids of the points inside `box`.
    public func within(_ box: BoundingBox) -> [ID] {
        var result: [ID] = []
        forEachSlot(in: box) { slot in
            if box.contains(point(at: Int(slot))) { result.append(ids[Int(slot)]!) }
        }
        return result
    }

    /// Ids of the points inside `polygon` (holes excluded).
    public func within(_ polygon: Polygon) -> [ID] {
        var result: [ID] = []
        forEachSlot(in: polygon.bounds) { slot in
            if polygon.contains(point(at: Int(slot))) { result.append(ids[Int(slot)]!) }
        }
        return result
    }

    /// Every indexed id with its point, in no particular order.
    public var all: [(id: ID, point: GeoPoint)] {
        slotOf.map { ($0.key, point(at: Int($0.value))) }
    }

    // MARK: Grid

    private func point(at index: Int) -> GeoPoint {
        let alt = alts[index]
        return GeoPoint(lat: lats[index], lon: lons[index], alt: alt.isNaN ? nil : Double(alt))
    }

    private func row(_ lat: Double) -> Int64 { Int64(((lat + 90) / cellDegrees).rounded(.down)) }

    private func column(_ lon: Double) -> Int64 {
        let column = Int64(((lon + 180) / cellDegrees).rounded(.down))
        return column >= columns ? columns - 1 : column
    }

    private func cellKey(lat: Double, lon: Double) -> Int64 { row(lat) * columns + column(lon) }

    private mutating func addToCell(_ slot: Int32, cell: Int64) {
        indexInCell[Int(slot)] = Int32(cells[cell, default: []].count)
        cells[cell, default: []].append(slot)
    }

    private mutating func removeFromCell(_ slot: Int32, cell: Int64) {
        let position = Int(indexInCell[Int(slot)])
        cells[cell]!.withUnsafeMutableBufferPointer { members in
            let last = members[members.count - 1]
            members[position] = last
            indexInCell[Int(last)] = Int32(position)
        }
        cells[cell]!.removeLast()
        if cells[cell]!.isEmpty { cells[cell] = nil }
    }

    /// Calls `body` with every slot in the cells that `box` covers.
    private func forEachSlot(in box: BoundingBox, _ body: (Int32) -> Void) {
        let firstRow = row(max(-90, box.minLat)), lastRow = row(min(90, box.maxLat))
        for range in box.longitudeRanges {
            let firstColumn = column(range.lowerBound), lastColumn = column(range.upperBound)
            // A box wider than the cells at hand is cheaper to scan by visiting the occupied cells.
            let boxCells = (lastRow - firstRow + 1) * (lastColumn - firstColumn + 1)
            if boxCells > Int64(cells.count) {
                for (key, members) in cells {
                    let r = key / columns, c = key % columns
                    if r >= firstRow, r <= lastRow, c >= firstColumn, c <= lastColumn {
                        for slot in members { body(slot) }
                    }
                }
                continue
            }
            for r in firstRow...lastRow {
                for c in firstColumn...lastColumn {
                    if let members = cells[r * columns + c] {
                        for slot in members { body(slot) }
                    }
                }
            }
        }
    }
}
