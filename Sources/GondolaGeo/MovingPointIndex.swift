import Foundation

/// A point found by a query, with its distance from the query's centre.
public struct Neighbour<ID: Hashable & Sendable>: Sendable, Equatable {
    public let id: ID
    public let point: GeoPoint
    /// Metres from the query centre (great-circle).
    public let distance: Double

    @inlinable public init(id: ID, point: GeoPoint, distance: Double) {
        self.id = id
        self.point = point
        self.distance = distance
    }
}

/// An index of moving points (travellers) for update-heavy load: upsert by id,
/// remove, expire, radius and k-nearest queries, box and polygon queries.
///
/// Structure: a uniform grid of square cells (`cellMetres` of latitude; the same
/// angle in longitude) in a hash map from cell to a compact array of entries, each
/// holding a point's offset from the cell's corner (two `Float`s: about 0.03 mm of
/// resolution) and its slot. A query scans those arrays contiguously and touches the
/// per-point arrays (id, altitude, time) only for what it returns. A move inside a
/// cell rewrites one entry; a move across cells is a swap-remove and an append.
/// Queries visit the cells under the query's bounding box, so their cost follows
/// the neighbourhood, not the total.
/// The grid was chosen over geohash buckets and an R-tree by measurement (see
/// `Scripts/bench-geo` and BENCHMARKS.md).
///
/// Thread safety: a value type with no locks. Give each shard of the world its
/// own index and touch it from one executor (an actor or one task) only.
public struct MovingPointIndex<ID: Hashable & Sendable>: Sendable {
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

    /// Edge of a grid cell in metres (north–south).
    public let cellMetres: Double
    @usableFromInline let cellDegrees: Double
    @usableFromInline let columns: Int64
    /// Index of the northernmost row (latitude 90 falls in it).
    @usableFromInline let lastRow: Int64

    @usableFromInline var slotOf: [ID: Int32] = [:]
    /// The id of each slot; a freed slot keeps its last id until reused (alive when `slotOf` points back to it).
    @usableFromInline var ids: [ID] = []
    @usableFromInline var alts: [Float] = []
    @usableFromInline var times: [Int64] = []
    @usableFromInline var cellOf: [Int64] = []
    @usableFromInline var indexInCell: [Int32] = []
    @usableFromInline var freeSlots: [Int32] = []
    @usableFromInline var cells: [Int64: [Entry]] = [:]

    /// - Parameter cellMetres: grid cell size; about the usual query radius works best.
    @inlinable public init(cellMetres: Double = 300) {
        precondition(cellMetres > 0, "cellMetres must be positive")
        self.cellMetres = cellMetres
        let degrees = Geodesy.latitudeDegrees(metres: cellMetres)
        // A whole number of columns around the globe so that cells wrap cleanly at ±180°.
        let columns = max(1, Int64((360 / degrees).rounded(.down)))
        self.columns = columns
        self.cellDegrees = 360 / Double(columns)
        self.lastRow = Int64((180 / cellDegrees).rounded(.up))
    }

    /// Points in the index.
    @inlinable public var count: Int { slotOf.count }

    // MARK: Updates

    /// Inserts or moves `id` to `point`, seen at `timestamp` (any monotonic unit, e.g. ms).
    @inlinable public mutating func upsert(_ id: ID, at point: GeoPoint, timestamp: Int64) {
        precondition(point.isValid, "invalid point \(point)")
        let cell = cellKey(lat: point.lat, lon: point.lon)
        let slot: Int32
        if let existing = slotOf[id] {
            slot = existing
            let index = Int(slot)
            alts[index] = point.alt.map(Float.init) ?? .nan
            times[index] = timestamp
            if cellOf[index] == cell {
                cells[cell]![Int(indexInCell[index])] = entry(point, slot: slot, cell: cell)
                return
            }
            removeFromCell(slot)
        } else if let free = freeSlots.popLast() {
            slot = free
            let index = Int(slot)
            ids[index] = id
            alts[index] = point.alt.map(Float.init) ?? .nan
            times[index] = timestamp
            slotOf[id] = slot
        } else {
            slot = Int32(ids.count)
            ids.append(id)
            alts.append(point.alt.map(Float.init) ?? .nan)
            times.append(timestamp)
            cellOf.append(cell)
            indexInCell.append(0)
            slotOf[id] = slot
        }
        cellOf[Int(slot)] = cell
        indexInCell[Int(slot)] = Int32(cells[cell, default: []].count)
        cells[cell, default: []].append(entry(point, slot: slot, cell: cell))
    }

