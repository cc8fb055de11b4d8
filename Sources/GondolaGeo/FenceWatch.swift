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

    @inlinable func concerns(_ object: ObjectID) -> Bool {
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

    @inlinable init(kind: FenceEventKind, object: ObjectID, fence: FenceID, milliseconds: Int64) {
        self.kind = kind
        self.object = object
        self.fence = fence
        self.milliseconds = milliseconds
    }
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
/// stayed away that long: at the object's next position, or, for an object that sends
/// none (a phone lying still), when `advance(to:)` passes the moment the dwell ended. A
/// dwell event carries that moment (the stay's start plus the dwell time), however it is
/// noticed. An object's state is kept for the fences it is in or has a pending `outside`
/// for, nothing else.
public struct FenceWatch<ObjectID: Hashable & Sendable, FenceID: Hashable & Sendable>: Sendable {
    public let margin: Double
    @usableFromInline var index: GeofenceIndex<FenceID>
    @usableFromInline var rules: [FenceID: FenceRule<ObjectID, FenceID>] = [:]
    /// Roaming fences by anchor.
    @usableFromInline var roamingByAnchor: [ObjectID: Set<FenceID>] = [:]
    @usableFromInline var objects: [ObjectID: ObjectState] = [:]
    /// Positions ignored because they were older than their object's latest.
    public var stalePositions: Int { staleCount }
    @usableFromInline var staleCount = 0

    /// Where an object is and what it is in.
    @usableFromInline struct ObjectState: Sendable {
        @usableFromInline var point: GeoPoint
        @usableFromInline var milliseconds: Int64
        @usableFromInline var presence: [FenceID: Presence] = [:]

        @inlinable init(point: GeoPoint, milliseconds: Int64) {
            self.point = point
            self.milliseconds = milliseconds
        }
    }

    /// An object in a fence (`inside`), or away after leaving it, since when, and whether
    /// the dwell event of this stay or absence was reported.
    @usableFromInline struct Presence: Sendable {
        @usableFromInline var inside: Bool
        @usableFromInline var since: Int64
        @usableFromInline var reported: Bool

        @inlinable init(inside: Bool, since: Int64, reported: Bool) {
            self.inside = inside
            self.since = since
            self.reported = reported
        }
    }

    public init(margin: Double = 25, cellDegrees: Double = 0.0025) {
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
    @inlinable
    public mutating func update(_ object: ObjectID, to point: GeoPoint, at milliseconds: Int64) -> [FenceEvent<ObjectID, FenceID>] {
        if let known = objects[object], milliseconds < known.milliseconds {
            staleCount += 1
            return []
        }
        var state = objects.removeValue(forKey: object) ?? ObjectState(point: point, milliseconds: milliseconds)
        state.point = point
        state.milliseconds = milliseconds
        var events: [FenceEvent<ObjectID, FenceID>] = []
        // The fixed fences whose widened box holds the point, then those the object is still
        // in (or away from) that the point's cell does not list, then the roaming fences.
        let candidates = index.candidates(near: point)
        for fence in candidates {
            let wasInside = state.presence[fence.id]?.inside
            // Outside the box of a fence it was not in: nothing can happen.
            if wasInside == nil, !fence.bounds.contains(point) { continue }
            guard let rule = rules[fence.id], rule.concerns(object) else { continue }
            judge(object, &state, rule: rule, inside: isInside(point, fence, wasInside: wasInside ?? false), at: milliseconds, into: &events)
        }
        if !state.presence.isEmpty {
            for id in Array(state.presence.keys) where !candidates.contains(where: { $0.id == id }) {
                guard let rule = rules[id], case .fixed = rule.shape, let fence = index.fence(id) else { continue }
                judge(
                    object, &state, rule: rule, inside: isInside(point, fence, wasInside: state.presence[id]?.inside ?? false), at: milliseconds,
                    into: &events)
            }
        }
        for (anchor, fences) in roamingByAnchor where anchor != object {
            guard let anchorPoint = objects[anchor]?.point else { continue }
            for id in fences {
                guard let rule = rules[id], rule.concerns(object), case let .roaming(_, radius) = rule.shape else { continue }
                let wasInside = state.presence[id]?.inside ?? false
                let distance = Geodesy.distance(point, anchorPoint) - radius
                judge(object, &state, rule: rule, inside: distance <= 0 || (wasInside && distance <= margin), at: milliseconds, into: &events)
            }
        }
        objects[object] = state
        // The anchor moved: the objects its roaming fences concern are judged against its new position.
        for id in roamingByAnchor[object] ?? [] {
            guard let rule = rules[id], case let .roaming(_, radius) = rule.shape else { continue }
            for other in Array(objects.keys) where rule.concerns(other) {
                guard var otherState = objects[other] else { continue }
                let wasInside = otherState.presence[id]?.inside ?? false
                let distance = Geodesy.distance(point, otherState.point) - radius
                judge(other, &otherState, rule: rule, inside: distance <= 0 || (wasInside && distance <= margin), at: milliseconds, into: &events)
                objects[other] = otherState
            }
        }
        return events
    }

    /// Whether `point` counts as inside a fixed fence: inside it, or, for an object that
    /// was in it, outside by at most `margin` metres. The distance to the edge is measured
    /// only in that last case, and only when the point is within the margin of the box.
    @inlinable
    func isInside(_ point: GeoPoint, _ fence: Geofence<FenceID>, wasInside: Bool) -> Bool {
        if fence.bounds.contains(point) && fence.contains(point) { return true }
        guard wasInside, fence.bounds.widened(by: margin).contains(point) else { return false }
        return fence.distanceToBoundary(point) <= margin
    }

    /// Applies whether an object is inside one fence: the crossing and the dwell events,
    /// into `events`.
    @inlinable
    func judge(
        _ object: ObjectID, _ state: inout ObjectState, rule: FenceRule<ObjectID, FenceID>, inside: Bool, at milliseconds: Int64,
        into events: inout [FenceEvent<ObjectID, FenceID>]
    ) {
        let previous = state.presence[rule.id]
        let wasInside = previous?.inside ?? false
        switch (wasInside, inside) {
        case (false, true):
            if rule.detects.contains(.enter) { events.append(FenceEvent(kind: .enter, object: object, fence: rule.id, milliseconds: milliseconds)) }
            state.presence[rule.id] = Presence(inside: true, since: milliseconds, reported: false)
        case (true, false):
            if rule.detects.contains(.exit) { events.append(FenceEvent(kind: .exit, object: object, fence: rule.id, milliseconds: milliseconds)) }
            // An absence is followed only for a fence that reports `outside`.
            state.presence[rule.id] = rule.detects.contains(.outside) ? Presence(inside: false, since: milliseconds, reported: false) : nil
        default: break
        }
        reportDwell(of: object, &state, rule: rule, at: milliseconds, into: &events)
    }

    /// Reports `object`'s dwell event for `rule` when its stay or absence has lasted the
    /// rule's dwell time by `milliseconds` and was not reported yet.
    @inlinable
    func reportDwell(
        of object: ObjectID, _ state: inout ObjectState, rule: FenceRule<ObjectID, FenceID>, at milliseconds: Int64,
        into events: inout [FenceEvent<ObjectID, FenceID>]
    ) {
        guard var presence = state.presence[rule.id], !presence.reported, milliseconds - presence.since >= rule.dwellMilliseconds else { return }
        let kind: FenceEventKind = presence.inside ? .inside : .outside
        guard rule.detects.contains(kind) else { return }
        presence.reported = true
        events.append(FenceEvent(kind: kind, object: object, fence: rule.id, milliseconds: presence.since + rule.dwellMilliseconds))
        // A reported absence is over for the watch: nothing more to follow.
        state.presence[rule.id] = presence.inside ? presence : nil
    }

    /// Lets time pass to `milliseconds` without a position: reports the dwell events that
    /// have come due since each object's last position (the stays and absences that have
    /// lasted their rule's dwell time by then). Only objects in a fence or away from one
    /// with an `outside` pending are looked at.
    public mutating func advance(to milliseconds: Int64) -> [FenceEvent<ObjectID, FenceID>] {
        var events: [FenceEvent<ObjectID, FenceID>] = []
        for (object, var state) in objects where state.presence.contains(where: { !$0.value.reported }) {
            for (id, presence) in state.presence where !presence.reported {
                guard let rule = rules[id] else { continue }
                reportDwell(of: object, &state, rule: rule, at: milliseconds, into: &events)
            }
            objects[object] = state
        }
        return events
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
