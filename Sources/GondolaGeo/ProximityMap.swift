/// A located point's latest reported position, as a `ProximityMap` keeps it once
/// and frames show it: where, how exact, which way and how fast, and when it was taken.
public struct LivePosition: Sendable, Equatable {
    public var point: GeoPoint
    /// Metres, as the phone reports it.
    public var accuracy: Double?
    /// Degrees from north.
    public var heading: Double?
    /// Metres per second.
    public var speed: Double?
    /// When the phone took it (Unix ms).
    public var ts: Int64

    public init(point: GeoPoint, accuracy: Double? = nil, heading: Double? = nil, speed: Double? = nil, ts: Int64) {
        self.point = point
        self.accuracy = accuracy
        self.heading = heading
        self.speed = speed
        self.ts = ts
    }
}

/// A change in who is near a watcher.
public struct ProximityEvent: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// The subject came within the watcher's radius (and is among its nearest `limit`).
        case enter
        /// The subject, already near, changed since the watcher's last frame.
        case move
        /// The subject went beyond the radius plus the margin, fell out of the nearest
        /// `limit`, may no longer be seen, or left the map.
        case leave
    }

    public let kind: Kind
    public let subject: Int32
    /// Where the subject is; for a `leave`, its last known position (nil if unknown).
    public let point: GeoPoint?
    /// Metres between watcher and subject.
    public let distance: Double

    public init(kind: Kind, subject: Int32, point: GeoPoint?, distance: Double) {
        self.kind = kind
        self.subject = subject
        self.point = point
        self.distance = distance
    }
}

/// The proximity engine: who is where, and who is near each watcher. It keeps
/// each located point's `LivePosition` once (the exact position and what frames
/// show with it), the points in a `PointGrid` for the queries, each watcher's
/// radius, limit and what it was told, and when each point and each patch of the
/// map last changed.
///
/// Frames: updates only record what changed, each change with a new number of
/// the `version` sequence. Watchers are spread over
/// `phases` by slot and each tick handles one phase, so an interval of `phases`
/// ticks gives every watcher at most one frame and its work is spread over the
/// interval instead of arriving in one burst. In its tick a watcher is recomputed
/// when anything that could change its answer changed since its last frame: its
/// own position, a point it was told about, or any cell of the `ChangeGrid`
/// within its reach. Recomputing finds the nearest `limit` visible points within
/// `radius`, keeping those already told while they stay within `radius + margin`
/// (the hysteresis, so someone on the edge does not flap); the difference with what
/// the watcher was told gives `enter`, `move` (a told point that changed since
/// the watcher's last frame) and `leave`.
///
/// Points and watchers are dense `Int32` slots of the caller's numbering, the same
/// numbers the grid uses. Not thread-safe: keep it under one lock or executor.
public struct ProximityMap: Sendable {
    struct Watch {
        var radius: Double
        var limit: Int
        /// What the watcher was told is near, nearest first, with the distance at the time.
        var told: [Told] = []
        /// The `version` at the watcher's last frame (or snapshot).
        var lastFrame: Int
        /// When the last answer was full (`limit` points), the distance of the farthest.
        var fullWithin: Double? = nil
    }

    /// A point a watcher was told about, with its distance then.
    struct Told {
        let subject: Int32
        let distance: Double
    }

    /// Extra distance a told point may go beyond the radius before it leaves.
    public let margin: Double
    /// How far beyond the last full answer's farthest point a recomputation first looks.
    static var fullAnswerSlack: Double { 50 }
    /// Ticks per interval; watcher `slot` gets its frames in the ticks of phase `slot % phases`.
    public let phases: Int
    private var grid: PointGrid
    /// Each slot's fix while it is on the map.
    private var fixes: [LivePosition?] = []
    /// When each slot's fix was received (what expiry goes by).
    private var receivedAt: [Int64] = []
    /// Each slot's watch, while it watches.
    private var watches: [Watch?] = []
    /// Scratch marks by slot for `recompute`: `stamp - 1` on what the watcher was told, `stamp` on what it is told now.
    private var marks: [UInt32] = []
    private var stamp: UInt32 = 0
    private var watchersByPhase: [Set<Int32>]
    private var changes: ChangeGrid
    /// The version of each slot's last move, leave or reconsideration.
    private var changedIn: [Int] = []
    /// The number of the last change; a frame or snapshot taken now includes every change up to it.
    public private(set) var version = 0
    /// `version` when the current interval started: every watcher's last frame is at least that.
    private var versionAtIntervalStart = 0
    /// Counts frame ticks; the tick's phase is `tick % phases`.
    public private(set) var tick = 0
    /// Last positions of points that left, with their tick, kept for one
    /// interval so that every watcher's `leave` can say where.
    private var departed: [Int32: (point: GeoPoint, tick: Int)] = [:]

