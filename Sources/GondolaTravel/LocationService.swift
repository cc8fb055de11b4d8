import GondolaDomain
import GondolaGeo
import GondolaHub
import GondolaProtocol
import Synchronization

/// Timing and limits of live locations.
public struct LocationSettings: Sendable {
    /// At most one publication per position channel per interval.
    public var interval: Duration = .milliseconds(250)
    /// How long a position stays current without a new one.
    public var ttl: Duration = .seconds(600)
    /// `location.update` calls per second and user (burst: the same number).
    public var rate: Int = 5

    public init() {}

    /// Ticks per interval: frames are spread over the interval in ticks of about 25 ms,
    /// each channel in one of them (see `ProximityMap`).
    var phases: Int { max(1, min(100, Int(interval / .milliseconds(25)))) }

    /// The time between ticks.
    var tick: Duration { interval / phases }
}

/// Live locations: `location.update` and `location.visibility`, the position index,
/// and the frames of `nearby:#`, `friends:#` and `locations:` channels.
///
/// One lock (`live`) guards the live state. Updates record under a lock of their
/// own (`LocationArrivals`) and return, never waiting for `live`; a frame task wakes
/// every tick (an interval is `phases` ticks), takes `live`, puts the positions that
/// arrived on the map, computes the frames of the channels whose phase it is,
/// copying out what they show, then releases it and writes and publishes them.
/// Every reader of the live state takes the positions that arrived first
/// (`withLive`). A second lock (`publication`), taken before `live`, is held from
/// the computation to the end of the publication and by every subscribe: a
/// subscriber's snapshot and attachment happen either before a tick's frames are
/// computed (the frames carry the changes after the snapshot) or after they were
/// published (the snapshot already has them), so snapshot and frames never miss
/// or repeat a change. Spreading the channels over the ticks keeps each tick's
/// work small, and a tick's frames wake each event loop once
/// (`OutboundQueue.deferringSignals`).
public final class LocationService: Sendable {
    struct Live {
        var slots = UserSlots()
        var map: ProximityMap
        var channels: PositionChannels
        /// Each slot's visibility (the fast path skips the directory for `everyone`).
        var visibilities: [Visibility] = []
        /// Each slot's user and position as nearby frames write them, for its latest
        /// position: written once, copied into every frame that shows it.
        var subjects: [TravelJSON.NeighbourSubject?] = []
        /// Each user's region, as its last position put it (`TravelRegions`).
        var regions: [Int32: String] = [:]
        /// The frame count at which this node last chose the regions it follows.
        var regionsChosenAt: Int?

        mutating func slot(for user: String, directory: Directory) -> Int32 {
            if let slot = slots.existingSlot(for: user) { return slot }
            let slot = slots.slot(for: user)
            visibilities.append(directory.visibility(of: user))
            subjects.append(nil)
            return slot
        }

        /// `slot`'s user and `point` as nearby frames write them: the bytes written for its
        /// latest position when that is the point.
        func subject(_ slot: Int32, at point: GeoPoint?) -> TravelJSON.NeighbourSubject {
            if let written = subjects[Int(slot)], written.point == point { return written }
            return TravelJSON.NeighbourSubject(user: slots.user(slot), point: point)
        }
    }

    let node: Node
    let directory: Directory
    let resorts: ResortCatalog
    let settings: LocationSettings
    let regions: TravelRegions
    /// The trips' fences, fed every position this node admits.
    let fences: FenceService?
    private let live: Mutex<Live>
    /// What updates record without `live`; when both are held, `live` is taken first.
    private let arrivals = Mutex(LocationArrivals())
    /// Orders a tick's publication with subscribe snapshots (see above); always taken before `live`.
    private let publication = Mutex(())

    init(node: Node, directory: Directory, resorts: ResortCatalog, settings: LocationSettings, fences: FenceService? = nil) {
        live = Mutex(Live(map: ProximityMap(phases: settings.phases), channels: PositionChannels(phases: settings.phases)))
        self.node = node
        self.directory = directory
        self.resorts = resorts
        self.settings = settings
        self.fences = fences
        regions = TravelRegions(selector: resorts.selector)
    }

    // MARK: RPC

