import CoreMetrics
import GondolaDomain
import GondolaGeo
import GondolaHub
import GondolaProtocol
import Logging
import Synchronization

/// One fence event as it leaves the spatial core: the trip, the fence and where the
/// member was.
struct TripFenceEvent: Sendable, Equatable {
    let trip: String
    let fence: String
    let fenceName: String
    let kind: FenceEventKind
    let user: String
    let point: GeoPoint
    let milliseconds: Int64

    /// The same for every node that computes it from the same position, so the engine's
    /// idempotency check and the webhook outbox keep one of each.
    var id: String {
        let hash = StableHash.fnv1a("\(trip)\u{0}\(fence)\u{0}\(user)\u{0}\(kind.rawValue)\u{0}\(milliseconds)")
        return "fe" + String(hash, radix: 16)
    }
}

/// The hosts' fences of every trip, watched against the positions of the trip's members
/// (`FenceWatch`: an index of fences, hysteresis at the edges, stale positions ignored),
/// and where their events go.
///
/// Every node keeps every trip's fences and judges every position of their members: the
/// node that admits a position sends it to every other node (`positionTopic`, only for
/// members of fenced trips), so all nodes hold the same state. Only the trip's owner
/// reports events: the live node chosen by rendezvous hashing of the trip over the
/// cluster's nodes (refreshed every `ownersRefresh`). Two nodes that briefly both think
/// they own a trip (a node joined or left) compute the same event with the same id, which
/// the engine's idempotency check and the webhook outbox keep once (their order in the
/// channel may then differ from their times); a new owner carries on from the state it
/// already holds.
///
/// An event goes to the trip's durable `fences:<trip>` channel (hosts subscribe and recover
/// it), to the member's `personal:#<user>`, as a notice to the hosts (a push for those not
/// subscribed), and to the trip's webhook (`FenceWebhooks`). Observing a position takes
/// only this service's lock and returns; delivery runs in `run()`.
///
/// Limits: `maxFencesPerTrip` fences per trip (`fence.create` answers 107 beyond); each
/// trip reports at most `eventsPerSecond` events a second (bursts of `eventBurst`), more
/// are dropped, counted (`gondola_fence_events_total{outcome="dropped"}`) and logged at
/// most once a second per trip — the watch still follows the members, so the next
/// crossing is reported; at most `maxQueuedEvents` events wait for delivery, newer ones
/// are dropped and counted alike.
final class FenceService: Sendable {
    static let maxFencesPerTrip = 100
    static let eventsPerSecond = 20.0
    static let eventBurst = 100.0
    static let maxQueuedEvents = 10_000
    static let ownersRefresh: Duration = .seconds(2)
    /// How often time is let pass in the watches of trips whose fences have a dwell time, so
    /// that a member who sends no position (a phone lying still at the meeting point) is
    /// reported `inside` or `outside` within this of the dwell's end.
    static let dwellTick: Duration = .seconds(1)
    /// The topic that tells the other nodes a trip's fences changed.
    static let replicaTopic = "travel.fences"
    /// The topic of the positions of fenced trips' members, sent to every node.
    static let positionTopic = "travel.fence.position"

    /// A trip's fences and what the core knows of its members.
    struct WatchedTrip {
        var watch = FenceWatch<String, String>()
        var fences: [String: TripFence] = [:]
        var bucket = TokenBucket(rate: FenceService.eventsPerSecond, burst: FenceService.eventBurst, now: .now)
        var droppedLoggedAt: ContinuousClock.Instant?
    }

    struct State {
        var trips: [String: WatchedTrip] = [:]
        /// The number of the latest read of each trip's fences applied: a read that started
        /// before it never overwrites it.
        var appliedReads: [String: Int] = [:]
        /// The live nodes' uids; the trips' owners are chosen among them.
        var nodes: [String]
    }

