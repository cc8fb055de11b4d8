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
/// it was told, and what changed since the last frame.
///
/// Frames: updates only record what moved. `nearbyFrame` (once per
/// `location_interval`) finds the watchers that could be affected — a moved
/// traveller's watchers and the watchers whose radius reaches its new position —
/// and recomputes each of those once: the nearest `limit` visible travellers
/// within `radius`, keeping those already told while they stay within `radius +
/// margin` (the hysteresis, so someone on the edge does not flap). The difference
/// with what the watcher was told gives `enter`, `move` (a told traveller that
/// moved) and `leave`. Work per frame follows the movers' neighbourhoods, and a
/// watcher costs one query per frame however many of its neighbours moved.
///
/// Ids are dense `Int32` slots (see `UserSlots`). Not thread-safe; the location
/// service keeps it under one lock.
struct LiveMap {
    struct Watch {
        var radius: Double
        var limit: Int
        /// What the watcher was told is near, with the distance at the time.
        var told: [Int32: Double] = [:]
    }

    /// Extra distance a told traveller may go beyond the radius before it leaves.
    let margin: Double
    private(set) var index: MovingPointIndex<Int32>
    private var positions: [LivePosition?] = []
    private var watches: [Int32: Watch] = [:]
    private var isWatching: [Bool] = []
    private var radiusCounts: [Double: Int] = [:]
    private var toldBy: [Int32: Set<Int32>] = [:]
    /// The frame in which each slot last moved or was reconsidered.
    private var changedIn: [UInt32] = []
    private var frame: UInt32 = 1
    private var changed: [Int32] = []
    private var departed: [Int32: GeoPoint] = [:]

    init(cellMetres: Double = 250, margin: Double = 20) {
        index = MovingPointIndex(cellMetres: cellMetres)
        self.margin = margin
    }

    private mutating func reserve(_ slot: Int32) {
        let needed = Int(slot) + 1
        guard positions.count < needed else { return }
        let extra = needed - positions.count
        positions.append(contentsOf: repeatElement(nil, count: extra))
        isWatching.append(contentsOf: repeatElement(false, count: extra))
        changedIn.append(contentsOf: repeatElement(0, count: extra))
    }

    func position(of slot: Int32) -> LivePosition? {
        Int(slot) < positions.count ? positions[Int(slot)] : nil
    }

    /// Whether `slot` moved, left or was reconsidered since the last frame.
    func hasChanged(_ slot: Int32) -> Bool {
        Int(slot) < changedIn.count && changedIn[Int(slot)] == frame
    }

    /// Travellers that moved, left or were reconsidered since the last frame.
    var changedSlots: [Int32] { changed }

    private mutating func markChanged(_ slot: Int32) {
        reserve(slot)
        guard changedIn[Int(slot)] != frame else { return }
        changedIn[Int(slot)] = frame
        changed.append(slot)
    }

    /// Records a new position; `receivedAt` (server Unix ms) is what expiry goes by.
    mutating func update(_ slot: Int32, _ position: LivePosition, receivedAt: Int64) {
        reserve(slot)
        positions[Int(slot)] = position
        departed[slot] = nil
        index.upsert(slot, at: position.point, timestamp: receivedAt)
        markChanged(slot)
    }

    /// Forgets a traveller's position (its watchers get `leave` in the next frame).
    mutating func remove(_ slot: Int32) {
        guard index.remove(slot) else { return }
        forget(slot)
    }

    /// Drops the position of a slot already taken out of the index.
    private mutating func forget(_ slot: Int32) {
        guard let position = position(of: slot) else { return }
        departed[slot] = position.point
        positions[Int(slot)] = nil
        markChanged(slot)
    }

    /// Removes positions received before `timestamp`; returns their slots.
    mutating func expire(receivedBefore timestamp: Int64) -> [Int32] {
        let stale = index.expire(olderThan: timestamp)
        for slot in stale { forget(slot) }
        return stale
    }

    /// Marks a traveller whose visibility or friendships changed, so every frame
    /// consumer looks at it again.
    mutating func reconsider(_ slot: Int32) { markChanged(slot) }

    // MARK: Nearby

    private var maxRadius: Double { radiusCounts.keys.max() ?? 0 }

    func watch(of slot: Int32) -> Watch? { watches[slot] }

