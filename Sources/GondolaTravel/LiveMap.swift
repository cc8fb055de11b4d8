import GondolaGeo

/// A traveller's latest reported position.
struct LivePosition: Sendable {
    var point: GeoPoint
    var accuracy: Double?
    var heading: Double?
    var speed: Double?
    /// When the phone took it (Unix ms).
    var ts: Int64
}

/// A change in who is near a watcher, as sent on `nearby:#<uid>`.
struct NearbyEvent: Sendable, Equatable {
    enum Kind: String, Sendable { case enter, move, leave }
    let kind: Kind
    let subject: Int32
    /// Where the subject is; for a `leave`, its last known position (nil if unknown).
    let point: GeoPoint?
    let distance: Double
    /// When the subject's position was taken (Unix ms); nil for a `leave` without one.
    var ts: Int64? = nil
}

/// Who is where, and who is near each watcher: the positions of every located
/// traveller in a `MovingPointIndex`, each nearby watcher's radius, limit and what
/// it was told, and when each traveller and each patch of the map last changed.
///
/// Frames: updates only record what changed, each change with a new number of
/// the `version` sequence. Watchers are spread over
/// `phases` by slot and each tick handles one phase, so an interval of `phases`
/// ticks gives every watcher at most one frame and its work is spread over the
/// interval instead of arriving in one burst. In its tick a watcher is recomputed
/// when anything that could change its answer changed since its last frame: its
/// own position, a traveller it was told about, or any cell of the `ChangeGrid`
/// within its reach. Recomputing finds the nearest `limit` visible travellers within
/// `radius`, keeping those already told while they stay within `radius + margin`
/// (the hysteresis, so someone on the edge does not flap); the difference with what
/// the watcher was told gives `enter`, `move` (a told traveller that changed since
/// the watcher's last frame) and `leave`.
///
/// Ids are dense `Int32` slots (see `UserSlots`). Not thread-safe; the location
/// service keeps it under one lock.
struct LiveMap {
    struct Watch {
        var radius: Double
        var limit: Int
        /// What the watcher was told is near, with the distance at the time.
        var told: [Int32: Double] = [:]
        /// The `version` at the watcher's last frame (or snapshot).
        var lastFrame: Int
        /// When the last answer was full (`limit` travellers), the distance of the farthest.
        var fullWithin: Double? = nil
    }

    /// Extra distance a told traveller may go beyond the radius before it leaves.
    let margin: Double
    /// How far beyond the last full answer's farthest traveller a recomputation first looks.
    static let fullAnswerSlack = 50.0
    /// Ticks per interval; watcher `slot` gets its frames in the ticks of phase `slot % phases`.
    let phases: Int
    private(set) var index: MovingPointIndex<Int32>
    private var positions: [LivePosition?] = []
    private var watches: [Int32: Watch] = [:]
    private var watchersByPhase: [Set<Int32>]
    private var grid: ChangeGrid
    /// The version of each slot's last move, leave or reconsideration.
    private var changedIn: [Int] = []
    /// The number of the last change; a frame or snapshot taken now includes every change up to it.
    private(set) var version = 0
    /// `version` when the current interval started: every watcher's last frame is at least that.
    private var versionAtIntervalStart = 0
    /// Counts frame ticks; the tick's phase is `tick % phases`.
    private(set) var tick = 0
    /// Last positions of travellers that left, with their tick, kept for one
    /// interval so that every watcher's `leave` can say where.
    private var departed: [Int32: (point: GeoPoint, tick: Int)] = [:]

    init(cellMetres: Double = 250, margin: Double = 20, phases: Int = 1) {
        precondition(phases >= 1, "at least one phase")
        index = MovingPointIndex(cellMetres: cellMetres)
        grid = ChangeGrid(cellMetres: cellMetres)
        self.margin = margin
        self.phases = phases
        watchersByPhase = Array(repeating: [], count: phases)
    }

    private mutating func reserve(_ slot: Int32) {
        let needed = Int(slot) + 1
        guard positions.count < needed else { return }
        let extra = needed - positions.count
        positions.append(contentsOf: repeatElement(nil, count: extra))
        changedIn.append(contentsOf: repeatElement(0, count: extra))
    }

    func position(of slot: Int32) -> LivePosition? {
        Int(slot) < positions.count ? positions[Int(slot)] : nil
    }

    /// Whether `slot` moved, left or was reconsidered after change number `version`.
    func hasChanged(_ slot: Int32, after version: Int) -> Bool {
        Int(slot) < changedIn.count && changedIn[Int(slot)] > version
    }

    /// The phase whose ticks carry `watcher`'s frames.
    func phase(of watcher: Int32) -> Int { Int(watcher) % phases }

    private mutating func markChanged(_ slot: Int32, at point: GeoPoint?) {
        reserve(slot)
        version += 1
        changedIn[Int(slot)] = version
        if let point { grid.mark(point, version: version) }
    }

    /// Records a new position; `receivedAt` (server Unix ms) is what expiry goes by.
    mutating func update(_ slot: Int32, _ position: LivePosition, receivedAt: Int64) {
        if let old = self.position(of: slot) { grid.mark(old.point, version: version + 1) }
        reserve(slot)
        positions[Int(slot)] = position
        departed[slot] = nil
        index.upsert(slot, at: position.point, timestamp: receivedAt)
        markChanged(slot, at: position.point)
    }

