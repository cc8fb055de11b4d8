import GondolaRESP
import NIOConcurrencyHelpers
import NIOCore
import Synchronization

/// A connection to one Redis server that comes back by itself. While it is down,
/// commands fail at once with `RedisError.unavailable` naming the server and why, instead
/// of waiting; the client reconnects with a backoff from 50 ms doubling to `maxBackoff` (half
/// a second at most on a Redis Cluster slot, whose failovers no one announces), and tells
/// `stateChanged` when it goes down, when an attempt to connect fails for a new reason (a
/// wrong password, a certificate not trusted, a server not answering: said once, not at
/// every attempt), and when it is back. A server that goes silent without closing the
/// socket is found by the connection's `RedisLiveness` and counts as down. Channels subscribed with
/// `subscribe` are subscribed again on every new connection, and their messages go
/// to `messages`: a client used for Pub/Sub should not also carry commands, so that
/// a slow command never delays a delivery.
///
/// Behind Sentinel (`RedisServer.sentinel`) every connection goes to the master the
/// Sentinels name at that moment and is used once `ROLE` confirms it; the client also
/// listens to a Sentinel's `+switch-master` and drops its connection when the master
/// changes, so that it follows a failover even when the old master is still reachable.
///
/// On a Redis Cluster slot (`RedisServer.cluster`) every connection goes to the master that
/// serves the slot now, and Pub/Sub takes shard channels. When the cluster answers `MOVED`
/// (the slot went to another node) the command fails with `unavailable` and the client
/// reconnects to the new master; `ASK` (the slot is being moved and the key is already on
/// the new node) sends the command there after `ASKING`, in the order such answers came;
/// `TRYAGAIN` and `CLUSTERDOWN` fail with `unavailable`. A shard channel's subscription that
/// the server ends by itself (its slot moved) makes the client reconnect, and subscribe again
/// on the slot's new master.
public final class RedisClient: RedisCommands {
    /// What the client tells its owner.
    public enum State: Sendable, Equatable {
        case up
        case down(String)
    }

    public let server: RedisServer
    let group: any EventLoopGroup
    let maxBackoff: Duration
    private let stateChanged: @Sendable (State) -> Void
    private let messages: @Sendable (_ channel: [UInt8], _ payload: [UInt8]) -> Void
    private let shared = Mutex(Shared())
    private let runners = Mutex<[Task<Void, Never>]>([])

    private struct Shared {
        var connection: RedisConnection?
        /// The connection to a Sentinel that tells of failovers (behind Sentinel).
        var sentinelWatch: RedisConnection?
        /// The wait before the next attempt to connect, which a failover cuts short.
        var backoffWait: Task<Void, Never>?
        var downReason = "not connected yet"
        var subscriptions: Set<[UInt8]> = []
        var stopped = false
        /// Commands a Redis Cluster node sent elsewhere with `ASK`, in order (on a cluster slot).
        var asked: AsyncStream<(RedisCommand, RedisAddress)>.Continuation?
    }

    /// How Pub/Sub (un)subscriptions are written: shard channels on a Redis Cluster slot.
    private var subscribeVerb: [UInt8] { Array((server.shardedPubSub ? "SSUBSCRIBE" : "SUBSCRIBE").utf8) }
    private var unsubscribeVerb: [UInt8] { Array((server.shardedPubSub ? "SUNSUBSCRIBE" : "UNSUBSCRIBE").utf8) }

    /// A client of the server at `address`.
    public convenience init(
        address: RedisAddress, group: any EventLoopGroup, maxBackoff: Duration = .seconds(2),
        stateChanged: @escaping @Sendable (State) -> Void = { _ in },
        messages: @escaping @Sendable (_ channel: [UInt8], _ payload: [UInt8]) -> Void = { _, _ in }
    ) {
        self.init(server: .address(address), group: group, maxBackoff: maxBackoff, stateChanged: stateChanged, messages: messages)
    }

    /// A client of `server`: an address, or a master behind Sentinel.
    public init(
        server: RedisServer, group: any EventLoopGroup, maxBackoff: Duration = .seconds(2),
        stateChanged: @escaping @Sendable (State) -> Void = { _ in },
        messages: @escaping @Sendable (_ channel: [UInt8], _ payload: [UInt8]) -> Void = { _, _ in }
    ) {
        self.server = server
        self.group = group
        // A Redis Cluster tells its clients nothing of a failover: a slot's client asks the seeds
        // for the slot's master again at least every half second while it cannot reach it.
        self.maxBackoff = server.hashTag == nil ? maxBackoff : min(maxBackoff, .milliseconds(500))
        self.stateChanged = stateChanged
        self.messages = messages
    }

    /// Starts connecting (and reconnecting whenever the connection is lost).
    public func start() {
        runners.withLock { tasks in
            guard tasks.isEmpty else { return }
            tasks.append(Task { await self.keepConnected() })
            if case let .sentinel(sentinel) = server { tasks.append(Task { await self.followFailovers(of: sentinel) }) }
            if case .cluster = server { tasks.append(Task { await self.sendAsked() }) }
        }
    }

