/// A change in who is near a watcher.
public struct ProximityEvent<ID: Hashable & Sendable>: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        /// The subject came within the watcher's radius.
        case enter
        /// The subject, already near, moved.
        case move
        /// The subject went farther than the radius plus the hysteresis margin, or left the index.
        case leave
    }

    public let kind: Kind
    public let watcher: ID
    public let subject: ID
    /// Where the subject is (its last position for a `leave` on removal).
    public let point: GeoPoint
    /// Metres between watcher and subject.
    public let distance: Double

    @inlinable
    public init(kind: Kind, watcher: ID, subject: ID, point: GeoPoint, distance: Double) {
        self.kind = kind
        self.watcher = watcher
        self.subject = subject
        self.point = point
        self.distance = distance
    }
}

/// Roaming proximity: moving points that also watch a radius around themselves
/// ("who is near me"), with events for each change.
///
/// Rules, applied after every update of a point P (one radius query around P finds
/// everyone concerned):
/// - each watcher W that has P as a neighbour gets `move` while P stays within
///   W's radius plus `margin`, and `leave` once P is farther;
/// - each other watcher W within its radius of P, not having P yet, gets `enter`;
/// - if P watches, its neighbours farther than its radius plus `margin` `leave`,
///   and points within its radius that were not neighbours `enter`. P's stationary
///   neighbours get no `move` because they did not move.
/// The margin is the hysteresis: someone standing on the boundary enters once and
/// does not flap. Work per update is one radius query around P, so cost follows the
/// neighbourhood, not the number of watchers.
public struct ProximityTracker<ID: Hashable & Sendable>: Sendable {
    /// The positions of every tracked point.
    public var index: MovingPointIndex<ID> { points }
    @usableFromInline var points: MovingPointIndex<ID>
    public let margin: Double
    @usableFromInline var radii: [ID: Double] = [:]
    @usableFromInline var radiusCounts: [Double: Int] = [:]
    @usableFromInline var neighbours: [ID: Set<ID>] = [:]
    @usableFromInline var watchedBy: [ID: Set<ID>] = [:]

    @inlinable public init(cellMetres: Double = 300, margin: Double = 20) {
        points = MovingPointIndex(cellMetres: cellMetres)
        self.margin = margin
    }

    /// The largest watch radius, which bounds the search for new watchers of a moved point.
    @usableFromInline var maxRadius: Double { radiusCounts.keys.max() ?? 0 }

    /// Current neighbours of `watcher`.
    @inlinable public func neighbours(of watcher: ID) -> Set<ID> { neighbours[watcher] ?? [] }

    /// The radius `id` watches, if it watches.
    @inlinable public func radius(of id: ID) -> Double? { radii[id] }

    /// Starts (or resizes) `id`'s watch; returns `enter`s for who is near now
    /// (and `leave`s for neighbours a smaller radius drops).
    @inlinable public mutating func watch(_ id: ID, radius: Double) -> [ProximityEvent<ID>] {
        precondition(radius >= 0, "radius must not be negative")
        if let old = radii[id] { forgetRadius(old) }
        radii[id] = radius
        radiusCounts[radius, default: 0] += 1
        guard let position = points.point(of: id) else { return [] }
        return refreshOwnNeighbours(id, at: position)
    }

    /// Stops `id`'s watch silently.
    @inlinable public mutating func unwatch(_ id: ID) {
        guard let old = radii.removeValue(forKey: id) else { return }
        forgetRadius(old)
        for subject in neighbours.removeValue(forKey: id) ?? [] {
            watchedBy[subject]?.remove(id)
        }
    }

    @inlinable mutating func forgetRadius(_ radius: Double) {
        radiusCounts[radius, default: 1] -= 1
        if radiusCounts[radius] == 0 { radiusCounts[radius] = nil }
    }