    /// Forgets a traveller's position (its watchers get `leave` in their next frame).
    mutating func remove(_ slot: Int32) {
        guard index.remove(slot) else { return }
        forget(slot)
    }

    /// Drops the position of a slot already taken out of the index.
    private mutating func forget(_ slot: Int32) {
        guard let position = position(of: slot) else { return }
        departed[slot] = (position.point, tick)
        positions[Int(slot)] = nil
        markChanged(slot, at: position.point)
    }

    /// Removes positions received before `timestamp`; returns their slots.
    mutating func expire(receivedBefore timestamp: Int64) -> [Int32] {
        let stale = index.expire(olderThan: timestamp)
        for slot in stale { forget(slot) }
        return stale
    }

    /// Marks a traveller whose visibility or friendships changed, so every frame
    /// consumer looks at it again.
    mutating func reconsider(_ slot: Int32) { markChanged(slot, at: position(of: slot)?.point) }

    // MARK: Nearby

    /// Starts (or changes) `slot`'s watch. Answers who is near now, nearest first,
    /// and the events an earlier watch of the same slot must hear to match.
    mutating func watch(_ slot: Int32, radius: Double, limit: Int, canSee: (Int32, Int32) -> Bool) -> (snapshot: [Neighbour<Int32>], events: [NearbyEvent]) {
        reserve(slot)
        watches[slot, default: Watch(radius: radius, limit: limit, lastFrame: version)].radius = radius
        watches[slot]?.limit = limit
        watchersByPhase[phase(of: slot)].insert(slot)
        return recompute(slot, canSee: canSee)
    }

    /// Ends `slot`'s watch.
    mutating func unwatch(_ slot: Int32) {
        guard watches.removeValue(forKey: slot) != nil else { return }
        watchersByPhase[phase(of: slot)].remove(slot)
    }

    /// The events of this tick's frames for the watchers of `phase`, by watcher.
    /// Call `endFrame` afterwards.
    mutating func nearbyFrame(phase: Int = 0, canSee: (Int32, Int32) -> Bool) -> [(watcher: Int32, events: [NearbyEvent])] {
        var frames: [(watcher: Int32, events: [NearbyEvent])] = []
        for watcher in watchersByPhase[phase] {
            guard let watch = watches[watcher] else { continue }
            guard mayHaveChanged(watcher, watch) else {
                watches[watcher]?.lastFrame = version
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
        if watch.told.keys.contains(where: { hasChanged($0, after: watch.lastFrame) }) { return true }
        guard let center = position(of: watcher)?.point else { return false }
        return grid.changed(in: BoundingBox(around: center, radius: watch.radius + margin), after: watch.lastFrame)
    }

    /// Ends the tick; changes from now on belong to the next one.
    mutating func endFrame() {
        tick += 1
        if tick % phases == 0 {
            // Every watcher had a frame in the interval that just ended; older stamps decide nothing.
            grid.forget(notAfter: versionAtIntervalStart)
            versionAtIntervalStart = version
        }
        if !departed.isEmpty { departed = departed.filter { tick - $0.value.tick <= phases } }
    }

    /// The nearest `limit` visible travellers within the radius (told ones within
    /// radius + margin), and the events that turn what was told into that.
    private mutating func recompute(_ watcher: Int32, canSee: (Int32, Int32) -> Bool) -> (snapshot: [Neighbour<Int32>], events: [NearbyEvent]) {
        guard var watch = watches[watcher] else { return ([], []) }
        let since = watch.lastFrame
        watch.lastFrame = version
        let center = position(of: watcher)?.point
        var desired: [Neighbour<Int32>] = []
        if let center {
            let told = watch.told, radius = watch.radius
            func nearest(within reach: Double) -> [Neighbour<Int32>] {
                index.nearby(center, radius: reach, limit: watch.limit) { candidate, distance in
                    candidate != watcher && (distance <= radius || told[candidate] != nil) && canSee(watcher, candidate)
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
        var events: [NearbyEvent] = []
        var told: [Int32: Double] = [:]
        told.reserveCapacity(desired.count)
        for found in desired {
            if watch.told[found.id] == nil {
                events.append(NearbyEvent(kind: .enter, subject: found.id, point: found.point, distance: found.distance, ts: position(of: found.id)?.ts))
            } else if hasChanged(found.id, after: since) {
                events.append(NearbyEvent(kind: .move, subject: found.id, point: found.point, distance: found.distance, ts: position(of: found.id)?.ts))
            }
            told[found.id] = found.distance
        }
        for (subject, distance) in watch.told where told[subject] == nil {
            let point = position(of: subject)?.point ?? departed[subject]?.point
            let now = point.flatMap { p in center.map { Geodesy.distance($0, p) } } ?? distance
            events.append(NearbyEvent(kind: .leave, subject: subject, point: point, distance: now))
        }
        watch.told = told
        watches[watcher] = watch
        return (desired, events)
    }
}