    public init(cellMetres: Double = 250, margin: Double = 20, phases: Int = 1) {
        precondition(phases >= 1, "at least one phase")
        grid = PointGrid(cellMetres: cellMetres)
        changes = ChangeGrid(cellMetres: cellMetres)
        self.margin = margin
        self.phases = phases
        watchersByPhase = Array(repeating: [], count: phases)
    }

    private mutating func reserve(_ slot: Int32) {
        let needed = Int(slot) + 1
        guard fixes.count < needed else { return }
        let extra = needed - fixes.count
        fixes.append(contentsOf: repeatElement(nil, count: extra))
        receivedAt.append(contentsOf: repeatElement(0, count: extra))
        changedIn.append(contentsOf: repeatElement(0, count: extra))
        watches.append(contentsOf: repeatElement(nil, count: extra))
        marks.append(contentsOf: repeatElement(0, count: extra))
    }

    /// Points on the map.
    public var count: Int { grid.count }

    /// `slot`'s fix while it is on the map.
    public func fix(of slot: Int32) -> LivePosition? {
        Int(slot) < fixes.count ? fixes[Int(slot)] : nil
    }

    /// Whether `slot` moved, left or was reconsidered after change number `version`.
    public func hasChanged(_ slot: Int32, after version: Int) -> Bool {
        Int(slot) < changedIn.count && changedIn[Int(slot)] > version
    }

    /// The phase whose ticks carry `watcher`'s frames.
    public func phase(of watcher: Int32) -> Int { Int(watcher) % phases }

    private mutating func markChanged(_ slot: Int32, at point: GeoPoint?) {
        reserve(slot)
        version += 1
        changedIn[Int(slot)] = version
        if let point { changes.mark(point, version: version) }
    }

    /// Records a new fix; `receivedAt` (any monotonic unit, e.g. server Unix ms) is what expiry goes by.
    public mutating func update(_ slot: Int32, _ fix: LivePosition, receivedAt: Int64) {
        if let old = self.fix(of: slot) { changes.mark(old.point, version: version + 1) }
        reserve(slot)
        fixes[Int(slot)] = fix
        self.receivedAt[Int(slot)] = receivedAt
        departed[slot] = nil
        grid.place(slot, at: fix.point)
        markChanged(slot, at: fix.point)
    }

    /// Takes a point off the map (its watchers get `leave` in their next frame).
    public mutating func remove(_ slot: Int32) {
        guard let fix = fix(of: slot) else { return }
        grid.remove(slot)
        departed[slot] = (fix.point, tick)
        fixes[Int(slot)] = nil
        markChanged(slot, at: fix.point)
    }

    /// Removes the fixes received before `timestamp`; returns their slots.
    public mutating func expire(receivedBefore timestamp: Int64) -> [Int32] {
        let stale = fixes.indices.filter { fixes[$0] != nil && receivedAt[$0] < timestamp }.map(Int32.init)
        for slot in stale { remove(slot) }
        return stale
    }

    /// Marks a point whose visibility or relations changed, so every frame
    /// consumer looks at it again.
    public mutating func reconsider(_ slot: Int32) { markChanged(slot, at: fix(of: slot)?.point) }

    /// The points within `radius` metres of `center` that `accept` takes (given the
    /// slot and the distance), nearest first, at most `limit`, with their exact positions.
    public func nearby(_ center: GeoPoint, radius: Double, limit: Int = .max, accepting accept: (Int32, Double) -> Bool) -> [Neighbour<Int32>] {
        grid.nearby(center, radius: radius, limit: limit, accepting: accept).map { match in
            Neighbour(id: match.slot, point: fixes[Int(match.slot)]!.point, distance: match.distance)
        }
    }

    // MARK: Nearby

    /// Starts (or changes) `slot`'s watch. Answers who is near now, nearest first,
    /// and the events an earlier watch of the same slot must hear to match.
    public mutating func watch(_ slot: Int32, radius: Double, limit: Int, canSee: (Int32, Int32) -> Bool) -> (
        snapshot: [Neighbour<Int32>], events: [ProximityEvent]
    ) {
        reserve(slot)
        if watches[Int(slot)] == nil {
            watches[Int(slot)] = Watch(radius: radius, limit: limit, lastFrame: version)
        } else {
            watches[Int(slot)]!.radius = radius
            watches[Int(slot)]!.limit = limit
        }
        watchersByPhase[phase(of: slot)].insert(slot)
        return recompute(slot, canSee: canSee)
    }

    /// Every watcher with its radius.
    public var watchers: [(watcher: Int32, radius: Double)] {
        watches.indices.compactMap { slot in watches[slot].map { (Int32(slot), $0.radius) } }
    }

