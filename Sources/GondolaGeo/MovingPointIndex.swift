import CPrefetch
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
/// and keeps each slot's id and time beside it (the grid keeps the altitude).
///
/// Thread safety: a value type with no locks. Give each shard of the world its
/// own index and touch it from one executor (an actor or one task) only.
public struct MovingPointIndex<ID: Hashable & Sendable>: Sendable {
    @usableFromInline var grid: PointGrid
    @usableFromInline var slotOf: [ID: Int32] = [:]
    /// The id and time of each slot, side by side (a move writes the time where its query then reads
    /// the id); a freed slot keeps its last id until reused (alive when the grid holds the slot).
    @usableFromInline var records: [SlotRecord] = []
    @usableFromInline var freeSlots: [Int32] = []

    /// A slot's id and the time of its last update.
    @usableFromInline
    struct SlotRecord: Sendable {
        @usableFromInline var id: ID
        @usableFromInline var time: Int64

        @inlinable init(id: ID, time: Int64) {
            self.id = id
            self.time = time
        }
    }

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
            records[Int(slot)].id = id
            slotOf[id] = slot
        } else {
            slot = Int32(records.count)
            records.append(SlotRecord(id: id, time: 0))
            slotOf[id] = slot
        }
        records[Int(slot)].time = timestamp
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
        for index in records.indices where records[index].time < timestamp && grid.contains(Int32(index)) {
            expired.append(records[index].id)
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
        slotOf[id].map { records[Int($0)].time }
    }

    // MARK: Queries

    /// Points within `radius` metres of `center`, nearest first, at most `limit`,
    /// keeping only those `filter` accepts.
    @inlinable public func nearby(_ center: GeoPoint, radius: Double, limit: Int = .max, filter: ((ID) -> Bool)? = nil) -> [Neighbour<ID>] {
        // Without a filter no candidate's id is read, only the answers'.
        guard let filter else {
            // The matches' records are scattered and read after the scan: each one's load starts as
            // its match is found, so the loads overlap the rest of the scan instead of following it.
            let matches = records.withUnsafeBufferPointer { records in
                grid.nearby(center, radius: radius, limit: limit) { slot, _ in
                    if let base = records.baseAddress { gondola_prefetch(base + Int(slot)) }
                    return true
                }
            }
            return neighbours(matches)
        }
        return nearby(center, radius: radius, limit: limit, accepting: { id, _ in filter(id) })
    }

    /// Points within `radius` metres of `center`, nearest first, at most `limit`,
    /// keeping only those `accept` takes, given the id and the distance.
    @inlinable public func nearby(_ center: GeoPoint, radius: Double, limit: Int = .max, accepting accept: (ID, Double) -> Bool) -> [Neighbour<ID>] {
        neighbours(grid.nearby(center, radius: radius, limit: limit) { slot, distance in accept(records[Int(slot)].id, distance) })
    }

    /// The grid's matches with their ids and altitudes.
    @inlinable func neighbours(_ matches: [GridMatch]) -> [Neighbour<ID>] {
        let records = records
        return matches.map { match in
            Neighbour(id: records[Int(match.slot)].id, point: GeoPoint(lat: match.lat, lon: match.lon, alt: match.alt), distance: match.distance)
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
            if box.contains(GeoPoint(lat: lat, lon: lon)) { result.append(records[Int(slot)].id) }
        }
        return result
    }

    /// Ids of the points inside `polygon` (holes excluded).
    @inlinable public func within(_ polygon: Polygon) -> [ID] {
        var result: [ID] = []
        grid.forEachEntry(in: polygon.bounds) { lat, lon, slot in
            if polygon.contains(GeoPoint(lat: lat, lon: lon)) { result.append(records[Int(slot)].id) }
        }
        return result
    }

    /// Every indexed id with its point, in no particular order.
    @inlinable public var all: [(id: ID, point: GeoPoint)] {
        slotOf.map { ($0.key, point(at: $0.value)) }
    }

    @inlinable func point(at slot: Int32) -> GeoPoint {
        grid.point(of: slot)!
    }
}
