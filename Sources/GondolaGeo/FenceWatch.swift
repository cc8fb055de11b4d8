/// What a fence reports: an object's entering or leaving it, its staying inside for the
/// rule's dwell time, or its staying away that long after it left.
public enum FenceEventKind: String, Sendable, Hashable, CaseIterable {
    case enter, exit, inside, outside
}

/// A fence of a `FenceWatch`: fixed (an area), or roaming around a moving object (within
/// `radius` metres of it), the events it reports and the objects it concerns.
public struct FenceRule<ObjectID: Hashable & Sendable, FenceID: Hashable & Sendable>: Sendable {
    public enum Shape: Sendable {
        case fixed(Geofence<FenceID>.Area)
        /// The circle of `radius` metres around `anchor`'s latest position; the anchor
        /// itself is never in it.
        case roaming(anchor: ObjectID, radius: Double)
    }

    public let id: FenceID
    public let shape: Shape
    public let detects: Set<FenceEventKind>
    /// How long an object stays inside before `inside`, or away after leaving before `outside`, in milliseconds.
    public let dwellMilliseconds: Int64
    /// The objects it concerns; nil: every object.
    public let concerns: Set<ObjectID>?

    public init(
        id: FenceID, shape: Shape, detects: Set<FenceEventKind> = [.enter, .exit], dwellMilliseconds: Int64 = 0,
        concerns: Set<ObjectID>? = nil
    ) {
        self.id = id
        self.shape = shape
        self.detects = detects
        self.dwellMilliseconds = dwellMilliseconds
        self.concerns = concerns
    }

    func concerns(_ object: ObjectID) -> Bool {
        if case let .roaming(anchor, _) = shape, anchor == object { return false }
        return concerns?.contains(object) ?? true
    }
}

/// One event of a `FenceWatch`: what happened, to which object, in which fence, at the
/// time of the position that showed it.
public struct FenceEvent<ObjectID: Hashable & Sendable, FenceID: Hashable & Sendable>: Sendable, Hashable {
    public let kind: FenceEventKind
    public let object: ObjectID
    public let fence: FenceID
    public let milliseconds: Int64
}

/// Tile38-style detection for moving objects against many fences: fixed fences sit in a
/// `GeofenceIndex`, so a position is tested against the fences whose box (widened by
/// `margin`) holds it and those the object is already in, never against every fence;
/// roaming fences are tested on the moves of the objects they concern and of their anchor.
///
/// Hysteresis: an object enters a fence once it is inside; it leaves only once it is
/// outside by more than `margin` metres, so GPS jitter at an edge reports one crossing.
/// Each crossing is reported once. Positions carry their time: one older than the
/// object's latest is ignored (counted in `stalePositions`), so positions arriving out of
/// order cannot report a crossing twice or backwards. `inside` is reported once per stay
/// that lasts the rule's dwell time, and `outside` once when an object that left has
/// stayed away that long; both are noticed at the object's next position. An object's
/// state is kept for the fences it is in or has a pending `outside` for, nothing else.
public struct FenceWatch<ObjectID: Hashable & Sendable, FenceID: Hashable & Sendable>: Sendable {
    public let margin: Double
    private var index: GeofenceIndex<FenceID>
    private var rules: [FenceID: FenceRule<ObjectID, FenceID>] = [:]
    /// Roaming fences by anchor.
    private var roamingByAnchor: [ObjectID: Set<FenceID>] = [:]
    private var objects: [ObjectID: ObjectState] = [:]
    /// Positions ignored because they were older than their object's latest.
    public private(set) var stalePositions = 0

    /// Where an object is and what it is in.
    private struct ObjectState {
        var point: GeoPoint
        var milliseconds: Int64
        var presence: [FenceID: Presence] = [:]
    }

    /// An object in a fence (`inside`), or away after leaving it, since when, and whether
    /// the dwell event of this stay or absence was reported.
    private struct Presence {
        var inside: Bool
        var since: Int64
        var reported: Bool
    }

    public init(margin: Double = 25, cellDegrees: Double = 0.01) {
        self.margin = margin
        index = GeofenceIndex(cellDegrees: cellDegrees, reach: margin)
    }

    public var fenceCount: Int { rules.count }

    /// Adds or replaces a fence. Objects keep what they were in; a replaced fence is
    /// judged afresh at each object's next position.
    public mutating func add(_ rule: FenceRule<ObjectID, FenceID>) {
        remove(rule.id)
        rules[rule.id] = rule
        switch rule.shape {
        case let .fixed(area): index.insert(Geofence(id: rule.id, area: area))
        case let .roaming(anchor, _): roamingByAnchor[anchor, default: []].insert(rule.id)
        }
    }