    /// Records a position and answers the map the app should show. Takes only the
    /// arrivals' lock, never `live` (see `LocationArrivals`).
    func update(user: String, _ update: LocationUpdate) throws(HubError) -> MapChoice {
        let now = update.receivedAt
        var position = update.position
        if position.point.alt == nil { position.point.alt = resorts.selector.altitude(of: position.point) }
        let point = position.point
        let admission = try arrivals.withLock { arrivals throws(HubError) -> LocationArrivals.Admission in
            guard
                let admission = arrivals.admit(
                    user, position, receivedAt: now, now: .now,
                    bucket: { TokenBucket(rate: Double(settings.rate), burst: Double(settings.rate), now: .now) },
                    decide: { previous in
                        let choice = resorts.selector.choose(for: point, previous: previous)
                        return (choice, regions.region(of: point, choice: choice))
                    })
            else { throw .tooManyRequests }
            // Replicated under the lock, so that two devices of one traveller reach the bus in the order admitted.
            let region = admission.region
            if admission.regionChanged {
                // Every node learns where the traveller went, so that nodes watching them follow the region.
                node.replicate(topic: Self.regionTopic, PositionReplica(user: user, position: position, receivedAt: now, region: region))
            } else {
                node.replicate(
                    topic: Self.replicaTopic, region: region, PositionReplica(user: user, position: position, receivedAt: now, region: region))
            }
            return admission
        }
        fences?.record(user: user, position: position, receivedAt: now, region: admission.region)
        if admission.choice != admission.previous { node.tell(user, .object([("type", "map")] + admission.choice.jsonMembers)) }
        return admission.choice
    }

    /// Runs `body` on the live state once it has taken the positions that arrived.
    func withLive<Result, Failure: Error>(_ body: (inout Live) throws(Failure) -> Result) throws(Failure) -> Result {
        try live.withLock { (live: inout Live) throws(Failure) -> Result in
            for arrival in arrivals.withLock({ $0.take() }) {
                let slot = live.slot(for: arrival.user, directory: directory)
                live.map.update(slot, arrival.position, receivedAt: arrival.receivedAt)
                live.regions[slot] = arrival.region
                live.subjects[Int(slot)] = TravelJSON.NeighbourSubject(user: arrival.user, point: arrival.position.point)
            }
            return try body(&live)
        }
    }

    /// The last position `user` sent, while it is current.
    func lastPosition(of user: String) -> GeoPoint? {
        withLive { live in live.slots.existingSlot(for: user).flatMap { live.map.fix(of: $0)?.point } }
    }

    /// The users with a current position within `radius` metres of `user`'s current
    /// position that `user` may see, nearest first; nil when `user` has no current position.
    func visibleUsers(near user: String, radius: Double) -> [String]? {
        withLive { live in
            guard let slot = live.slots.existingSlot(for: user), let center = live.map.fix(of: slot)?.point else { return nil }
            let rules = Rules(live, directory: directory)
            return live.map.nearby(center, radius: radius) { candidate, _ in candidate != slot && rules.canSee(slot, candidate) }
                .map { live.slots.user($0.id) }
        }
    }

    /// Changes who sees `user`; applied to nearby and friends channels in the next frame.
    func setVisibility(user: String, _ visibility: Visibility) async throws(HubError) {
        try await directory.setVisibility(user, visibility)
        visibilityChanged(user: user, visibility)
    }

    private func visibilityChanged(user: String, _ visibility: Visibility) {
        withLive { live in
            let slot = live.slot(for: user, directory: directory)
            live.visibilities[Int(slot)] = visibility
            live.map.reconsider(slot)
        }
    }

    /// Friendships or trip memberships of `users` changed: their friends channels,
    /// their trips' location channels and what nearby watchers may see follow.
    func relationsChanged(_ users: [String]) {
        withLive { live in
            for user in users {
                let slot = live.slot(for: user, directory: directory)
                live.map.reconsider(slot)
                let friendsChannel = PositionChannel.friends(user: user)
                if live.channels.audience(of: friendsChannel) != nil {
                    live.channels.setMembers(friendsChannel, friendSlots(of: user, live: &live))
                }
                for (trip, _) in directory.trips(of: user) {
                    let channel = PositionChannel.locations(trip: trip.id)
                    if live.channels.audience(of: channel) != nil {
                        live.channels.setMembers(channel, memberSlots(of: trip.id, live: &live))
                    }
                }
            }
        }
    }

    private func friendSlots(of user: String, live: inout Live) -> Set<Int32> {
        Set(directory.friends(of: user).map { live.slot(for: $0.user, directory: directory) })
    }

    private func memberSlots(of trip: String, live: inout Live) -> Set<Int32> {
        Set(directory.members(of: trip).keys.map { live.slot(for: $0, directory: directory) })
    }

    // MARK: Visibility rules

    /// The visibility rules with what they need from the live state, taken before the state is changed.
    struct Rules {
        let directory: Directory
        let visibilities: [Visibility]
        let slots: UserSlots
        let now: Int64

        init(_ live: Live, directory: Directory) {
            self.directory = directory
            visibilities = live.visibilities
            slots = live.slots
            now = unixMilliseconds()
        }

        func canSee(_ viewer: Int32, _ subject: Int32) -> Bool {
            guard visibilities[Int(subject)] != .everyone else { return true }
            return directory.canSee(viewer: slots.user(viewer), subject: slots.user(subject), now: now)
        }

