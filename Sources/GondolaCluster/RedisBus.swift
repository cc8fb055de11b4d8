import Foundation
import GondolaHub
import GondolaProtocol
import GondolaRedis
import Logging
import NIOCore
import Synchronization

/// The cluster bus over Redis Pub/Sub: every node publishes its events to one Redis
/// channel and subscribes to it, on a connection of its own so that no command
/// delays a delivery. A message is the bus's envelope (`{"n":node,"s":sequence,"e":[…]}`,
/// see `BusCodec`); Redis has no size limit to work around, so events of any size
/// travel inline. Messages from one node arrive in the order it sent them: its
/// publishes share one pipelined connection. While the subscription is down,
/// `receiving` is false; each time both connections are up, `listening` is called
/// (`again` after an outage, so that the node can make its clients recover what they
/// may have missed).
public final class RedisBus: Sendable {
    /// The Redis channel every node publishes to and listens on.
    public static let channel = Array("gondola:bus".utf8)

    public let nodeUID: String
    public let publisher: RedisClient
    let subscriber: RedisClient
    private let sequence = Atomic<UInt64>(0)
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

    /// A bus for node `nodeUID` on the Redis server at `address`.
    public init(address: RedisAddress, group: any EventLoopGroup, nodeUID: String, logger: Logger) {
        self.nodeUID = nodeUID
        self.logger = logger
        let state = self.state
        func changed(publisher: Bool) -> @Sendable (RedisClient.State) -> Void {
            { change in
                let (listening, again, stopped) = state.withLock { state in
                    let (listening, again) = state.record(change, publisher: publisher)
                    return (listening, again, state.stopped)
                }
                if case let .down(reason) = change, !stopped {
                    logger.error("cluster bus (Redis) lost", metadata: [
                        "address": "\(address)", "connection": "\(publisher ? "publisher" : "subscriber")", "reason": "\(reason)",
                    ])
                }
                listening?(again)
            }
        }
        publisher = RedisClient(address: address, group: group, stateChanged: changed(publisher: true))
        subscriber = RedisClient(
            address: address, group: group,
            stateChanged: changed(publisher: false),
            messages: { _, payload in
                let deliver = state.withLock { $0.deliver }
                do {
                    guard case let .events(events) = try BusCodec.decodeNotification(String(decoding: payload, as: UTF8.self)) else { return }
                    deliver?(events)
                } catch {
                    logger.error("cluster bus (Redis) message not understood", metadata: ["error": "\(error)"])
                }
            })
    }

    /// Starts both connections; `deliver` gets every message's events (this node's own
    /// included) on the subscriber's event loop, `listening` runs each time both
    /// connections are up (`again` when they come back after an outage).
    public func start(deliver: @escaping @Sendable ([ClusterEvent]) -> Void,
                      listening: @escaping @Sendable (_ again: Bool) -> Void) async throws(RedisError) {
        state.withLock { state in
            state.deliver = deliver
            state.listening = listening
        }
        try await subscriber.subscribe(Self.channel)
        subscriber.start()
        publisher.start()
    }

    /// Whether the node hears the bus now.
    public var receiving: Bool { state.withLock { $0.subscriberUp } && subscriber.isUp }

    /// Publishes events as one message; `notAvailable` while Redis is down.
    public func publish(_ events: [ClusterEvent]) async throws(HubError) {
        try await withCheckedContinuation { continuation in
            publish(events) { continuation.resume(returning: $0) }
        }.get()
    }

    /// Publishes events as one message, written at once (messages reach the bus in
    /// the order of the calls); `completion` hears `notAvailable` while Redis is down.
    public func publish(_ events: [ClusterEvent], completion: @escaping @Sendable (Result<Void, HubError>) -> Void) {
        let message = BusCodec.envelope(node: nodeUID, sequence: nextSequence(), events: events.map(BusCodec.encode))
        publisher.send(bytes: [Array("PUBLISH".utf8), Self.channel, Array(message.utf8)]) { result in
            completion(result.map { _ in }.mapError { HubError($0, in: "cluster bus") })
        }
    }

    /// The number of this node's next message (for messages a script publishes).
    func nextSequence() -> UInt64 {
        sequence.add(1, ordering: .relaxed).newValue
    }

    /// Closes both connections.
    public func stop() {
        state.withLock { $0.stopped = true }
        subscriber.stop()
        publisher.stop()
    }
}
