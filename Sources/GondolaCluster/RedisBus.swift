import Foundation
@_spi(Engine) import GondolaHub
import GondolaProtocol
import GondolaRESP
import GondolaRedis
import Logging
import NIOCore
import Synchronization

/// The cluster bus over Redis Pub/Sub: every node publishes its events to one Redis
/// channel (`RedisKeys.bus`) and subscribes to it, on a connection of its own so that no command
/// delays a delivery. On a Redis Cluster slot the channel is a shard channel of that slot
/// (`SPUBLISH`, `SSUBSCRIBE`), which only the slot's nodes carry. A message is `BinaryBusMessage`'s (a header naming the node and the
/// message's number, then the events, payloads as their bytes); Redis has no size limit to
/// work around, so events of any size travel inline.
///
/// What the node sends on the publisher connection — its messages and the commands of
/// the streams and presence on the same server (`send`) — waits in one outbox: the
/// first item schedules a drain on the connection's event loop, which writes
/// everything queued by then with one flush, a run of events as one message (group
/// commit, as the PostgreSQL bus does). So the server receives this node's messages
/// and commands in the order they were sent, and a busy node sends fewer, larger
/// messages. At most `maxQueued` items wait; more are refused with `limitExceeded`.
///
/// While the subscription is down, `receiving` is false; each time both connections
/// are up, `listening` is called (`again` after an outage, so that the node can make
/// its clients recover what they may have missed).
public final class RedisBus: RedisCommands {
    public let nodeUID: String
    /// The names of the bus channel and the regions' channels.
    public let keys: RedisKeys
    /// `PUBLISH`, or `SPUBLISH` on a Redis Cluster slot, as the bytes each message is sent with.
    private let publishCommand: [UInt8]
    public let publisher: RedisClient
    let subscriber: RedisClient
    private let sequence = Atomic<UInt64>(0)
    private let outbox = Mutex(Outbox())
    private let state = SharedState()
    private let logger: Logger

    private struct State {
        var deliver: (@Sendable ([ClusterEvent]) -> Void)?
        var listening: (@Sendable (_ again: Bool) -> Void)?
        var subscriberUp = false
        var publisherUp = false
        var wasUp = false
        var stopped = false

        /// Records a connection's change; answers whom to tell that both are up now.
        mutating func record(_ change: RedisClient.State, publisher: Bool) -> (listening: (@Sendable (Bool) -> Void)?, again: Bool) {
            let up = change == .up
            if publisher { publisherUp = up } else { subscriberUp = up }
            guard up, subscriberUp, publisherUp else { return (nil, false) }
            defer { wasUp = true }
            return (listening, wasUp)
        }
    }

    /// The state the connections' callbacks share with the bus (they are made before the bus is).
    private final class SharedState: Sendable {
        let mutex = Mutex(State())
        func withLock<T>(_ body: (inout State) -> T) -> T { mutex.withLock { body(&$0) } }
    }

    /// A bus for node `nodeUID` on the Redis server `server` (an address, a master behind
    /// Sentinel, or a Redis Cluster slot, whose hash tag every name then carries).
    public init(server: RedisServer, group: any EventLoopGroup, nodeUID: String, keys: RedisKeys = RedisKeys(), logger: Logger) {
        self.nodeUID = nodeUID
        self.keys = keys.inSlot(of: server.hashTag)
        publishCommand = Array(self.keys.publishCommand.utf8)
        self.logger = logger
        let state = self.state
        func changed(publisher: Bool) -> @Sendable (RedisClient.State) -> Void {
            { change in
                let (listening, again, stopped) = state.withLock { state in
                    let (listening, again) = state.record(change, publisher: publisher)
                    return (listening, again, state.stopped)
                }
                if case let .down(reason) = change, !stopped {
                    logger.error(
                        "cluster bus (Redis) down",
                        metadata: [
                            "server": "\(server)", "connection": "\(publisher ? "publisher" : "subscriber")", "reason": "\(reason)",
                        ])
                }
                listening?(again)
            }
        }
        publisher = RedisClient(server: server, group: group, stateChanged: changed(publisher: true))
        subscriber = RedisClient(
            server: server, group: group,
            stateChanged: changed(publisher: false),
            messages: { _, payload in
                let deliver = state.withLock { $0.deliver }
                do {
                    deliver?(try BinaryBusMessage.decode(payload))
                } catch {
                    logger.error("cluster bus (Redis) message not understood", metadata: ["error": "\(error)"])
                }
            })
    }

    /// Starts both connections; `deliver` gets every message's events (this node's own
    /// included) on the subscriber's event loop, `listening` runs each time both
    /// connections are up (`again` when they come back after an outage).
    public func start(
        deliver: @escaping @Sendable ([ClusterEvent]) -> Void,
        listening: @escaping @Sendable (_ again: Bool) -> Void
    ) async throws(RedisError) {
        state.withLock { state in
            state.deliver = deliver
            state.listening = listening
        }
        try await subscriber.subscribe(keys.bus)
        subscriber.start()
        publisher.start()
    }