        func visible(_ audience: PositionChannels.Audience, _ subject: Int32) -> Bool {
            switch audience {
            case let .friendsOf(viewer):
                return canSee(viewer, subject)
            case let .trip(id):
                return visibilities[Int(subject)] != .nobody || (directory.cachedTrip(id)?.isRunning(at: now) ?? false)
            }
        }
    }

    // MARK: Channels

    /// Opens a position channel for a subscriber: `snapshot` starts carrying it and
    /// answers the state to start from, `attach` hands that to the subscriber. Both
    /// run under `publication` and `live` (see the type's comment); if attaching fails
    /// and the channel has no other subscriber, it is no longer carried.
    private func open(
        _ channel: PositionChannel, attach: (RawJSON?) throws(HubError) -> Void,
        snapshot: (inout Live) -> RawJSON
    ) throws(HubError) {
        try publication.withLock { _ throws(HubError) in
            try withLive { live throws(HubError) in
                let data = snapshot(&live)
                do throws(HubError) {
                    try attach(data)
                } catch {
                    stopCarryingUnlessSubscribed(channel, live: &live)
                    throw error
                }
            }
        }
    }

    /// `nearby:#<uid>`: starts the user's watch and answers who is near now.
    func openNearby(user: String, radius: Double, limit: Int, attach: (RawJSON?) throws(HubError) -> Void) throws(HubError) {
        let channel = PositionChannel.nearby(user: user)
        try open(channel, attach: attach) { live in
            let slot = live.slot(for: user, directory: directory)
            let rules = Rules(live, directory: directory)
            let (snapshot, events) = live.map.watch(slot, radius: radius, limit: limit, canSee: rules.canSee)
            // A watch that already had subscribers tells them what its new radius or limit changes.
            if !events.isEmpty { publish(StagedFrame(nearby: channel, events, live: live)) }
            return TravelJSON.nearbySnapshot(snapshot, slots: live.slots) { live.map.fix(of: $0)?.ts }
        }
    }

    /// `friends:#<uid>` and `locations:<trip>`: starts carrying the channel and answers the positions now.
    func openPositions(
        _ channel: PositionChannel, audience: (inout Live) -> PositionChannels.Audience, members: (inout Live) -> Set<Int32>,
        attach: (RawJSON?) throws(HubError) -> Void
    ) throws(HubError) {
        try open(channel, attach: attach) { live in
            let audience = audience(&live)
            let members = members(&live)
            let rules = Rules(live, directory: directory)
            let shown = live.channels.open(channel, audience: audience, members: members, map: live.map, visible: rules.visible)
            return TravelJSON.positions(entries(shown, live: live))
        }
    }

    func openFriends(user: String, attach: (RawJSON?) throws(HubError) -> Void) throws(HubError) {
        try openPositions(
            .friends(user: user), audience: { .friendsOf($0.slot(for: user, directory: directory)) },
            members: { friendSlots(of: user, live: &$0) }, attach: attach)
    }

    func openLocations(trip: String, attach: (RawJSON?) throws(HubError) -> Void) throws(HubError) {
        try openPositions(.locations(trip: trip), audience: { _ in .trip(trip) }, members: { memberSlots(of: trip, live: &$0) }, attach: attach)
    }

    /// A position channel lost its last subscriber: stop computing its frames.
    func vacated(_ channel: PositionChannel) {
        withLive { live in stopCarryingUnlessSubscribed(channel, live: &live) }
    }

    /// Ends a nearby watch or a position channel that has no subscriber on this node.
    private func stopCarryingUnlessSubscribed(_ channel: PositionChannel, live: inout Live) {
        guard !node.hasSubscribers(channel.name) else { return }
        if case let .nearby(user) = channel {
            if let slot = live.slots.existingSlot(for: user) { live.map.unwatch(slot) }
        } else {
            live.channels.close(channel)
        }
    }

    // MARK: Cluster

    /// The topic of positions on the cluster's bus, each sent in its region.
    static let replicaTopic = "travel.position"
    /// The topic of a position that moved its traveller to another region, sent to every node.
    static let regionTopic = "travel.region"

    /// Records a position another node received (its rate limit and map choice stay there), and its region.
    func apply(replica: PositionReplica) {
        arrivals.withLock {
            $0.record(replica: .init(user: replica.user, position: replica.position, receivedAt: replica.receivedAt, region: replica.region))
        }
    }

    /// Chooses the regions this node follows (once per interval): around each of its
    /// nearby watchers, and where the members of its friends and trip channels are.
    /// Positions from other regions are not applied here (the engine may not even bring
    /// them), so a watcher that moves into a region sees its travellers from their
    /// next update on.
    private func followRegions(live: inout Live) {
        guard node.isClustered, live.regionsChosenAt.map({ live.map.tick - $0 >= settings.phases }) ?? true else { return }
        live.regionsChosenAt = live.map.tick
        var followed: Set<String> = []
        for (watcher, radius) in live.map.watchers {
            if let region = live.regions[watcher] { followed.insert(region) }
            if let point = live.map.fix(of: watcher)?.point { followed.formUnion(regions.regions(near: point, radius: radius)) }
        }
        for member in live.channels.allMembers {
            if let region = live.regions[member] { followed.insert(region) }
        }

        node.follow(regions: followed)
    }

