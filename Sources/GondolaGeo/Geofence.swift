/// A named area: one or more polygons with holes (GeoJSON `Polygon` or `MultiPolygon`), or
/// a circle (a centre and a radius in metres).
public struct Geofence<ID: Hashable & Sendable>: Sendable {
    /// What a fence covers.
    public enum Area: Sendable, Hashable {
        case polygons([Polygon])
        case circle(center: GeoPoint, radius: Double)
    }

    public let id: ID
    public let area: Area
    public let bounds: BoundingBox

    public init(id: ID, polygons: [Polygon]) {
        precondition(!polygons.isEmpty, "a fence needs a polygon")
        self.id = id
        area = .polygons(polygons)
        bounds = BoundingBox(covering: polygons)
    }

    public init(id: ID, center: GeoPoint, radius: Double) {
        precondition(radius > 0, "a circle needs a radius")
        self.id = id
        area = .circle(center: center, radius: radius)
        bounds = BoundingBox(around: center, radius: radius)
    }

    /// The fence's polygons; none for a circle.
    public var polygons: [Polygon] {
        if case let .polygons(polygons) = area { polygons } else { [] }
    }

    @inlinable public func contains(_ point: GeoPoint) -> Bool {
        switch area {
        case let .polygons(polygons): polygons.contains { $0.contains(point) }
        case let .circle(center, radius): Geodesy.distance(center, point) <= radius
        }
    }

    /// Metres from `point` to the nearest boundary edge of any polygon, or to the circle.
    @inlinable public func distanceToBoundary(_ point: GeoPoint) -> Double {
        switch area {
        case let .polygons(polygons): polygons.map { $0.distanceToBoundary(point) }.min()!
        case let .circle(center, radius): abs(Geodesy.distance(center, point) - radius)
        }
    }
}

/// An index over many fences: which fences contain a point, and which may lie
/// within `reach` metres of it.
///
/// Each fence is listed in the grid cells its bounding box (widened by `reach`)
/// covers; fences too large for that (more than `maxCellsPerFence` cells) sit in a
/// short list that every lookup checks.
public struct GeofenceIndex<ID: Hashable & Sendable>: Sendable {
    public let cellDegrees: Double
    /// How far from a fence `candidates(near:)` still finds it, in metres.
    public let reach: Double
    public let maxCellsPerFence = 4096
    /// Fences by number; a removed fence's slot is nil until a new fence takes it.
    @usableFromInline var fences: [Geofence<ID>?] = []
    private var freeNumbers: [Int32] = []
    @usableFromInline var numberOf: [ID: Int32] = [:]
    @usableFromInline var cells: [Int64: [Int32]] = [:]
    @usableFromInline var large: [Int32] = []
    @usableFromInline let columns: Int64

    public init(cellDegrees: Double = 0.01, reach: Double = 0) {
        precondition(cellDegrees > 0, "cellDegrees must be positive")
        precondition(reach >= 0, "reach must not be negative")
        let columns = max(1, Int64((360 / cellDegrees).rounded(.down)))
        self.columns = columns
        self.cellDegrees = 360 / Double(columns)
        self.reach = reach
    }

    /// Fences in the index (removed ones not counted).
    public var count: Int { numberOf.count }

    /// Adds a fence; a fence with the same id is replaced.
    public mutating func insert(_ fence: Geofence<ID>) {
        remove(fence.id)
        let number: Int32
        if let free = freeNumbers.popLast() {
            number = free
            fences[Int(free)] = fence
        } else {
            number = Int32(fences.count)
            fences.append(fence)
        }
        numberOf[fence.id] = number
        let keys = cellKeys(of: fence)
        guard !keys.isEmpty else {
            large.append(number)
            return
        }
        for key in keys { cells[key, default: []].append(number) }
    }

    /// The cells `fence`'s box (widened by `reach`) covers; none when they are more than
    /// `maxCellsPerFence` (the fence is then checked on every lookup).
    private func cellKeys(of fence: Geofence<ID>) -> [Int64] {
        let box = reach > 0 ? fence.bounds.widened(by: reach) : fence.bounds
        let rows = row(box.minLat)...row(box.maxLat)
        let columnRanges = box.longitudeRanges.map { column($0.lowerBound)...column($0.upperBound) }
        let total = columnRanges.reduce(0) { $0 + Int64($1.count) } * Int64(rows.count)
        guard total <= maxCellsPerFence else { return [] }
        return rows.flatMap { r in columnRanges.flatMap { range in range.map { r * columns + $0 } } }
    }

