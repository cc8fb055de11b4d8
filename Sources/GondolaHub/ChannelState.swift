import GondolaProtocol

/// A channel's subscribers on this node and how a publication reaches them.
/// Presence is derived from it. Subscribers that take publications as they are sit
/// in `queues`, a contiguous array the fan-out walks without copying records;
/// subscribers that negotiated fossil deltas are kept apart with whether they hold
/// the channel's previous publication (their delta base), and so are those with a tags
/// filter. Every call happens under
/// the channel's own lock (`ChannelSlot`), which orders the channel's publications.
struct ChannelState {
    struct Subscriber {
        let session: ClientSession
        let info: ClientInfo
        let joinLeave: Bool
        /// The subscription negotiated fossil deltas.
        let delta: Bool
        /// Only publications whose tags match it reach the subscriber (never with `delta`).
        let tagsFilter: TagsFilter?
        /// Whether the subscription is in the channel's presence and announces its join and
        /// leave: the namespace's options, or what a subscription token overrode.
        let presence: Bool
        let announcesJoinLeave: Bool
    }

    /// A delta subscriber's queue and whether it has received the publication that
    /// `previousData` holds (until then it gets publications whole).
    private struct DeltaReceiver {
        let queue: OutboundQueue
        var hasBase: Bool
    }

    private(set) var subscribers: [String: Subscriber] = [:]
    /// The subscribers in the channel's presence, and how many of them each user has: kept
    /// as subscribers come and go, so presence stats never copy the presence.
    private var presenceClients = 0
    private var presenceUsers: [String: Int] = [:]
    /// Subscribers whose subscribe reply covered the stream up to an offset, by client
    /// id, until a later publication arrives: the broker may still deliver publications
    /// up to that offset (appended before the reply was read, delivered after), which
    /// they already have. A floor lapses after `floorLifetime`, by when anything in
    /// flight has arrived, so that a stream that starts over (a new epoch, offsets from
    /// 1 again, after an idle stream was dropped) is not mistaken for old publications.
    private var floors: [String: (offset: UInt64, until: ContinuousClock.Instant)] = [:]

    /// How long a subscriber's floor holds.
    static let floorLifetime = Duration.seconds(60)
    /// The outbound queue of every subscriber without deltas, in no particular order.
    private var queues: [OutboundQueue] = []
    /// The client id owning each entry of `queues`.
    private var owners: [String] = []
    private var position: [String: Int] = [:]
    /// Subscribers with fossil deltas, by client id.
    private var deltaReceivers: [String: DeltaReceiver] = [:]
    /// Subscribers with a tags filter, by client id: each publication is matched against
    /// each filter (the plain subscribers pay nothing for them).
    private var filteredReceivers: [String: (queue: OutboundQueue, filter: TagsFilter)] = [:]
    /// The data of the channel's last publication, kept while it has delta
    /// subscribers: the base of the next delta. One publication's data per channel.
    private var previousData: Payload?
    /// Subscriptions being set up (their stream position or presence is being read,
    /// which may wait on the database), by client id: what the channel delivers
    /// meanwhile is kept for them and sent after their reply, so nothing falls between
    /// the position the reply names and the live stream.
    private var pending: [String: PendingSubscription] = [:]

    /// What a subscription being set up has been delivered so far.
    struct PendingSubscription {
        /// Publications in delivery order, at most `pendingLimit`.
        var publications: [Publication] = []
        /// More than `pendingLimit` arrived: the subscription cannot be set up gap-free.
        var overflowed = false
    }

    /// Most publications kept for one subscription being set up; past it the
    /// subscribe is refused with an internal error (the SDKs subscribe again).
    static let pendingLimit = 1000

    var isEmpty: Bool { subscribers.isEmpty && pending.isEmpty }

    var presenceStats: PresenceStats { PresenceStats(numClients: UInt32(presenceClients), numUsers: UInt32(presenceUsers.count)) }

    /// Starts keeping what the channel delivers for the subscription `id` sets up.
    mutating func addPending(_ id: String) {
        pending[id] = PendingSubscription()
    }

    /// Ends the set-up of `id`'s subscription and returns what it was delivered meanwhile.
    mutating func takePending(_ id: String) -> PendingSubscription? {
        pending.removeValue(forKey: id)
    }

    mutating func add(_ subscriber: Subscriber, floor: UInt64? = nil) {
        let id = subscriber.session.id
        _ = remove(id)
        subscribers[id] = subscriber
        if subscriber.presence {
            presenceClients += 1
            presenceUsers[subscriber.info.user, default: 0] += 1
        }
        if let floor, floor > 0 { floors[id] = (floor, .now + Self.floorLifetime) }
        if subscriber.delta {
            deltaReceivers[id] = DeltaReceiver(queue: subscriber.session.queue, hasBase: false)
        } else if let filter = subscriber.tagsFilter {
            filteredReceivers[id] = (subscriber.session.queue, filter)
        } else {
            position[id] = queues.count
            queues.append(subscriber.session.queue)
            owners.append(id)
        }
    }