    /// Ends `slot`'s watch.
    public mutating func unwatch(_ slot: Int32) {
        guard Int(slot) < watches.count, watches[Int(slot)] != nil else { return }
        watches[Int(slot)] = nil
        watchersByPhase[phase(of: slot)].remove(slot)
    }

    /// The events of this tick's frames for the watchers of `phase`, by watcher.
    /// Call `endFrame` afterwards.
    public mutating func nearbyFrame(phase: Int = 0, canSee: (Int32, Int32) -> Bool) -> [(watcher: Int32, events: [ProximityEvent])] {
        var frames: [(watcher: Int32, events: [ProximityEvent])] = []
        for watcher in watchersByPhase[phase] {
            guard let watch = watches[Int(watcher)] else { continue }
            guard mayHaveChanged(watcher, watch) else {
                watches[Int(watcher)]!.lastFrame = version
                continue
            }
            let events = recompute(watcher, canSee: canSee).events
            if !events.isEmpty { frames.append((watcher, events)) }
        }
        return frames
    }

    /// Whether anything that decides `watcher`'s answer changed since its last frame.
    private func mayHaveChanged(_ watcher: Int32, _ watch: Watch) -> Bool {
        if hasChanged(watcher, after: watch.lastFrame) { return true }
        if watch.told.contains(where: { hasChanged($0.subject, after: watch.lastFrame) }) { return true }
        guard let center = fix(of: watcher)?.point else { return false }
        return changes.changed(in: BoundingBox(around: center, radius: watch.radius + margin), after: watch.lastFrame)
    }

    /// Ends the tick; changes from now on belong to the next one.
    public mutating func endFrame() {
        tick += 1
        if tick % phases == 0 {
            // Every watcher had a frame in the interval that just ended; older stamps decide nothing.
            changes.forget(notAfter: versionAtIntervalStart)
            versionAtIntervalStart = version
        }
        if !departed.isEmpty { departed = departed.filter { tick - $0.value.tick <= phases } }
    }

    /// The nearest `limit` visible points within the radius (told ones within
    /// radius + margin), and the events that turn what was told into that.
    private mutating func recompute(_ watcher: Int32, canSee: (Int32, Int32) -> Bool) -> (snapshot: [Neighbour<Int32>], events: [ProximityEvent]) {
        guard Int(watcher) < watches.count, var watch = watches[Int(watcher)] else { return ([], []) }
        let since = watch.lastFrame
        watch.lastFrame = version
        let (wasTold, isTold) = nextStamps()
        for told in watch.told { marks[Int(told.subject)] = wasTold }
        let center = fix(of: watcher)?.point
        var desired: [Neighbour<Int32>] = []
        if let center {
            let radius = watch.radius
            func nearest(within reach: Double) -> [Neighbour<Int32>] {
                nearby(center, radius: reach, limit: watch.limit) { candidate, distance in
                    candidate != watcher && (distance <= radius || marks[Int(candidate)] == wasTold) && canSee(watcher, candidate)
                }
            }
            // In a crowd the answer is usually full well inside the radius: look near the last
            // answer's edge first. `limit` found there are the nearest `limit` of the whole
            // reach, since everything beyond is farther; fewer means looking at all of it.
            let outer = radius + margin
            if let fullWithin = watch.fullWithin, fullWithin + Self.fullAnswerSlack < outer {
                desired = nearest(within: fullWithin + Self.fullAnswerSlack)
            }
            if desired.count < watch.limit { desired = nearest(within: outer) }
        }
        watch.fullWithin = desired.count == watch.limit ? desired.last?.distance : nil
        var events: [ProximityEvent] = []
        var told: [Told] = []
        told.reserveCapacity(desired.count)
        for found in desired {
            if marks[Int(found.id)] != wasTold {
                events.append(ProximityEvent(kind: .enter, subject: found.id, point: found.point, distance: found.distance))
            } else if hasChanged(found.id, after: since) {
                events.append(ProximityEvent(kind: .move, subject: found.id, point: found.point, distance: found.distance))
            }
            marks[Int(found.id)] = isTold
            told.append(Told(subject: found.id, distance: found.distance))
        }
        for gone in watch.told where marks[Int(gone.subject)] == wasTold {
            let point = fix(of: gone.subject)?.point ?? departed[gone.subject]?.point
            let now = point.flatMap { p in center.map { Geodesy.distance($0, p) } } ?? gone.distance
            events.append(ProximityEvent(kind: .leave, subject: gone.subject, point: point, distance: now))
        }
        watch.told = told
        watches[Int(watcher)] = watch
        return (desired, events)
    }

    /// Two fresh values for `marks` that no slot holds yet.
    private mutating func nextStamps() -> (UInt32, UInt32) {
        if stamp > UInt32.max - 2 {
            for index in marks.indices { marks[index] = 0 }
            stamp = 0
        }
        stamp += 2
        return (stamp - 1, stamp)
    }
}