    /// Removes `id`; false when it was not there.
    @discardableResult
    @inlinable public mutating func remove(_ id: ID) -> Bool {
        guard let slot = slotOf.removeValue(forKey: id) else { return false }
        removeFromCell(slot)
        freeSlots.append(slot)
        return true
    }

    /// Removes every point last seen before `timestamp` and returns their ids.
    @inlinable public mutating func expire(olderThan timestamp: Int64) -> [ID] {
        var expired: [ID] = []
        for index in ids.indices where times[index] < timestamp && slotOf[ids[index]] == Int32(index) {
            expired.append(ids[index])
        }
        for id in expired { remove(id) }
        return expired
    }

    /// Where `id` is, if indexed.
    @inlinable public func point(of id: ID) -> GeoPoint? {
        guard let slot = slotOf[id] else { return nil }
        return point(at: Int(slot))
    }

    /// When `id` was last updated, if indexed.
    @inlinable public func timestamp(of id: ID) -> Int64? {
        slotOf[id].map { times[Int($0)] }
    }

    // MARK: Queries

    /// Points within `radius` metres of `center`, nearest first, at most `limit`,
    /// keeping only those `filter` accepts.
    @inlinable public func nearby(_ center: GeoPoint, radius: Double, limit: Int = .max, filter: ((ID) -> Bool)? = nil) -> [Neighbour<ID>] {
        guard let filter else { return nearby(center, radius: radius, limit: limit, accepting: { _, _ in true }) }
        return nearby(center, radius: radius, limit: limit, accepting: { id, _ in filter(id) })
    }

    /// Points within `radius` metres of `center`, nearest first, at most `limit`,
    /// keeping only those `accept` takes, given the id and the distance.
    @inlinable public func nearby(_ center: GeoPoint, radius: Double, limit: Int = .max, accepting accept: (ID, Double) -> Bool) -> [Neighbour<ID>] {
        guard limit > 0, radius >= 0 else { return [] }
        let probe = DistanceProbe(center, radius: radius)
        var found: [Found] = []
        forEachEntry(in: BoundingBox(around: center, radius: radius)) { lat, lon, slot in
            guard probe.mayBeWithin(lat: lat, lon: lon) else { return }
            let distance = probe.distance(lat: lat, lon: lon)
            guard distance <= radius, accept(ids[Int(slot)], distance) else { return }
            found.append(Found(distance: distance, lat: lat, lon: lon, slot: slot))
        }
        Self.keepNearest(&found, limit: limit)
        return found.map { item in
            let alt = alts[Int(item.slot)]
            return Neighbour(id: ids[Int(item.slot)], point: GeoPoint(lat: item.lat, lon: item.lon, alt: alt.isNaN ? nil : Double(alt)),
                             distance: item.distance)
        }
    }

    /// A match of a radius query, with the position read during the scan.
    @usableFromInline
    struct Found {
        @usableFromInline var distance: Double
        @usableFromInline var lat: Double
        @usableFromInline var lon: Double
        @usableFromInline var slot: Int32

        @inlinable
        init(distance: Double, lat: Double, lon: Double, slot: Int32) {
            self.distance = distance
            self.lat = lat
            self.lon = lon
            self.slot = slot
        }
    }

    /// Leaves the `limit` smallest distances in `found`, sorted (quickselect, then a sort of the rest).
    @inlinable static func keepNearest(_ found: inout [Found], limit: Int) {
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
        found.sort { $0.distance < $1.distance || ($0.distance == $1.distance && $0.slot < $1.slot) }
    }

