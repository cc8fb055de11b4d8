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

/// An index of moving points (travellers, cars) for update-heavy load: upsert by
/// id, remove, expire, radius and k-nearest queries, box and polygon queries.
///
/// The positions live in a `PointGrid` (see there for the structure and its
/// costs); this index numbers ids with dense slots for it, reusing freed slots,
/// and keeps each slot's id, altitude and time beside it.
///
/// Thread safety: a value type with no locks. Give each shard of the world its
/// own index and touch it from one executor (an actor or one task) only.
public struct MovingPointIndex<ID: Hashable & Sendable>: Sendable {
    @usableFromInline var grid: PointGrid
    @usableFromInline var slotOf: [ID: Int32] = [:]
    /// The id of each slot; a freed slot keeps its last id until reused (alive when the grid holds the slot).
    @usableFromInline var ids: [ID] = []
    @usableFromInline var alts: [Float] = []
    @usableFromInline var times: [Int64] = []
    @usableFromInline var freeSlots: [Int32] = []

    /// - Parameter cellMetres: grid cell size; about the usual query radius works best.
    @inlinable public init(cellMetres: Double = 300) {
        grid = PointGrid(cellMetres: cellMetres)
    }

    /// Edge of a grid cell in metres (north–south).
    @inlinable public var cellMetres: Double { grid.cellMetres }

    /// Points in the index.
    @inlinable public var count: Int { slotOf.count }

    // MARK: Updates

    /// Inserts or moves `id` to `point`, seen at `timestamp` (any monotonic unit, e.g. ms).
    @inlinable public mutating func upsert(_ id: ID, at point: GeoPoint, timestamp: Int64) {
        precondition(point.isValid, "invalid point \(point)")
        let slot: Int32
        if let existing = slotOf[id] {
            slot = existing
        } else if let free = freeSlots.popLast() {
            slot = free
            ids[Int(slot)] = id
            slotOf[id] = slot
        } else {
            slot = Int32(ids.count)
            ids.append(id)
            alts.append(.nan)
            times.append(0)
            slotOf[id] = slot
        }
        alts[Int(slot)] = point.alt.map(Float.init) ?? .nan
        times[Int(slot)] = timestamp
        grid.place(slot, at: point)
    }

    /// Removes `id`; false when it was not there.
    @discardableResult
    @inlinable public mutating func remove(_ id: ID) -> Bool {
        guard let slot = slotOf.removeValue(forKey: id) else { return false }
        grid.remove(slot)
        freeSlots.append(slot)
        return true
    }

    /// Removes every point last seen before `timestamp` and returns their ids.
    @inlinable public mutating func expire(olderThan timestamp: Int64) -> [ID] {
        var expired: [ID] = []
        for index in ids.indices where times[index] < timestamp && grid.contains(Int32(index)) {
            expired.append(ids[index])
        }
        for id in expired { remove(id) }
        return expired
    }

    /// Where `id` is, if indexed.
    @inlinable public func point(of id: ID) -> GeoPoint? {
        guard let slot = slotOf[id] else { return nil }
        return point(at: slot)
    }

    /// When `id` was last updated, if indexed.
    @inlinable public func timestamp(of id: ID) -> Int64? {
        slotOf[id].map { times[Int($0)] }
    }

    // MARK: Queries

    /// Points within `radius` metres of `center`, nearest first, at most `limit`,
    /// keeping only those `filter` accepts.
    @inlinable public func nearby(_ center: GeoPoint, radius: Double, limit: Int = .max, filter: ((ID) -> Bool)? = nil) -> [Neighbour<ID>] {
        // Without a filter no candidate's id is read, only the answers'.
        guard let filter else { return neighbours(grid.nearby(center, radius: radius, limit: limit) { _, _ in true }) }
        return nearby(center, radius: radius, limit: limit, accepting: { id, _ in filter(id) })
    }

    /// Points within `radius` metres of `center`, nearest first, at most `limit`,
    /// keeping only those `accept` takes, given the id and the distance.
    @inlinable public func nearby(_ center: GeoPoint, radius: Double, limit: Int = .max, accepting accept: (ID, Double) -> Bool) -> [Neighbour<ID>] {
        neighbours(grid.nearby(center, radius: radius, limit: limit) { slot, distance in accept(ids[Int(slot)], distance) })
    }

    /// The grid's matches with their ids and altitudes.
    @inlinable func neighbours(_ matches: [GridMatch]) -> [Neighbour<ID>] {
        matches.map { match in
            Neighbour(id: ids[Int(match.slot)], point: GeoPoint(lat: match.lat, lon: match.lon, alt: altitude(at: match.slot)), distance: match.distance)
        }
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
        grid.forEachEntry(in: box) { lat, lon, slot in
            if box.contains(GeoPoint(lat: lat, lon: lon)) { result.append(ids[Int(slot)]) }
        }
        return result
    }

    /// Ids of the points inside `polygon` (holes excluded).
    @inlinable public func within(_ polygon: Polygon) -> [ID] {
        var result: [ID] = []
        grid.forEachEntry(in: polygon.bounds) { lat, lon, slot in
            if polygon.contains(GeoPoint(lat: lat, lon: lon)) { result.append(ids[Int(slot)]) }
        }
        return result
    }

    /// Every indexed id with its point, in no particular order.
    @inlinable public var all: [(id: ID, point: GeoPoint)] {
        slotOf.map { ($0.key, point(at: $0.value)) }
    }

    @inlinable func altitude(at slot: Int32) -> Double? {
        let alt = alts[Int(slot)]
        return alt.isNaN ? nil : Double(alt)
    }

    @inlinable func point(at slot: Int32) -> GeoPoint {
        var point = grid.point(of: slot)!
        point.alt = altitude(at: slot)
        return point
    }
}