    /// Removes a fence; no event is reported for it any more.
    public mutating func remove(_ id: FenceID) {
        guard let rule = rules.removeValue(forKey: id) else { return }
        switch rule.shape {
        case .fixed: index.remove(id)
        case let .roaming(anchor, _):
            roamingByAnchor[anchor]?.remove(id)
            if roamingByAnchor[anchor]?.isEmpty == true { roamingByAnchor[anchor] = nil }
        }
        for object in objects.keys { objects[object]?.presence[id] = nil }
    }

    /// The fences `object` is in.
    public func fences(of object: ObjectID) -> Set<FenceID> {
        Set(objects[object]?.presence.compactMap { $0.value.inside ? $0.key : nil } ?? [])
    }

    /// The latest position of `object`, and its time.
    public func position(of object: ObjectID) -> (point: GeoPoint, milliseconds: Int64)? {
        objects[object].map { ($0.point, $0.milliseconds) }
    }

    /// Moves `object` to `point` at `milliseconds` and returns the events it causes, its
    /// own and, when it anchors roaming fences, those of the objects around it.
    public mutating func update(_ object: ObjectID, to point: GeoPoint, at milliseconds: Int64) -> [FenceEvent<ObjectID, FenceID>] {
        if let known = objects[object], milliseconds < known.milliseconds {
            stalePositions += 1
            return []
        }
        var state = objects[object] ?? ObjectState(point: point, milliseconds: milliseconds)
        state.point = point
        state.milliseconds = milliseconds
        var judged = Set(index.candidates(near: point).map(\.id))
        judged.formUnion(state.presence.keys)
        for (anchor, fences) in roamingByAnchor where anchor != object { judged.formUnion(fences) }
        var events: [FenceEvent<ObjectID, FenceID>] = []
        for id in judged {
            guard let rule = rules[id], rule.concerns(object), let distance = signedDistance(of: point, to: rule) else { continue }
            judge(object, &state, rule: rule, distance: distance, milliseconds: milliseconds, into: &events)
        }
        objects[object] = state
        // The anchor moved: the objects its roaming fences concern are judged against its new position.
        for id in roamingByAnchor[object] ?? [] {
            guard let rule = rules[id], case let .roaming(_, radius) = rule.shape else { continue }
            for other in objects.keys where rule.concerns(other) {
                guard var otherState = objects[other] else { continue }
                let distance = Geodesy.distance(point, otherState.point) - radius
                judge(other, &otherState, rule: rule, distance: distance, milliseconds: milliseconds, into: &events)
                objects[other] = otherState
            }
        }
        return events
    }

    /// Metres from `point` to the fence's edge: negative inside, positive outside; nil for
    /// a roaming fence whose anchor has no position yet.
    private func signedDistance(of point: GeoPoint, to rule: FenceRule<ObjectID, FenceID>) -> Double? {
        switch rule.shape {
        case .fixed:
            guard let fence = index.fence(rule.id) else { return nil }
            let edge = fence.distanceToBoundary(point)
            return fence.contains(point) ? -edge : edge
        case let .roaming(anchor, radius):
            return objects[anchor].map { Geodesy.distance(point, $0.point) - radius }
        }
    }

    /// Applies one object's distance to one fence's edge: the crossing (with the margin
    /// for leaving) and the dwell events, into `events`.
    private func judge(
        _ object: ObjectID, _ state: inout ObjectState, rule: FenceRule<ObjectID, FenceID>, distance: Double, milliseconds: Int64,
        into events: inout [FenceEvent<ObjectID, FenceID>]
    ) {
        func report(_ kind: FenceEventKind) {
            if rule.detects.contains(kind) { events.append(FenceEvent(kind: kind, object: object, fence: rule.id, milliseconds: milliseconds)) }
        }
        let previous = state.presence[rule.id]
        let wasInside = previous?.inside ?? false
        let inside = distance <= 0 || (wasInside && distance <= margin)
        switch (wasInside, inside) {
        case (false, true):
            report(.enter)
            state.presence[rule.id] = Presence(inside: true, since: milliseconds, reported: false)
        case (true, false):
            report(.exit)
            // An absence is followed only for a fence that reports `outside`.
            state.presence[rule.id] = rule.detects.contains(.outside) ? Presence(inside: false, since: milliseconds, reported: false) : nil
        default: break
        }
        guard var presence = state.presence[rule.id], !presence.reported, milliseconds - presence.since >= rule.dwellMilliseconds,
            rule.detects.contains(presence.inside ? .inside : .outside)
        else { return }
        presence.reported = true
        report(presence.inside ? .inside : .outside)
        // A reported absence is over for the watch: nothing more to follow.
        state.presence[rule.id] = presence.inside ? presence : nil
    }

    /// Forgets an object (it left the trip, or stopped sending positions).
    public mutating func forget(_ object: ObjectID) {
        objects[object] = nil
    }
}

extension Geofence {
    /// A fence of `area` under `id`.
    init(id: ID, area: Area) {
        switch area {
        case let .polygons(polygons): self.init(id: id, polygons: polygons)
        case let .circle(center, radius): self.init(id: id, center: center, radius: radius)
        }
    }
}