    /// Whether the node hears the bus now.
    public var receiving: Bool { state.withLock { $0.subscriberUp } && subscriber.isUp }

    /// Publishes events; `unavailable` (the temporary 100) while Redis is down.
    public func publish(_ events: [ClusterEvent]) async throws(HubError) {
        try await withCheckedContinuation { continuation in
            publish(events) { continuation.resume(returning: $0) }
        }.get()
    }

    /// Publishes events after everything sent before them, on the bus channel or
    /// another (a region's); `completion` hears `unavailable` while Redis is down.
    public func publish(
        _ events: [ClusterEvent], on channel: [UInt8]? = nil,
        completion: @escaping @Sendable (Result<Void, HubError>) -> Void
    ) {
        enqueue(.events(channel ?? keys.bus, events.map(BinaryBusMessage.encode), completion))
    }

    /// Listens on the channels of `added` regions from now on, and no longer on those of `removed`.
    public func follow(adding added: Set<String>, removing removed: Set<String>) {
        subscriber.changeSubscriptions(subscribe: added.map(keys.region), unsubscribe: removed.map(keys.region))
    }

    /// Sends a command on the publisher connection after everything sent before it
    /// (a stream's script, a presence change), so that the server runs this node's
    /// commands and bus messages in the order they were sent.
    public func send(bytes arguments: [[UInt8]], completion: @escaping @Sendable (Result<RESPValue, RedisError>) -> Void) {
        enqueue(.command(RedisCommand(arguments: arguments, completion: completion)))
    }

    /// The number of this node's next message (for messages a script publishes).
    func nextSequence() -> UInt64 {
        sequence.add(1, ordering: .relaxed).newValue
    }

    /// Most events in one bus message, and most bytes of events.
    static let maxEventsPerMessage = 512
    static let maxMessageBytes = 1 << 20
    /// Most items waiting in the outbox.
    static let maxQueued = 10_000

    /// What waits to be written on the publisher connection, in order.
    private enum Outgoing {
        /// Events for a Redis channel.
        case events([UInt8], [[UInt8]], @Sendable (Result<Void, HubError>) -> Void)
        case command(RedisCommand)
    }

    private struct Outbox {
        var items: [Outgoing] = []
        var scheduled = false
    }

    /// Queues `item`; the first item of a batch schedules `drain` on the connection's event loop.
    private func enqueue(_ item: Outgoing) {
        enum Decision { case refuse, queued, schedule }
        let decision = outbox.withLock { outbox -> Decision in
            guard outbox.items.count < Self.maxQueued else { return .refuse }
            outbox.items.append(item)
            defer { outbox.scheduled = true }
            return outbox.scheduled ? .queued : .schedule
        }
        switch decision {
        case .queued: break
        case .schedule: publisher.execute { self.drain() }
        case .refuse:
            switch item {
            case let .events(_, _, completion): completion(.failure(.limitExceeded("the cluster bus (Redis) has \(Self.maxQueued) items waiting")))
            case let .command(command): command.completion(.failure(.overloaded(limit: Self.maxQueued)))
            }
        }
    }

    /// Writes everything queued with one flush: each run of events for one Redis
    /// channel as one message (at most `maxEventsPerMessage` events, `maxMessageBytes`),
    /// each command as it is.
    private func drain() {
        let items = outbox.withLock { outbox -> [Outgoing] in
            defer {
                outbox.items = []
                outbox.scheduled = false
            }
            return outbox.items
        }
        var batch: [RedisCommand] = []
        var target = keys.bus
        var events: [[UInt8]] = []
        var bytes = 0
        var waiting: [@Sendable (Result<Void, HubError>) -> Void] = []
        func closeMessage() {
            guard !events.isEmpty else { return }
            let message = BinaryBusMessage.message(node: nodeUID, sequence: nextSequence(), events: events)
            let completions = waiting
            batch.append(
                RedisCommand(arguments: [publishCommand, target, message]) { result in
                    let outcome = result.map { _ in }.mapError { HubError($0, in: "cluster bus") }
                    for completion in completions { completion(outcome) }
                })
            events = []
            bytes = 0
            waiting = []
        }
        for item in items {
            switch item {
            case let .events(channel, encoded, completion):
                let size = encoded.reduce(0) { $0 + $1.count }
                if channel != target || events.count + encoded.count > Self.maxEventsPerMessage || bytes + size > Self.maxMessageBytes {
                    closeMessage()
                }
                target = channel
                events += encoded
                bytes += size
                waiting.append(completion)
            case let .command(command):
                closeMessage()
                batch.append(command)
            }
        }
        closeMessage()
        publisher.send(batch: batch)
    }

    /// Closes both connections.
    public func stop() {
        state.withLock { $0.stopped = true }
        subscriber.stop()
        publisher.stop()
    }
}