    /// The `k` points nearest to `center` (that `filter` accepts), nearest first.
    @inlinable public func nearest(_ center: GeoPoint, k: Int, filter: ((ID) -> Bool)? = nil) -> [Neighbour<ID>] {
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
    @inlinable public func within(_ box: BoundingBox) -> [ID] {
        var result: [ID] = []
        forEachEntry(in: box) { lat, lon, slot in
            if box.contains(GeoPoint(lat: lat, lon: lon)) { result.append(ids[Int(slot)]) }
        }
        return result
    }

    /// Ids of the points inside `polygon` (holes excluded).
    @inlinable public func within(_ polygon: Polygon) -> [ID] {
        var result: [ID] = []
        forEachEntry(in: polygon.bounds) { lat, lon, slot in
            if polygon.contains(GeoPoint(lat: lat, lon: lon)) { result.append(ids[Int(slot)]) }
        }
        return result
    }

    /// Every indexed id with its point, in no particular order.
    @inlinable public var all: [(id: ID, point: GeoPoint)] {
        slotOf.map { ($0.key, point(at: Int($0.value))) }
    }

    // MARK: Grid

    @inlinable func point(at index: Int) -> GeoPoint {
        let cell = cellOf[index]
        let entry = cells[cell]![Int(indexInCell[index])]
        let (south, west) = corner(of: cell)
        let alt = alts[index]
        let (lat, lon) = Self.position(south, west, entry)
        return GeoPoint(lat: lat, lon: lon, alt: alt.isNaN ? nil : Double(alt))
    }

    @inlinable func row(_ lat: Double) -> Int64 { min(Int64(((lat + 90) / cellDegrees).rounded(.down)), lastRow) }

    @inlinable func column(_ lon: Double) -> Int64 {
        let column = Int64(((lon + 180) / cellDegrees).rounded(.down))
        return column >= columns ? columns - 1 : column
    }

    @inlinable func cellKey(lat: Double, lon: Double) -> Int64 { row(lat) * columns + column(lon) }

    /// Latitude and longitude of a cell's south-west corner.
    @inlinable func corner(of cell: Int64) -> (Double, Double) {
        (Double(cell / columns) * cellDegrees - 90, Double(cell % columns) * cellDegrees - 180)
    }

    /// An entry's position; clamped because the `Float` offset may round a pole or ±180° a hair outside.
    @inlinable static func position(_ south: Double, _ west: Double, _ entry: Entry) -> (Double, Double) {
        (min(90, south + Double(entry.latOffset)), min(180, west + Double(entry.lonOffset)))
    }

    @inlinable func entry(_ point: GeoPoint, slot: Int32, cell: Int64) -> Entry {
        let (south, west) = corner(of: cell)
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

    /// Calls `body` with the position and slot of every entry in the cells that `box` covers.
    @inlinable func forEachEntry(in box: BoundingBox, _ body: (Double, Double, Int32) -> Void) {
        let firstRow = row(max(-90, box.minLat)), lastRow = row(min(90, box.maxLat))
        if box.crossesAntimeridian {
            forEachEntry(rows: firstRow...lastRow, columns: column(box.minLon)...column(180), body)
            forEachEntry(rows: firstRow...lastRow, columns: column(-180)...column(box.maxLon), body)
        } else {
            forEachEntry(rows: firstRow...lastRow, columns: column(box.minLon)...column(box.maxLon), body)
        }
    }

    @inlinable func forEachEntry(rows: ClosedRange<Int64>, columns range: ClosedRange<Int64>, _ body: (Double, Double, Int32) -> Void) {
        // A box covering more cells than are occupied is cheaper to scan through the occupied cells.
        if Int64(rows.count) * Int64(range.count) > Int64(cells.count) {
            for (key, members) in cells where rows.contains(key / columns) && range.contains(key % columns) {
                let (south, west) = corner(of: key)
                for entry in members {
                    let (lat, lon) = Self.position(south, west, entry)
                    body(lat, lon, entry.slot)
                }
            }
            return
        }
        for r in rows {
            let base = r * columns
            for c in range {
                guard let members = cells[base + c] else { continue }
                let (south, west) = corner(of: base + c)
                for entry in members {
                    let (lat, lon) = Self.position(south, west, entry)
                    body(lat, lon, entry.slot)
                }
            }
        }
    }
}