    /// Removes a subscriber (swap-remove in the queue array) and returns it.
    mutating func remove(_ id: String) -> Subscriber? {
        pending[id] = nil
        guard let removed = subscribers.removeValue(forKey: id) else { return nil }
        if removed.presence {
            presenceClients -= 1
            if presenceUsers[removed.info.user] == 1 { presenceUsers[removed.info.user] = nil } else { presenceUsers[removed.info.user]! -= 1 }
        }
        floors[id] = nil
        if removed.delta {
            deltaReceivers[id] = nil
            if deltaReceivers.isEmpty { previousData = nil }
        } else if removed.tagsFilter != nil {
            filteredReceivers[id] = nil
        } else if let index = position.removeValue(forKey: id) {
            let last = queues.count - 1
            if index != last {
                queues[index] = queues[last]
                owners[index] = owners[last]
                position[owners[index]] = index
            }
            queues.removeLast()
            owners.removeLast()
        }
        return removed
    }

    /// Enqueues `publication` for every subscriber that must get it and returns how
    /// many messages that made. The push is encoded at most once per encoding and
    /// form, and the delta computed at most once, however many subscribers there
    /// are; the writers wake once all are queued (a single subscriber needs no batch).
    mutating func deliver(_ publication: Publication, on channel: String) -> Int {
        if !pending.isEmpty { keepForPending(publication) }
        let covered = coveredSubscribers(at: publication.offset)
        var whole = EncodedPush(Push(channel: channel, .publication(publication)))
        let plain = covered.isEmpty ? queues : zip(owners, queues).compactMap { covered[$0.0] == nil ? $0.1 : nil }
        if plain.count + deltaReceivers.count + filteredReceivers.count <= 1 {
            return enqueue(publication, on: channel, whole: &whole, plain: plain, skipping: covered)
        }
        return OutboundQueue.deferringSignals { enqueue(publication, on: channel, whole: &whole, plain: plain, skipping: covered) }
    }

    private mutating func keepForPending(_ publication: Publication) {
        for index in pending.indices {
            if pending.values[index].publications.count < Self.pendingLimit {
                pending.values[index].publications.append(publication)
            } else {
                pending.values[index].overflowed = true
            }
        }
    }

    /// The plain subscribers get the whole push, then those whose tags filter matches, then
    /// the delta subscribers theirs.
    private mutating func enqueue(
        _ publication: Publication, on channel: String, whole: inout EncodedPush, plain: [OutboundQueue],
        skipping covered: [String: UInt64]
    ) -> Int {
        for queue in plain { queue.enqueue(whole.bytes(for: queue.encoding)) }
        var filtered = 0
        for (id, receiver) in filteredReceivers where covered[id] == nil && receiver.filter.matches(publication.tags) {
            receiver.queue.enqueue(whole.bytes(for: receiver.queue.encoding))
            filtered += 1
        }
        return plain.count + filtered + deliverToDeltaReceivers(publication, on: channel, whole: &whole, skipping: covered)
    }

    /// The delta subscribers' part of `deliver`: for a publication that may go as a delta
    /// (`useDelta`), the delta against `previousData` to those holding it; the whole
    /// publication to the others. In JSON the data goes as a string either way (the form
    /// a delta subscription's SDK parses). Every publication becomes the next base.
    private mutating func deliverToDeltaReceivers(
        _ publication: Publication, on channel: String, whole: inout EncodedPush,
        skipping covered: [String: UInt64]
    ) -> Int {
        guard !deltaReceivers.isEmpty else { return 0 }
        let base = previousData
        previousData = publication.data
        var wholeAsText: EncodedPush?
        var deltaPush: EncodedPush?
        var deltaComputed = false
        var sent = 0
        for index in deltaReceivers.indices where covered[deltaReceivers.keys[index]] == nil {
            let queue = deltaReceivers.values[index].queue
            sent += 1
            if publication.useDelta, deltaReceivers.values[index].hasBase, let base, base.isJSON, publication.data.isJSON {
                if !deltaComputed {
                    deltaPush = Self.deltaPush(of: publication, from: base, on: channel)
                    deltaComputed = true
                }
                if deltaPush != nil {
                    queue.enqueue(deltaPush!.bytes(for: queue.encoding))
                    continue
                }
            }
            if queue.encoding == .json {
                if wholeAsText == nil { wholeAsText = EncodedPush(Push(channel: channel, .publication(publication.withDataAsText))) }
                queue.enqueue(wholeAsText!.bytes(for: .json))
            } else {
                queue.enqueue(whole.bytes(for: queue.encoding))
            }
            deltaReceivers.values[index].hasBase = true
        }
        return sent
    }

    /// The publication as a fossil delta from `base` (its data the delta's text), or
    /// nil when the delta would not be shorter than the data itself.
    private static func deltaPush(of publication: Publication, from base: Payload, on channel: String) -> EncodedPush? {
        let bytes = FossilDelta.encode(from: base.bytes, to: publication.data.bytes, keepingUTF8: true)
        guard bytes.count < publication.data.bytes.count else { return nil }
        var asDelta = publication
        asDelta.data = Payload(.string(String(decoding: bytes, as: UTF8.self)))
        asDelta.delta = true
        return EncodedPush(Push(channel: channel, .publication(asDelta)))
    }

    /// The subscribers that already hold the publication at `offset` (0: not in a
    /// stream) from their subscribe reply. Floors below `offset` are done with, as
    /// the broker delivers a channel's offsets in order.
    private mutating func coveredSubscribers(at offset: UInt64) -> [String: UInt64] {
        guard offset > 0, !floors.isEmpty else { return [:] }
        let now = ContinuousClock.now
        floors = floors.filter { $0.value.offset >= offset && $0.value.until > now }
        return floors.mapValues(\.offset)
    }
}