    /// Closes the connection and stops reconnecting.
    public func stop() {
        let connections = shared.withLock { shared in
            shared.stopped = true
            shared.asked?.finish()
            return [shared.connection, shared.sentinelWatch]
        }
        runners.withLock { tasks in for task in tasks { task.cancel() } }
        for connection in connections { connection?.close() }
    }

    /// Whether a connection is up now.
    public var isUp: Bool { shared.withLock { $0.connection?.isActive == true } }

    /// Writes a command now, in the order of the calls, and calls `completion` with
    /// its answer (at once with `unavailable` when there is no connection).
    public func send(bytes arguments: [[UInt8]], completion: @escaping @Sendable (Result<RESPValue, RedisError>) -> Void) {
        send(batch: [RedisCommand(arguments: arguments, completion: completion)])
    }

    /// Writes the commands in order with one flush (every one fails with `unavailable`
    /// when there is no connection).
    public func send(batch: [RedisCommand]) {
        let (connection, reason) = shared.withLock { ($0.connection, $0.downReason) }
        guard let connection, connection.isActive else {
            for command in batch { command.completion(.failure(.unavailable("\(server): \(reason)"))) }
            return
        }
        guard case .cluster = server else { return connection.send(batch: batch) }
        connection.send(batch: batch.map { following($0, on: connection) })
    }

    /// `command` with its answer checked for Redis Cluster's redirections first (see the type's documentation).
    private func following(_ command: RedisCommand, on connection: RedisConnection) -> RedisCommand {
        let server = server
        return RedisCommand(arguments: command.arguments) { [weak self] result in
            guard case let .failure(.server(message)) = result else { return command.completion(result) }
            guard let (ask, target) = RedisClusterSlot.redirection(message, from: connection.address) else {
                let temporary = message.hasPrefix("TRYAGAIN") || message.hasPrefix("CLUSTERDOWN")
                return command.completion(temporary ? .failure(.unavailable("\(server): \(message)")) : result)
            }
            guard ask else {
                // The slot moved: reconnect (after the answers already read) to its master now.
                connection.execute { connection.close() }
                return command.completion(.failure(.unavailable("\(server) moved: \(message)")))
            }
            let client = self
            if case .enqueued? = client?.shared.withLock({ $0.asked })?.yield((command, target)) { return }
            command.completion(.failure(.unavailable("\(server) is being moved (\(message)) and 10000 commands wait to follow it")))
        }
    }

    /// Sends the commands a cluster node answered with `ASK` to the node it named, each after
    /// `ASKING`, in the order the answers came; one connection to the node is kept while
    /// commands keep being sent there.
    private func sendAsked() async {
        let (stream, continuation) = AsyncStream<(RedisCommand, RedisAddress)>.makeStream(bufferingPolicy: .bufferingOldest(10_000))
        shared.withLock { $0.asked = continuation }
        var target: RedisConnection?
        for await (command, address) in stream {
            if let current = target, !current.isActive || current.address != address {
                current.close()
                target = nil
            }
            if target == nil {
                do throws(RedisError) {
                    target = try await RedisConnection.connect(to: address, on: group)
                } catch {
                    command.completion(.failure(.unavailable("\(server) is being moved to \(address), which did not answer: \(error)")))
                    continue
                }
            }
            target?.send(batch: [
                RedisCommand(arguments: [Array("ASKING".utf8)]) { _ in },
                RedisCommand(arguments: command.arguments, completion: command.completion),
            ])
        }
        target?.close()
    }

    /// Runs `body` on the current connection's event loop, or at once when there is none.
    public func execute(_ body: @escaping @Sendable () -> Void) {
        guard let connection = shared.withLock({ $0.connection }), connection.isActive else { return body() }
        connection.execute(body)
    }

    /// Subscribes to a Pub/Sub channel now if connected, and on every reconnection.
    public func subscribe(_ channel: [UInt8]) async throws(RedisError) {
        try await change(channel, subscribed: true)
    }

    /// Unsubscribes from a Pub/Sub channel.
    public func unsubscribe(_ channel: [UInt8]) async throws(RedisError) {
        try await change(channel, subscribed: false)
    }

    /// Subscribes to and unsubscribes from Pub/Sub channels at once, in the order of
    /// the calls (a caller that changes its channels often does not wait for answers);
    /// channels subscribed are subscribed again on every new connection.
    public func changeSubscriptions(subscribe added: [[UInt8]], unsubscribe removed: [[UInt8]]) {
        let connection = shared.withLock { shared in
            shared.subscriptions.formUnion(added)
            shared.subscriptions.subtract(removed)
            return shared.connection
        }
        guard let connection, connection.isActive else { return }
        let ignore: @Sendable (Result<RESPValue, RedisError>) -> Void = { _ in }
        connection.send(
            batch: added.map { RedisCommand(arguments: [subscribeVerb, $0], completion: ignore) }
                + removed.map { RedisCommand(arguments: [unsubscribeVerb, $0], completion: ignore) })
    }