    /// Follows a directory change another node made.
    func directoryChanged(_ change: DirectoryChange) {
        switch change {
        case let .visibility(user, visibility): visibilityChanged(user: user, visibility)
        case let .member(trip, _, _): relationsChanged(Array(directory.members(of: trip).keys))
        default: if let users = change.relatedUsers { relationsChanged(users) }
        }
    }

    /// Follows a reloaded directory: every known user's visibility and relations.
    func directoryReloaded() {
        let users = withLive { live in (0..<live.slots.count).map { live.slots.user(Int32($0)) } }
        for user in users { visibilityChanged(user: user, directory.visibility(of: user)) }
        relationsChanged(users)
    }

    // MARK: Frames

    /// Publishes this tick's frames (one per changed channel of the tick's phase) and starts the next tick.
    func publishFrames() {
        publication.withLock { _ in
            let staged = withLive { live in
                followRegions(live: &live)
                let rules = Rules(live, directory: directory)
                let phase = live.map.tick % settings.phases
                let nearby = live.map.nearbyFrame(phase: phase, canSee: rules.canSee)
                let frames = live.channels.frames(phase: phase, map: live.map, visible: rules.visible)
                live.map.endFrame()
                var staged: [StagedFrame] = []
                staged.reserveCapacity(nearby.count + frames.count)
                for (watcher, events) in nearby {
                    staged.append(StagedFrame(nearby: .nearby(user: live.slots.user(watcher)), events, live: live))
                }
                for frame in frames {
                    staged.append(
                        StagedFrame(
                            channel: frame.channel, .positions(entries(frame.positions, live: live), removed: frame.removed.map(live.slots.user))))
                }
                return staged
            }
            OutboundQueue.deferringSignals {
                for frame in staged { publish(frame) }
            }
        }
    }

    /// A frame computed under the `live` lock with everything it shows copied out, written and published after.
    struct StagedFrame {
        enum Content {
            case nearby([TravelJSON.NearbyChange])
            case positions([(user: String, position: LivePosition)], removed: [String])
        }

        let channel: PositionChannel
        let content: Content

        init(channel: PositionChannel, _ content: Content) {
            self.channel = channel
            self.content = content
        }

        init(nearby channel: PositionChannel, _ events: [ProximityEvent], live: borrowing Live) {
            self.init(
                channel: channel,
                .nearby(
                    events.map { event in
                        // A `leave` says when the subject's last position was taken only while it is still on the map.
                        TravelJSON.NearbyChange(
                            subject: live.subject(event.subject, at: event.point), kind: event.kind, distance: event.distance,
                            ts: event.kind == .leave ? nil : live.map.fix(of: event.subject)?.ts)
                    }))
        }

        var data: RawJSON {
            switch content {
            case let .nearby(events): TravelJSON.nearbyFrame(events)
            case let .positions(entries, removed): TravelJSON.positions(entries, removed: removed)
            }
        }
    }

    /// Drops positions older than the TTL; their watchers get `leave` in the next frame.
    func expirePositions() {
        let cutoff = unixMilliseconds() - Int64(settings.ttl.components.seconds * 1000 + settings.ttl.components.attoseconds / 1_000_000_000_000_000)
        withLive { live in _ = live.map.expire(receivedBefore: cutoff) }
    }

    /// Publishes frames every tick and expires positions every second, until cancelled.
    func run() async {
        var lastExpiry = ContinuousClock.now
        let tick = settings.tick
        var next = ContinuousClock.now + tick
        while !Task.isCancelled {
            try? await Task.sleep(until: next)
            // Fixed deadlines: the time a tick takes does not stretch the interval.
            next = max(next + tick, .now)
            publishFrames()
            if ContinuousClock.now - lastExpiry >= .seconds(1) {
                expirePositions()
                lastExpiry = .now
            }
        }
    }

    /// The users and current positions of `slots` (those without one left out).
    private func entries(_ slots: [Int32], live: borrowing Live) -> [(user: String, position: LivePosition)] {
        slots.compactMap { slot in live.map.fix(of: slot).map { (live.slots.user(slot), $0) } }
    }

    /// Position frames go to this node's subscribers only: every node of a cluster
    /// computes the frames of its own subscribers from its whole live map.
    private func publish(_ frame: StagedFrame) {
        let channel = frame.channel
        node.publishLocally(channel: channel.name, providedIn: channel.namespace, data: frame.data)
    }
}