    let node: Node
    let directory: Directory
    let repository: any FenceRepository
    let notices: NoticeBoard
    let webhooks: FenceWebhooks
    let logger: Logger
    private let state: Mutex<State>
    /// Numbers the reads of fences in the order they start.
    private let reads = Atomic<Int>(0)
    /// Whether any trip has fences: positions skip the directory when none has.
    private let anyFences = Atomic<Bool>(false)
    private let outgoing: AsyncStream<[TripFenceEvent]>
    private let outgoingQueue: AsyncStream<[TripFenceEvent]>.Continuation
    private let reported: Counter
    private let dropped: Counter

    init(
        node: Node, directory: Directory, repository: any FenceRepository, notices: NoticeBoard,
        webhookPolicy: FenceWebhookPolicy = FenceWebhookPolicy(), metrics: any MetricsFactory, logger: Logger
    ) async throws {
        self.node = node
        self.directory = directory
        self.repository = repository
        self.notices = notices
        self.logger = logger
        webhooks = FenceWebhooks(repository: repository, policy: webhookPolicy, metrics: metrics, logger: logger)
        state = Mutex(State(nodes: [node.uid]))
        (outgoing, outgoingQueue) = AsyncStream.makeStream(of: [TripFenceEvent].self, bufferingPolicy: .bufferingOldest(Self.maxQueuedEvents))
        reported = Counter(label: "gondola_fence_events_total", dimensions: [("outcome", "reported")], factory: metrics)
        dropped = Counter(label: "gondola_fence_events_total", dimensions: [("outcome", "dropped")], factory: metrics)
        try await reload()
        await refreshOwnersOnce()
    }

    // MARK: Fences

    /// Reads every trip's fences again (at start, and when the node regains the bus).
    func reload() async throws {
        let read = reads.add(1, ordering: .relaxed).newValue
        let fences = try await repository.allFences()
        state.withLock { state in
            let grouped = Dictionary(grouping: fences, by: \.trip)
            for trip in Set(state.trips.keys).union(grouped.keys) { set(grouped[trip] ?? [], of: trip, read: read, in: &state) }
        }
    }

    /// Reads one trip's fences again (after a change here or on another node).
    func reload(trip: String) async throws {
        let read = reads.add(1, ordering: .relaxed).newValue
        let fences = try await repository.fences(of: trip)
        state.withLock { set(fences, of: trip, read: read, in: &$0) }
    }

    /// Makes `fences` (from read number `read`) the trip's, unless a later read was applied:
    /// new ones watched, removed ones dropped, members' states kept.
    private func set(_ fences: [TripFence], of trip: String, read: Int, in state: inout State) {
        guard read > state.appliedReads[trip, default: 0] else { return }
        state.appliedReads[trip] = read
        defer { anyFences.store(!state.trips.isEmpty, ordering: .relaxed) }
        guard !fences.isEmpty else {
            state.trips[trip] = nil
            return
        }
        var watched = state.trips[trip] ?? WatchedTrip()
        for id in watched.fences.keys where !fences.contains(where: { $0.id == id }) { watched.watch.remove(id) }
        for fence in fences where watched.fences[fence.id] != fence { watched.watch.add(fence.rule) }
        watched.fences = Dictionary(uniqueKeysWithValues: fences.map { ($0.id, $0) })
        state.trips[trip] = watched
    }

    /// The fences of `trip` this node watches.
    func fences(of trip: String) -> [TripFence] {
        state.withLock { $0.trips[trip].map { Array($0.fences.values) } ?? [] }.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }

    /// The node that reports `trip`'s events, as this node sees the cluster.
    func owner(of trip: String) -> String? {
        state.withLock { StableHash.owner(of: trip, among: $0.nodes) }
    }

    /// Tells every node that `trip`'s fences changed.
    func changed(trip: String) {
        node.replicate(topic: Self.replicaTopic, TripFencesChanged(trip: trip))
    }

    // MARK: Positions

    /// A position this node admitted: judged here and, when the user is a member of a fenced
    /// trip, sent to every other node.
    func record(user: String, position: LivePosition, receivedAt: Int64, region: String) {
        guard observe(user: user, position: position) else { return }
        node.replicate(topic: Self.positionTopic, PositionReplica(user: user, position: position, receivedAt: receivedAt, region: region))
    }