    private func change(_ channel: [UInt8], subscribed: Bool) async throws(RedisError) {
        let connection = shared.withLock { shared in
            if subscribed { shared.subscriptions.insert(channel) } else { shared.subscriptions.remove(channel) }
            return shared.connection
        }
        guard let connection, connection.isActive else { return }
        _ = try await connection.send(bytes: [subscribed ? subscribeVerb : unsubscribeVerb, channel])
    }

    private func keepConnected() async {
        var backoff = Duration.milliseconds(50)
        while !Task.isCancelled, !shared.withLock({ $0.stopped }) {
            let lost = AsyncStream<String>.makeStream()
            do throws(RedisError) {
                let address = try await server.currentAddress(on: group)
                let connection = try await RedisConnection.connect(
                    to: address, on: group,
                    pushes: { [weak self, messages] push in
                        // A shard channel's subscription the server ended itself: its slot moved; reconnect to follow it.
                        guard push.elements?.first?.string == "sunsubscribe" else { return Self.deliver(push, to: messages) }
                        let client = self
                        client?.shared.withLock { $0.connection }?.close()
                    },
                    closed: { reason in
                        lost.continuation.yield(reason)
                        lost.continuation.finish()
                    })
                if case .sentinel = server {
                    do throws(RedisError) {
                        try await RedisSentinel.confirmMaster(connection)
                    } catch {
                        connection.close()
                        throw error
                    }
                }
                let channels = shared.withLock { shared in
                    shared.connection = connection
                    return shared.subscriptions
                }
                for channel in channels { _ = try await connection.send(bytes: [subscribeVerb, channel]) }
                backoff = .milliseconds(50)
                stateChanged(.up)
                var reason = "closed"
                for await why in lost.stream { reason = why }
                shared.withLock { shared in
                    shared.connection = nil
                    shared.downReason = reason
                }
                stateChanged(.down(reason))
            } catch {
                // Not up yet (connecting, or subscribing again failed): try again later.
                let reason = if case let .unavailable(why) = error { why } else { "\(error)" }
                let news = shared.withLock { shared in
                    shared.connection?.close()
                    shared.connection = nil
                    defer { shared.downReason = reason }
                    return shared.downReason != reason && !shared.stopped
                }
                if news { stateChanged(.down(reason)) }
                let wait = Task { [backoff] in _ = try? await Task.sleep(for: backoff) }
                shared.withLock { $0.backoffWait = wait }
                await wait.value
                backoff = min(backoff * 2, maxBackoff)
            }
        }
    }

    /// Listens to one Sentinel after another for `+switch-master`, and when it names a new
    /// address for this master drops a connection to another one (and cuts short the wait before
    /// the next attempt), so that the next connection goes to the new master at once.
    private func followFailovers(of sentinel: RedisSentinel) async {
        var turn = 0
        var backoff = Duration.milliseconds(50)
        while !Task.isCancelled, !shared.withLock({ $0.stopped }) {
            let address = sentinel.sentinels[turn % sentinel.sentinels.count]
            turn += 1
            let lost = AsyncStream<Void>.makeStream()
            do throws(RedisError) {
                let watch = try await RedisConnection.connect(
                    to: address, on: group,
                    pushes: { [weak self] push in
                        let client = self
                        Self.deliver(push) { _, payload in
                            guard let master = sentinel.switchedTo(payload) else { return }
                            let (connection, wait) = client?.shared.withLock { ($0.connection, $0.backoffWait) } ?? (nil, nil)
                            // A connection that already reached the new master (another Sentinel named it first) stays.
                            if let connection, connection.address.host != master.host || connection.address.port != master.port {
                                connection.close()
                            }
                            wait?.cancel()
                        }
                    },
                    closed: { _ in lost.continuation.finish() })
                let stopped = shared.withLock { shared in
                    shared.sentinelWatch = watch
                    return shared.stopped
                }
                if stopped { watch.close() }
                do throws(RedisError) {
                    _ = try await watch.send(["SUBSCRIBE", "+switch-master"])
                } catch {
                    watch.close()
                    throw error
                }
                backoff = .milliseconds(50)
                for await _ in lost.stream {}
            } catch {
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, maxBackoff)
            }
        }
    }

    /// Hands a Pub/Sub `message` (or shard channel's `smessage`) push to `messages`; other pushes
    /// (subscribe confirmations) are not deliveries.
    static func deliver(_ push: RESPValue, to messages: @Sendable ([UInt8], [UInt8]) -> Void) {
        guard let items = push.elements, items.count == 3, items[0].string == "message" || items[0].string == "smessage",
            let channel = items[1].bytes, let payload = items[2].bytes
        else { return }
        messages(channel, payload)
    }
}