    /// Takes a fence out: lookups no longer find it. Its cells are cleaned at once (a
    /// fence covers at most `maxCellsPerFence` of them) and its slot goes to the next fence.
    public mutating func remove(_ id: ID) {
        guard let number = numberOf.removeValue(forKey: id), let fence = fences[Int(number)] else { return }
        large.removeAll { $0 == number }
        for key in cellKeys(of: fence) {
            cells[key]?.removeAll { $0 == number }
            if cells[key]?.isEmpty == true { cells[key] = nil }
        }
        fences[Int(number)] = nil
        freeNumbers.append(number)
    }

    /// Ids of the fences containing `point`.
    @inlinable public func containing(_ point: GeoPoint) -> [ID] {
        var found: [ID] = []
        func test(_ number: Int32) {
            guard let fence = fences[Int(number)], fence.bounds.contains(point), fence.contains(point) else { return }
            found.append(fence.id)
        }
        if let listed = cells[row(point.lat) * columns + column(point.lon)] { for number in listed { test(number) } }
        for number in large { test(number) }
        return found
    }

    /// The fences that may contain `point` or lie within `reach` metres of it (their
    /// widened box holds it), in the order of their slots: a superset, each still to
    /// be tested against its polygons. A point far from every fence costs one cell lookup.
    @inlinable public func candidates(near point: GeoPoint) -> [Geofence<ID>] {
        let listed = cells[row(point.lat) * columns + column(point.lon)] ?? []
        guard !listed.isEmpty || !large.isEmpty else { return [] }
        let numbers = large.isEmpty ? listed : (listed + large).sorted()
        return numbers.compactMap { fences[Int($0)] }
    }

    /// The fence with `id`, if inserted.
    @inlinable public func fence(_ id: ID) -> Geofence<ID>? { numberOf[id].flatMap { fences[Int($0)] } }

    @inlinable func row(_ lat: Double) -> Int64 { Int64(((lat + 90) / cellDegrees).rounded(.down)) }

    @inlinable func column(_ lon: Double) -> Int64 {
        let column = Int64(((lon + 180) / cellDegrees).rounded(.down))
        return column >= columns ? columns - 1 : column
    }
}

/// A moving object entering or leaving a fence.
public struct GeofenceEvent<ObjectID: Hashable & Sendable, FenceID: Hashable & Sendable>: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable { case enter, exit }
    public let kind: Kind
    public let object: ObjectID
    public let fence: FenceID
}

/// Enter/exit detection for moving objects against a fence index.
///
/// An object enters a fence when its position is inside; it exits only when it is
/// outside and more than `margin` metres from the fence's boundary, so GPS noise
/// along an edge does not flap.
public struct GeofenceTracker<ObjectID: Hashable & Sendable, FenceID: Hashable & Sendable>: Sendable {
    public let fences: GeofenceIndex<FenceID>
    public let margin: Double
    private var inside: [ObjectID: Set<FenceID>] = [:]

    public init(fences: GeofenceIndex<FenceID>, margin: Double = 25) {
        self.fences = fences
        self.margin = margin
    }

    /// Fences `object` is currently in.
    public func fences(of object: ObjectID) -> Set<FenceID> { inside[object] ?? [] }

    public mutating func update(_ object: ObjectID, to point: GeoPoint) -> [GeofenceEvent<ObjectID, FenceID>] {
        let containing = Set(fences.containing(point))
        let previous = inside[object] ?? []
        var events: [GeofenceEvent<ObjectID, FenceID>] = []
        var now = previous
        for fence in containing.subtracting(previous) {
            now.insert(fence)
            events.append(.init(kind: .enter, object: object, fence: fence))
        }
        for fenceID in previous.subtracting(containing) {
            guard let fence = fences.fence(fenceID), fence.distanceToBoundary(point) > margin else { continue }
            now.remove(fenceID)
            events.append(.init(kind: .exit, object: object, fence: fenceID))
        }
        inside[object] = now
        return events
    }

    /// Forgets `object` (no events).
    public mutating func remove(_ object: ObjectID) { inside[object] = nil }
}