    /// A position another node admitted and sent.
    func apply(replica: PositionReplica) {
        observe(user: replica.user, position: replica.position)
    }

    /// Feeds a member's position to the fences of their trips; the events of the trips this
    /// node owns go to delivery, handed over under this service's lock so that they leave in
    /// the order they were judged. Takes only this service's lock (and the directory's,
    /// inside it). Answers whether the user is a member of a fenced trip.
    @discardableResult
    func observe(user: String, position: LivePosition) -> Bool {
        guard anyFences.load(ordering: .relaxed) else { return false }
        let trips = directory.trips(of: user)
        guard !trips.isEmpty else { return false }
        let now = ContinuousClock.now
        return state.withLock { state in
            var fenced = false
            for (trip, _) in trips where state.trips[trip.id] != nil {
                fenced = true
                let owned = StableHash.owner(of: trip.id, among: state.nodes) == node.uid
                // Changed in place: a copy of the trip's watch would copy its whole index.
                let batch = judge(user, position, trip: trip.id, owned: owned, in: &state.trips[trip.id]!, now: now)
                guard !batch.isEmpty else { continue }
                reported.increment(by: batch.count)
                if case .dropped = outgoingQueue.yield(batch) { drop(batch.count, trip: trip.id, reason: "delivery queue full") }
            }
            return fenced
        }
    }

    /// Moves `user` in one trip's watch; answers the events to report when this node owns
    /// the trip: those that concern the member, within the trip's rate.
    private func judge(
        _ user: String, _ position: LivePosition, trip: String, owned: Bool, in watched: inout WatchedTrip, now: ContinuousClock.Instant
    ) -> [TripFenceEvent] {
        let events = watched.watch.update(user, to: position.point, at: position.ts)
        guard owned, !events.isEmpty else { return [] }
        return reportable(events, trip: trip, in: &watched, now: now)
    }

    /// Lets time pass to `milliseconds` in the watches of trips whose fences have a dwell
    /// time: the dwell events that came due go to delivery for the trips this node owns (every
    /// node advances its own copy, so a new owner carries on from the same state).
    func advance(to milliseconds: Int64) {
        guard anyFences.load(ordering: .relaxed) else { return }
        let now = ContinuousClock.now
        state.withLock { state in
            for trip in Array(state.trips.keys) where state.trips[trip]!.fences.values.contains(where: { $0.dwellMilliseconds > 0 }) {
                let events = state.trips[trip]!.watch.advance(to: milliseconds)
                guard StableHash.owner(of: trip, among: state.nodes) == node.uid, !events.isEmpty else { continue }
                let batch = reportable(events, trip: trip, in: &state.trips[trip]!, now: now)
                guard !batch.isEmpty else { continue }
                reported.increment(by: batch.count)
                if case .dropped = outgoingQueue.yield(batch) { drop(batch.count, trip: trip, reason: "delivery queue full") }
            }
        }
    }

    /// The watch's `events` of one trip as the trip reports them: those that concern the
    /// member, within the trip's rate.
    private func reportable(
        _ events: [FenceEvent<String, String>], trip: String, in watched: inout WatchedTrip, now: ContinuousClock.Instant
    ) -> [TripFenceEvent] {
        let members = directory.members(of: trip)
        var batch: [TripFenceEvent] = []
        for event in events {
            guard let fence = watched.fences[event.fence], let point = watched.watch.position(of: event.object)?.point,
                // A fence for every traveller leaves the trip's hosts out.
                fence.users != nil || members[event.object] == .traveller
            else { continue }
            batch.append(
                TripFenceEvent(
                    trip: trip, fence: fence.id, fenceName: fence.name, kind: event.kind, user: event.object, point: point,
                    milliseconds: event.milliseconds))
        }
        return admitted(batch, by: &watched, now: now)
    }

