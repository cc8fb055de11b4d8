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
/// `receiving` is false; when it comes back, `resumed` is called so that the node
/// can make its clients recover what they may have missed.
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
        var resumed: (@Sendable () -> Void)?
        var receiving = false
        var wasReceiving = false
    }

    /// The state the subscriber's callbacks share with the bus (they are made before the bus is).
    private final class SharedState: Sendable {
        let mutex = Mutex(State())
        func withLock<T>(_ body: (inout State) -> T) -> T { mutex.withLock { body(&$0) } }
    }

    /// A bus for node `nodeUID` on the Redis server at `address`.
    public init(address: RedisAddress, group: any EventLoopGroup, nodeUID: String, logger: Logger) {
        self.nodeUID = nodeUID
        self.logger = logger
        publisher = RedisClient(address: address, group: group)
        let state = self.state
        subscriber = RedisClient(
            address: address, group: group,
            stateChanged: { change in
                let resumed: (@Sendable () -> Void)? = state.withLock { state in
                    switch change {
                    case .up:
                        state.receiving = true
                        defer { state.wasReceiving = true }
                        return state.wasReceiving ? state.resumed : nil
                    case .down:
                        state.receiving = false
                        return nil
                    }
                }
                if case let .down(reason) = change { logger.error("cluster bus (Redis) lost", metadata: ["reason": "\(reason)"]) }
                resumed?()
            },
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
    /// included) on the subscriber's event loop, `resumed` runs when the subscription
    /// comes back after an outage.
    public func start(deliver: @escaping @Sendable ([ClusterEvent]) -> Void, resumed: @escaping @Sendable () -> Void) async throws(RedisError) {
        state.withLock { state in
            state.deliver = deliver
            state.resumed = resumed
        }
        try await subscriber.subscribe(Self.channel)
        subscriber.start()
        publisher.start()
    }

    /// Whether the node hears the bus now.
    public var receiving: Bool { state.withLock { $0.receiving } && subscriber.isUp }

    /// Publishes events as one message; `notAvailable` while Redis is down.
    public func publish(_ events: [ClusterEvent]) async throws(HubError) {
        let number = sequence.add(1, ordering: .relaxed).newValue
        let message = BusCodec.envelope(node: nodeUID, sequence: number, events: events.map(BusCodec.encode))
        do {
            _ = try await publisher.send(bytes: [Array("PUBLISH".utf8), Self.channel, Array(message.utf8)])
        } catch {
            throw HubError(error, in: "cluster bus")
        }
    }

    /// Closes both connections.
    public func stop() {
        subscriber.stop()
        publisher.stop()
    }
}