    /// Moves `id` (inserting it when new) and returns every watcher's events.
    ///
    /// Distances are symmetric, so one query around the new position, reaching the
    /// largest watch radius plus the margin, answers both "who watches `id`" and
    /// "whom `id` watches"; anyone linked but outside that reach is farther than any
    /// radius plus margin and leaves.
    @inlinable
    public mutating func update(_ id: ID, to point: GeoPoint, timestamp: Int64) -> [ProximityEvent<ID>] {
        points.upsert(id, at: point, timestamp: timestamp)
        let ownRadius = radii[id]
        let reach = max(maxRadius, ownRadius ?? 0) + margin
        let watchers = watchedBy[id] ?? []
        let own = neighbours[id] ?? []
        var events: [ProximityEvent<ID>] = []
        var linkedSeen = 0
        let nearby = points.nearby(point, radius: reach, filter: { $0 != id })
        for found in nearby {
            let other = found.id, distance = found.distance
            if let radius = radii[other] {
                if watchers.contains(other) {
                    linkedSeen += 1
                    if distance > radius + margin {
                        unlink(watcher: other, subject: id)
                        events.append(.init(kind: .leave, watcher: other, subject: id, point: point, distance: distance))
                    } else {
                        events.append(.init(kind: .move, watcher: other, subject: id, point: point, distance: distance))
                    }
                } else if distance <= radius {
                    link(watcher: other, subject: id)
                    events.append(.init(kind: .enter, watcher: other, subject: id, point: point, distance: distance))
                }
            }
            if let radius = ownRadius {
                if own.contains(other) {
                    linkedSeen += 1
                    if distance > radius + margin {
                        unlink(watcher: id, subject: other)
                        events.append(.init(kind: .leave, watcher: id, subject: other, point: found.point, distance: distance))
                    }
                } else if distance <= radius {
                    link(watcher: id, subject: other)
                    events.append(.init(kind: .enter, watcher: id, subject: other, point: found.point, distance: distance))
                }
            }
        }
        if linkedSeen < watchers.count + own.count {
            let reached = Set(nearby.map(\.id))
            for watcher in watchers where !reached.contains(watcher) {
                unlink(watcher: watcher, subject: id)
                let distance = points.point(of: watcher).map { Geodesy.distance($0, point) } ?? .infinity
                events.append(.init(kind: .leave, watcher: watcher, subject: id, point: point, distance: distance))
            }
            for subject in own where !reached.contains(subject) {
                unlink(watcher: id, subject: subject)
                let subjectPoint = points.point(of: subject) ?? point
                events.append(.init(kind: .leave, watcher: id, subject: subject, point: subjectPoint, distance: Geodesy.distance(point, subjectPoint)))
            }
        }
        return events
    }

    /// Removes `id` from the index: its watchers get `leave`, its own watch ends.
    @inlinable public mutating func remove(_ id: ID) -> [ProximityEvent<ID>] {
        guard let point = points.point(of: id) else { return [] }
        var events: [ProximityEvent<ID>] = []
        for watcher in watchedBy.removeValue(forKey: id) ?? [] {
            neighbours[watcher]?.remove(id)
            let distance = points.point(of: watcher).map { Geodesy.distance($0, point) } ?? 0
            events.append(.init(kind: .leave, watcher: watcher, subject: id, point: point, distance: distance))
        }
        for subject in neighbours[id] ?? [] { watchedBy[subject]?.remove(id) }
        neighbours[id] = []
        points.remove(id)
        return events
    }

    /// Removes the points last updated before `timestamp`, with their `leave`s.
    @inlinable public mutating func expire(olderThan timestamp: Int64) -> [ProximityEvent<ID>] {
        var stale: [ID] = []
        for entry in points.all where (points.timestamp(of: entry.id) ?? .max) < timestamp { stale.append(entry.id) }
        return stale.flatMap { remove($0) }
    }

    @inlinable mutating func refreshOwnNeighbours(_ id: ID, at point: GeoPoint) -> [ProximityEvent<ID>] {
        guard let radius = radii[id] else { return [] }
        var events: [ProximityEvent<ID>] = []
        let current = neighbours[id] ?? []
        for subject in current {
            guard let subjectPoint = points.point(of: subject) else { continue }
            let distance = Geodesy.distance(point, subjectPoint)
            if distance > radius + margin {
                unlink(watcher: id, subject: subject)
                events.append(.init(kind: .leave, watcher: id, subject: subject, point: subjectPoint, distance: distance))
            }
        }
        for found in points.nearby(point, radius: radius, filter: { $0 != id && !current.contains($0) }) {
            link(watcher: id, subject: found.id)
            events.append(.init(kind: .enter, watcher: id, subject: found.id, point: found.point, distance: found.distance))
        }
        return events
    }

    @inlinable mutating func link(watcher: ID, subject: ID) {
        neighbours[watcher, default: []].insert(subject)
        watchedBy[subject, default: []].insert(watcher)
    }

    @inlinable mutating func unlink(watcher: ID, subject: ID) {
        neighbours[watcher]?.remove(subject)
        watchedBy[subject]?.remove(watcher)
    }
}