    /// The events of `batch` the trip's rate admits; the others are dropped.
    private func admitted(_ batch: [TripFenceEvent], by watched: inout WatchedTrip, now: ContinuousClock.Instant) -> [TripFenceEvent] {
        var admitted: [TripFenceEvent] = []
        for event in batch {
            if watched.bucket.take(now: now) {
                admitted.append(event)
                continue
            }
            dropped.increment()
            if watched.droppedLoggedAt.map({ now - $0 >= .seconds(1) }) ?? true {
                watched.droppedLoggedAt = now
                logger.warning(
                    "fence events over the trip's rate dropped", metadata: ["trip": "\(event.trip)", "rate": "\(Self.eventsPerSecond)/s"])
            }
        }
        return admitted
    }

    private func drop(_ count: Int, trip: String, reason: String) {
        dropped.increment(by: count)
        logger.warning("fence events dropped", metadata: ["trip": "\(trip)", "count": "\(count)", "reason": "\(reason)"])
    }

    // MARK: Delivery

    /// Delivers events, posts webhooks and refreshes the trips' owners until cancelled.
    func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.webhooks.run() }
            group.addTask { await self.refreshOwners() }
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: Self.dwellTick)
                    self.advance(to: unixMilliseconds())
                }
            }
            group.addTask {
                for await batch in self.outgoing { await self.deliver(batch) }
            }
        }
    }

    private func refreshOwners() async {
        guard node.isClustered else { return }
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.ownersRefresh)
            await refreshOwnersOnce()
        }
    }

    /// Reads the live nodes from the engine's registry; on failure the last list stays (a
    /// node never stops reporting because the registry did not answer).
    private func refreshOwnersOnce() async {
        guard node.isClustered else { return }
        do {
            let nodes = try await node.liveNodeUIDs()
            state.withLock { $0.nodes = nodes }
        } catch {
            logger.warning("fence owners: cannot list the live nodes", metadata: ["error": "\(error)"])
        }
    }

    /// Sends `batch` (one trip's events of one position) where events go.
    func deliver(_ batch: [TripFenceEvent]) async {
        guard let trip = batch.first?.trip else { return }
        let hosts = directory.members(of: trip).filter { $0.value == .host }.keys.sorted()
        let channel = FenceEventsChannel.channel(of: trip)
        var queued: [QueuedFenceEvent] = []
        for event in batch {
            let name = directory.name(of: event.user)
            let json = json(of: event, name: name)
            do {
                try await node.publish(channel: channel, data: Payload(json), publishing: PublishOptions(idempotencyKey: event.id))
            } catch {
                logger.error("fence event not published", metadata: ["channel": "\(channel)", "event": "\(event.id)", "error": "\(error)"])
            }
            node.tell(event.user, json)
            notices.post(
                Notice(
                    audience: .users(hosts), channel: channel, category: .update, text: "fence.\(event.kind.rawValue)",
                    values: ["fence": event.fenceName, "name": name],
                    link: ["screen": "fences", "trip": trip, "fence": event.fence, "id": event.id], at: event.milliseconds))
            queued.append(QueuedFenceEvent(id: event.id, trip: trip, body: json.bytes, attempts: 0))
        }
        await webhooks.queue(queued, of: trip)
    }

    /// An event as every receiver gets it, with the member's display `name`.
    func json(of event: TripFenceEvent, name: String) -> JSON {
        [
            "type": "fence", "id": .string(event.id), "event": .string(event.kind.rawValue), "trip": .string(event.trip),
            "fence": .string(event.fence), "fence_name": .string(event.fenceName), "user": .string(event.user),
            "name": .string(name), "lat": .double(event.point.lat), "lon": .double(event.point.lon),
            "ts": .int(event.milliseconds),
        ]
    }
}

/// `travel.fences`: a trip whose fences changed; the other nodes read them again.
struct TripFencesChanged: ReplicaPayload {
    let trip: String
    init(trip: String) { self.trip = trip }
    init(_ fields: RequestFields) throws(HubError) { trip = try fields.string("trip", maxLength: .max) }
    var json: JSON { ["trip": .string(trip)] }
}
