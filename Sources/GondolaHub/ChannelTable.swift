import GondolaProtocol
import Synchronization

/// One channel's subscribers and delivery state, under a lock of its own. Every
/// change to a channel's subscribers and stream happens under it — a publication's
/// append (a disk write in durable namespaces) and fan-out, a subscribe's recovery
/// read — which keeps the channel's publications in offset order and a recovery free
/// of gaps, without holding up any other channel.
final class ChannelSlot: Sendable {
    /// nil once the channel was left empty and the slot taken out of its shard.
    let state = Mutex<ChannelState?>(ChannelState())
}

/// The live channels whose names hash to one shard. Its lock is held only to find,
/// add or remove a slot: never across I/O, never while a channel's lock is taken.
final class ChannelShard: Sendable {
    let slots = Mutex<[String: ChannelSlot]>([:])
}

/// This node's live channels (centrifuge's hub, its channel side): each channel's
/// subscribers and delivery state in a slot of one of 64 shards, the fan-out of a
/// publication to them, join and leave pushes, the channel's local presence and the
/// listing of channels. A channel exists while it has a subscriber or a subscription
/// being set up; one left empty costs nothing. It knows no engine and no namespace.
final class ChannelTable: Sendable {
    private let shards: [ChannelShard]

    init(shardCount: Int = 64) {
        shards = (0..<shardCount).map { _ in ChannelShard() }
    }

    func shard(for channel: String) -> ChannelShard {
        var hasher = Hasher()
        hasher.combine(channel)
        return shards[Int(UInt(bitPattern: hasher.finalize()) % UInt(shards.count))]
    }

    /// What `withChannel` found under a slot's lock.
    private enum SlotVisit<T> {
        /// The slot had been retired (its channel left empty) before the lock was taken.
        case retired
        case visited(T)
    }

    /// Runs `body` with `channel`'s state under the channel's own lock. A channel
    /// without a slot gets one when `create` is set (a subscribe, an append that must
    /// be ordered with recoveries); otherwise `body` does not run and the answer is
    /// nil. A state `body` leaves empty is retired and its slot leaves the shard, so an
    /// idle channel costs nothing.
    func withChannel<T, E: Error>(_ channel: String, create: Bool, _ body: (inout ChannelState) throws(E) -> T) throws(E) -> T? {
        let shard = shard(for: channel)
        while true {
            let found: ChannelSlot? = shard.slots.withLock { slots in
                if let slot = slots[channel] { return slot }
                guard create else { return nil }
                let slot = ChannelSlot()
                slots[channel] = slot
                return slot
            }
            guard let slot = found else { return nil }
            let visit = try slot.state.withLock { (state) throws(E) -> SlotVisit<T> in
                guard state != nil else { return .retired }
                defer {
                    if state?.isEmpty == true {
                        state = nil
                        shard.slots.withLock { slots in
                            if slots[channel] === slot { slots[channel] = nil }
                        }
                    }
                }
                return .visited(try body(&state!))
            }
            if case let .visited(value) = visit { return value }
        }
    }

    /// Whether `channel` has a subscriber on this node.
    func hasSubscribers(_ channel: String) -> Bool {
        withChannel(channel, create: false) { !$0.isEmpty } ?? false
    }

    /// The users subscribed to `channel` on this node.
    func users(of channel: String) -> Set<String> {
        withChannel(channel, create: false) { Set($0.subscribers.values.map(\.info.user)) } ?? []
    }

    /// The channel's subscribers on this node that are in its presence (all of them unless
    /// a subscription token turned presence off), by client id.
    func presence(of channel: String) -> [String: ClientInfo] {
        withChannel(channel, create: false) { $0.subscribers.filter(\.value.presence).mapValues(\.info) } ?? [:]
    }

    /// How many of the channel's subscribers on this node are in its presence, and how many distinct users.
    func presenceStats(of channel: String) -> PresenceStats {
        withChannel(channel, create: false) { $0.presenceStats } ?? PresenceStats(numClients: 0, numUsers: 0)
    }

    /// Starts keeping what `channel` delivers for the subscription of `session` being set up.
    func beginPending(_ session: ClientSession, on channel: String) {
        withChannel(channel, create: true) { $0.addPending(session.id) }
    }

    /// Drops a subscription being set up that will not go live; true when that left the channel empty.
    func abandonPending(_ session: ClientSession, on channel: String) -> Bool {
        withChannel(channel, create: false) { state -> Bool in
            _ = state.takePending(session.id)
            return state.isEmpty
        } ?? false
    }

    /// Takes `session`'s subscriber out of `channel`: what it was, and whether the channel is left empty.
    func remove(_ session: ClientSession, from channel: String) -> (removed: ChannelState.Subscriber?, vacated: Bool) {
        withChannel(channel, create: false) { state -> (ChannelState.Subscriber?, Bool) in
            guard let removed = state.remove(session.id) else { return (nil, false) }
            return (removed, state.isEmpty)
        } ?? (nil, false)
    }

    /// Sends a publication to the channel's subscribers on this node, if it has any;
    /// answers how many messages that made.
    func fanOut(_ publication: Publication, on channel: String) -> Int {
        withChannel(channel, create: false) { $0.deliver(publication, on: channel) } ?? 0
    }

    /// Sends a publication whose store `whileLocked` makes readable under the channel's lock
    /// (see `Node.deliver`); answers how many messages that made.
    func deliver(_ publication: Publication, on channel: String, whileLocked: () -> Void) -> Int {
        withChannel(channel, create: true) { state in
            whileLocked()
            return state.deliver(publication, on: channel)
        } ?? 0
    }

    /// Sends a join or leave push to the channel's subscribers on this node that asked for them.
    func pushJoinLeave(_ push: Push, on channel: String) {
        withChannel(channel, create: false) { state in
            var encoded = EncodedPush(push)
            for subscriber in state.subscribers.values where subscriber.joinLeave {
                let queue = subscriber.session.queue
                queue.enqueue(encoded.bytes(for: queue.encoding))
            }
        }
    }

    /// Channels with at least one subscriber and their subscriber counts.
    func subscriberCounts() -> [String: Int] {
        var result: [String: Int] = [:]
        for shard in shards {
            for (name, slot) in shard.slots.withLock({ Array($0) }) {
                if let count = slot.state.withLock({ $0?.subscribers.count }) { result[name] = count }
            }
        }
        return result
    }
}