    /// Starts (or changes) `slot`'s watch. Answers who is near now, nearest first,
    /// and the events an earlier watch of the same slot must hear to match.
    mutating func watch(_ slot: Int32, radius: Double, limit: Int, canSee: (Int32, Int32) -> Bool) -> (snapshot: [Neighbour<Int32>], events: [NearbyEvent]) {
        reserve(slot)
        if let old = watches[slot] { forgetRadius(old.radius) }
        watches[slot, default: Watch(radius: radius, limit: limit)].radius = radius
        watches[slot]?.limit = limit
        radiusCounts[radius, default: 0] += 1
        isWatching[Int(slot)] = true
        let (desired, events) = recompute(slot, canSee: canSee)
        return (desired, events)
    }

    /// Ends `slot`'s watch.
    mutating func unwatch(_ slot: Int32) {
        guard let watch = watches.removeValue(forKey: slot) else { return }
        forgetRadius(watch.radius)
        isWatching[Int(slot)] = false
        for subject in watch.told.keys { toldBy[subject]?.remove(slot) }
    }

    private mutating func forgetRadius(_ radius: Double) {
        radiusCounts[radius, default: 1] -= 1
        if radiusCounts[radius] == 0 { radiusCounts[radius] = nil }
    }

    /// The events of this frame, by watcher. Call `endFrame` afterwards.
    mutating func nearbyFrame(canSee: (Int32, Int32) -> Bool) -> [(watcher: Int32, events: [NearbyEvent])] {
        guard !watches.isEmpty, !changed.isEmpty else { return [] }
        var dirty = Set<Int32>()
        let reach = maxRadius + margin
        for slot in changed {
            if isWatching[Int(slot)] { dirty.insert(slot) }
            for watcher in toldBy[slot] ?? [] { dirty.insert(watcher) }
            guard let point = position(of: slot)?.point else { continue }
            for other in index.within(BoundingBox(around: point, radius: reach)) where other != slot && isWatching[Int(other)] {
                guard !dirty.contains(other), let watch = watches[other], let otherPoint = position(of: other)?.point else { continue }
                if Geodesy.distance(point, otherPoint) <= watch.radius + margin { dirty.insert(other) }
            }
        }
        var frames: [(watcher: Int32, events: [NearbyEvent])] = []
        for watcher in dirty {
            let events = recompute(watcher, canSee: canSee).events
            if !events.isEmpty { frames.append((watcher, events)) }
        }
        return frames
    }

    /// Clears what changed; the next frame starts.
    mutating func endFrame() {
        frame &+= 1
        if frame == 0 { frame = 1; changedIn = changedIn.map { _ in 0 } }
        changed.removeAll(keepingCapacity: true)
        departed.removeAll(keepingCapacity: true)
    }

    /// The nearest `limit` visible travellers within the radius (told ones within
    /// radius + margin), and the events that turn what was told into that.
    private mutating func recompute(_ watcher: Int32, canSee: (Int32, Int32) -> Bool) -> (desired: [Neighbour<Int32>], events: [NearbyEvent]) {
        guard var watch = watches[watcher] else { return ([], []) }
        var desired: [Neighbour<Int32>] = []
        if let center = position(of: watcher)?.point {
            let outer = watch.radius + margin
            for candidate in index.nearby(center, radius: outer, filter: { $0 != watcher }) {
                if desired.count == watch.limit { break }
                if candidate.distance > watch.radius, watch.told[candidate.id] == nil { continue }
                if !canSee(watcher, candidate.id) { continue }
                desired.append(candidate)
            }
        }
        var events: [NearbyEvent] = []
        var told: [Int32: Double] = [:]
        told.reserveCapacity(desired.count)
        for found in desired {
            if watch.told[found.id] == nil {
                events.append(NearbyEvent(kind: .enter, subject: found.id, point: found.point, distance: found.distance, ts: position(of: found.id)?.ts))
                toldBy[found.id, default: []].insert(watcher)
            } else if hasChanged(found.id) {
                events.append(NearbyEvent(kind: .move, subject: found.id, point: found.point, distance: found.distance, ts: position(of: found.id)?.ts))
            }
            told[found.id] = found.distance
        }
        for (subject, distance) in watch.told where told[subject] == nil {
            let point = position(of: subject)?.point ?? departed[subject]
            let center = position(of: watcher)?.point
            let now = point.flatMap { p in center.map { Geodesy.distance($0, p) } } ?? distance
            events.append(NearbyEvent(kind: .leave, subject: subject, point: point, distance: now))
            toldBy[subject]?.remove(watcher)
        }
        watch.told = told
        watches[watcher] = watch
        return (desired, events)
    }
}
