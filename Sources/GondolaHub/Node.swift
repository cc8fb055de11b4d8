import CoreMetrics
import Foundation
import GondolaProtocol
import Logging
import Synchronization

/// Figures about a node, as the server API's `info` reports them.
public struct NodeStats: Sendable, Equatable {
    public var clients: Int
    public var users: Int
    public var channels: Int
    public var subscriptions: Int
    public var queuedBytes: Int
    public var uptimeSeconds: Int

    public init(clients: Int, users: Int, channels: Int, subscriptions: Int, queuedBytes: Int, uptimeSeconds: Int) {
        self.clients = clients
        self.users = users
        self.channels = channels
        self.subscriptions = subscriptions
        self.queuedBytes = queuedBytes
        self.uptimeSeconds = uptimeSeconds
    }
}

/// The hub's public face (centrifuge's `Node`): the API domains and the server call —
/// install names, resolve channels, publish, read history and presence, act on users —
/// routed to the engine (a `Broker` that keeps streams and carries publications and
/// events, and a `PresenceManager`), the same seam alone or in a cluster. The node's
/// state lives in parts of its own: the live channels and their fan-out
/// (`ChannelTable`), the connections (`SessionRegistry`), what domains replicate
/// (`Replication`) and the RPC table (`RPCRouter`). The engine sees the node only as an
/// `EngineDelivery`, held weakly. The server is a thin transport around it.
public final class Node: Sendable {
    /// The namespaces, limits and timings in force; `reconfigure` replaces them.
    public var configuration: HubConfiguration { directory.configuration }
    /// The channels this node knows: names, namespaces, providers, where streams are read.
    let directory: ChannelDirectory
    /// The subscriptions of this node's sessions, from subscribe to unsubscribe.
    let subscriptions: Subscriptions
    /// Publications: checks, the broker, delivery to this node's subscribers, streams.
    let publications: Publishing
    public let rpc = RPCRouter()
    /// Unique id of this run of the node.
    public let uid: String
    public let version = "gondola 0.1.0"
    let tokens: ConnectionTokens
    /// The app's backend, when the configuration names proxy endpoints.
    let proxy: BackendProxy?
    let metrics: HubMetrics
    let logger: Logger
    /// Where refused client commands are logged, rate-limited per command and code.
    let refusals: RefusalLog
    /// The spans of this node's publications, deliveries, client commands and proxy calls.
    public let tracing: HubTracing
    /// Keeps the streams and carries publications and events to every node.
    let broker: any Broker
    /// Who is subscribed where, for namespaces that keep presence.
    let presenceManager: any PresenceManager
    /// The other nodes, when this one is part of a cluster (their figures for `info`,
    /// and readiness); the engine's calls go through `broker` and `presenceManager`.
    @_spi(Engine) public let cluster: (any ClusterLink)?
    let table = ChannelTable()
    let registry = SessionRegistry()
    /// The sessions `/emulation` requests address.
    let emulated = EmulatedSessions()
    private let replication = Replication()
    /// This node's questions to the other nodes, waiting for their answers.
    let surveys = Surveys()
    private let startedAt = ContinuousClock.now
    private let messageHandler = Mutex<(@Sendable (RPCContext, RawJSON?) async -> Void)?>(nil)
    private let connectHooks = Mutex<[@Sendable (Credentials) async -> Void]>([])
    /// Who installed each RPC method, namespace, channel and replica topic.
    private let claims: Mutex<NameClaims>
    /// The contracts of what was installed.
    private let contracts = Mutex(MethodCatalog())

    /// A node alone: its streams in memory and, for `history_durable` namespaces, in
    /// `durableHistory` (memory without one); presence in its own channels.
    /// - Parameters:
    ///   - proxy: carries proxy requests to the app's backend (connect without a token,
    ///     RPC methods no domain serves, `proxy_subscribe` and `proxy_publish` namespaces).
    ///   - uid: this run's id.
    ///   - metricsFactory: where counters and timers go (Prometheus in the server).
    ///   - tracing: where spans go (off unless the server runs with `opentelemetry`).
    public convenience init(
        configuration: HubConfiguration,
        tokens: ConnectionTokens,
        proxy: (any ProxyTransport)? = nil,
        durableHistory: (any LocalHistoryStore)? = nil,
        uid: String = UUID().uuidString.lowercased(),
        metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance,
        tracing: HubTracing = .off,
        logger: Logger = Logger(label: "gondola.hub")
    ) {
        self.init(
            configuration: configuration, tokens: tokens, proxy: proxy, durableHistory: durableHistory, cluster: nil, uid: uid,
            metricsFactory: metricsFactory, tracing: tracing, logger: logger)
    }

    /// A node on `cluster`, the link to the other nodes, which is then its broker and
    /// presence manager; without one, as the node alone above.
    @_spi(Engine) public init(
        configuration: HubConfiguration,
        tokens: ConnectionTokens,
        proxy: (any ProxyTransport)? = nil,
        durableHistory: (any LocalHistoryStore)? = nil,
        cluster: (any ClusterLink)?,
        uid: String = UUID().uuidString.lowercased(),
        metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance,
        tracing: HubTracing = .off,
        logger: Logger = Logger(label: "gondola.hub")
    ) {
        let shared = SharedConfiguration(configuration)
        self.tokens = tokens
        self.tracing = tracing
        self.proxy = proxy.map { BackendProxy(transport: $0, rpcRoutes: { shared.value.rpcProxies }, tracing: tracing, logger: logger) }
        self.cluster = cluster
        let alone = MemoryBroker(durableHistory: durableHistory)
        self.broker = cluster ?? alone
        self.presenceManager = cluster ?? alone
        self.directory = ChannelDirectory(configuration: shared, broker: broker, logger: logger)
        self.subscriptions = Subscriptions(table: table, directory: directory, presenceManager: presenceManager, broker: broker, logger: logger)
        self.metrics = HubMetrics(factory: metricsFactory)
        self.publications = Publishing(table: table, directory: directory, broker: broker, metrics: metrics, tracing: tracing, logger: logger)
        self.logger = logger
        self.refusals = RefusalLog(logger: logger)
        self.uid = uid
        var own = NodeRegistrations()
        own.register("server.time", NoFields.self, ServerTime.self, rules: "for clients to measure their clock's offset") { _, _ in
            ServerTime(milliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        }
        self.claims = Mutex(NameClaims(hubNames: own.claimedNames))
        apply(own, by: NameClaims.hub)
        broker.attach(self)
    }

    /// The contracts of the RPC methods, provided namespaces and replica topics installed so far.
    public var catalog: MethodCatalog { contracts.withLock { $0 } }

    /// Whether this node is part of a cluster (other nodes hear what it publishes and replicates).
    public var isClustered: Bool { cluster != nil }

    /// Sets what handles the `send` command's asynchronous messages.
    public func onMessage(_ handler: @escaping @Sendable (RPCContext, RawJSON?) async -> Void) {
        messageHandler.withLock { $0 = handler }
    }

    func handleMessage(_ context: RPCContext, _ data: RawJSON?) async {
        if let handler = messageHandler.withLock({ $0 }) { await handler(context, data) }
    }

    /// Adds what `registrations` holds, owned by `owner` ("the hub", or "domain 'travel'"
    /// as `NameClaims` describes it): nothing is added when one of its RPC methods,
    /// namespaces, channels or replica topics is already claimed, or claimed twice in it;
    /// the error then names both owners.
    public func install(_ registrations: NodeRegistrations, by owner: String) throws(NameClaimError) {
        try claims.withLock { claims throws(NameClaimError) in
            var claimed = claims
            try claimed.claim(registrations.claimedNames, by: owner)
            claims = claimed
        }
        apply(registrations, by: owner)
    }

    private func apply(_ registrations: NodeRegistrations, by owner: String) {
        for method in registrations.methods { rpc.register(method.name, method.handler) }
        contracts.withLock { $0.add(registrations, by: owner) }
        directory.provide(registrations.provided)
        replication.add(registrations)
        connectHooks.withLock { $0 += registrations.connectHooks }
    }

    func connected(_ credentials: Credentials) async {
        for hook in connectHooks.withLock({ $0 }) { await hook(credentials) }
    }

    // MARK: Sessions

    /// A new session for a connection that was just opened, speaking `encoding` over
    /// `transport`; `forwardedHeaders` (those of its opening request the configuration
    /// forwards) go with its proxy requests. While shutting down the session is closed with
    /// 3001 at once.
    public func accept(
        encoding: ProtocolEncoding = .json, transport: SessionTransport = .bidirectional, forwardedHeaders: [(name: String, value: String)] = []
    ) -> ClientSession {
        let session = ClientSession(node: self, encoding: encoding, transport: transport, forwardedHeaders: forwardedHeaders)
        guard registry.add(session) else {
            session.close(.shutdown)
            return session
        }
        if transport == .emulation { emulated.add(session) }
        return session
    }

    /// Records the user of a session that completed `connect` (see `SessionRegistry.register`).
    func register(_ session: ClientSession, user: String) -> SessionRegistry.Registration {
        let outcome = registry.register(session, user: user, limit: configuration.userConnectionLimit)
        switch outcome {
        case .registered: metrics.connects.increment()
        case .userLimitReached: metrics.limitReached("client_user_connection_limit")
        case .shuttingDown: break
        }
        return outcome
    }

    /// Removes a session from its channels (sending leaves) and from the registry.
    func detach(_ session: ClientSession, user: String?, channels: [String]) {
        for channel in channels {
            subscriptions.removeInBackground(session, from: channel)
        }
        registry.remove(session, user: user)
        if session.transport == .emulation { emulated.remove(session) }
    }

    // MARK: Channels

    /// A namespace or single channel handed to a provider.
    public enum Provision: Hashable, Sendable {
        case namespace(String)
        case channel(String)
    }

    /// The provider owning the channel, if a domain service owns it or its namespace.
    func provider(of name: ChannelName) -> (any ChannelProvider)? { directory.provider(of: name) }

    /// `raw` checked as a channel name under this node's `channel_max_length`.
    public func channelName(_ raw: String) throws(HubError) -> ChannelName { try directory.channelName(raw) }

    /// Validates a channel name and finds its namespace's options.
    public func resolve(_ channel: String) throws(HubError) -> (ChannelName, NamespaceOptions) { try directory.resolve(channel) }

    /// Puts `newer` in force (a configuration reload): connections keep going, new commands
    /// follow its namespaces and limits, and every subscription its namespaces no longer
    /// allow is ended with the unsubscribe code 2000, as a server unsubscribe. The node's
    /// name stays. Answers how many subscriptions were ended.
    @discardableResult
    public func reconfigure(_ newer: HubConfiguration) -> Int {
        directory.replace(with: newer)
        return registry.all.reduce(0) { $0 + subscriptions.endDisallowed(of: $1) }
    }

    /// Whether `channel` has a subscriber on this node.
    public func hasSubscribers(_ channel: String) -> Bool {
        table.hasSubscribers(channel)
    }

    /// The users with a live subscription to `channel`: on every node when the channel's
    /// namespace keeps presence, else on this node.
    public func usersSubscribed(to channel: String) async -> Set<String> {
        if let options = try? resolve(channel).1, options.presence,
            let everywhere = try? await presenceManager.presence(channel: channel)
        {
            return Set(everywhere.values.map(\.user))
        }
        return table.users(of: channel)
    }

    /// Publishes into a channel: the broker appends it to the channel's stream when the
    /// namespace keeps one and delivers it to every node, whose `receive` encodes the
    /// push once and enqueues the same bytes for every subscriber. `completion` hears the
    /// stream position (nil without a stream), or why it was refused. No thread waits:
    /// alone, the publication is stored and sent (and `completion` called) before this
    /// returns; in a cluster `completion` runs once the bus committed it. Publications to
    /// one channel keep the order of the calls.
    ///
    /// `tags` travel with the publication (and stay with it in the stream); `publishing`
    /// adds Centrifugo's per-publication options: `skipHistory` leaves the stream out, an
    /// idempotency key or a version is the engine's to check. A version needs the stream:
    /// without one it is refused (107).
    public func publish(
        channel: String, data: Payload, info: ClientInfo? = nil, tags: [String: String] = [:], publishing: PublishOptions = PublishOptions(),
        completion: @escaping @Sendable (Result<StreamPosition?, HubError>) -> Void
    ) {
        publications.publish(channel: channel, data: data, info: info, tags: tags, publishing: publishing, completion: completion)
    }

    /// `publish` awaited: the position once the publication is stored and sent.
    @discardableResult
    public func publish(
        channel: String, data: Payload, info: ClientInfo? = nil, tags: [String: String] = [:], publishing: PublishOptions = PublishOptions()
    ) async throws(HubError) -> StreamPosition? {
        try await withCheckedContinuation { continuation in
            publish(channel: channel, data: data, info: info, tags: tags, publishing: publishing) { continuation.resume(returning: $0) }
        }.get()
    }

    /// `publish` for news no caller waits on (a domain telling a channel's subscribers
    /// what changed); a refusal is logged with the channel (a failed store already is).
    public func publishInBackground(channel: String, data: Payload) {
        publish(channel: channel, data: data) { [logger] result in
            guard case let .failure(error) = result else { return }
            switch error {
            case .internalError, .unavailable: return  // logged where the store failed
            default: logger.error("publish refused", metadata: ["channel": "\(channel)", "error": "\(error)"])
            }
        }
    }

    /// Publishes to this node's subscribers only, for channels without a stream
    /// whose publications every node of a cluster computes for its own subscribers
    /// (the travel domain's position frames, computed from each node's whole live
    /// map). `channel` belongs to `namespace`, which the caller provides; the caller
    /// built the name itself, so it is not parsed again.
    public func publishLocally(channel: String, providedIn namespace: NamespaceOptions, data: RawJSON) {
        publications.publishLocally(channel: channel, providedIn: namespace, data: data)
    }

    /// Sends a publication that the namespace's own store has already written (its
    /// offset set) to the channel's subscribers. Under the channel's lock
    /// `whileLocked` runs first — the store makes the publication readable there — so
    /// a subscriber recovering at the same time gets it either from the store or
    /// live, never both and never neither. For providers that write in batches.
    public func deliver(channel: String, publication: Publication, whileLocked: () -> Void) {
        publications.deliver(channel: channel, publication: publication, whileLocked: whileLocked)
    }

    /// A channel's stream: `limit` publications after `since` (0 gives only the position).
    public func history(channel: String, limit: Int, since: StreamPosition?, reverse: Bool) async throws(HubError) -> HistoryResult {
        try await publications.history(channel: channel, limit: limit, since: since, reverse: reverse)
    }

    /// Drops a channel's retained publications.
    public func removeHistory(channel: String) async throws(HubError) {
        try await publications.removeHistory(channel: channel)
    }

    /// Who is subscribed to a channel, by client id (on every node of a cluster).
    public func presence(channel: String) async throws(HubError) -> [String: ClientInfo] {
        try requirePresence(channel)
        return try await presenceManager.presence(channel: channel)
    }

    /// Refuses a channel that is not valid, or whose namespace keeps no presence.
    private func requirePresence(_ channel: String) throws(HubError) {
        let (_, options) = try resolve(channel)
        guard options.presence else { throw .notAvailable("namespace of \(channel) has no presence") }
    }

    /// How many clients and distinct users are subscribed to a channel.
    public func presenceStats(channel: String) async throws(HubError) -> PresenceStats {
        try requirePresence(channel)
        return try await presenceManager.presenceStats(channel: channel)
    }

    /// Channels with at least one subscriber on this node and their subscriber counts.
    public func channels() -> [String: Int] { table.subscriberCounts() }

    // MARK: Delivery

    /// Applies what the broker delivers (this node's publications and events, and in a
    /// cluster every node's) to this node's clients.
    func receive(_ event: ClusterEvent) {
        switch event {
        case let .publication(channel, publication):
            publications.deliver(publication, on: channel)
        case let .join(channel, info):
            table.pushJoinLeave(Push(channel: channel, .join(info)), on: channel)
        case let .leave(channel, info):
            table.pushJoinLeave(Push(channel: channel, .leave(info)), on: channel)
        case let .unsubscribe(user, channel, target):
            for session in registry.sessions(of: user) where target.admits(session) { session.serverUnsubscribe(channel) }
        case let .subscribe(user, channel, options):
            guard let subscription = try? ServerSubscription(options) else {
                return logger.error("server subscribe options not understood", metadata: ["channel": "\(channel)"])
            }
            for session in registry.sessions(of: user) where subscription.target.admits(session) {
                Task { await subscriptions.serverSubscribe(session, to: channel, subscription) }
            }
        case let .disconnect(user, code, keeping, target):
            for session in registry.sessions(of: user) where !keeping.contains(session.id) && target.admits(session) {
                if code == .connectionLimit {
                    metrics.limitReached("user_personal_single_connection")
                    logger.info(
                        "closing a user's other connection: single-connection mode", metadata: ["user": "\(user)", "client": "\(session.id)"])
                }
                session.close(code)
            }
        case let .refresh(user, target, refresh):
            for session in registry.sessions(of: user) where target.admits(session) { session.serverRefresh(refresh) }
        case let .domain(topic, origin, payload):
            guard origin != uid else { return }
            switch topic {
            case Surveys.askTopic: answerSurvey(payload)
            case Emulation.topic: answerEmulation(payload)
            case Surveys.answerTopic: surveys.receive(payload)
            default:
                do throws(HubError) { try replication.apply(topic: topic, payload) } catch { replicaNotRead(topic, payload, error) }
            }
        case let .regional(region, topic, origin, payload):
            guard origin != uid else { return }
            do throws(HubError) {
                switch try replication.apply(topic: topic, region: region, payload) {
                case .applied: metrics.regionalApplied.increment()
                case .dropped: metrics.regionalDropped.increment()
                }
            } catch {
                replicaNotRead(topic, payload, error)
            }
        }
    }

    /// Logs a replica payload its topic's handler could not read (a node of another version).
    private func replicaNotRead(_ topic: String, _ payload: JSON, _ error: HubError) {
        logger.error("replica not understood", metadata: ["topic": "\(topic)", "error": "\(error)", "payload": "\(payload.text.prefix(200))"])
    }

    /// Tells the nodes following `region` about a change a domain keeps in memory
    /// (a traveller's position): like `replicate(topic:_:)`, but a node applies it only
    /// while it follows the region (`follow(regions:)`), and an engine that routes by
    /// region does not even bring it to the others.
    public func replicate(topic: String, region: String, _ payload: @autoclosure () -> some ReplicaPayload) {
        guard broker.reachesOtherNodes else { return }
        broker.post(.regional(region: region, topic: topic, origin: uid, payload: payload().json)) { [logger] result in
            if case let .failure(error) = result {
                logger.error("cluster replication failed", metadata: ["topic": "\(topic)", "region": "\(region)", "error": "\(error)"])
            }
        }
    }

    /// The regions whose regional events this node applies from now on; the broker
    /// is told when the set changes.
    public func follow(regions: Set<String>) {
        if replication.follow(regions) { broker.follow(regions: regions) }
    }

    /// Tells the other nodes of the cluster about a change a domain keeps in memory
    /// (after it is committed); each applies it with the handler it registered for
    /// `topic`. Alone, a node has no one to tell. The event is sent in the order of
    /// the calls; if the bus refuses it (its queue is full) the other nodes learn the
    /// change at their next resynchronisation, and the failure is logged. The payload
    /// is built only in a cluster (positions call this on every update).
    public func replicate(topic: String, _ payload: @autoclosure () -> some ReplicaPayload) {
        guard broker.reachesOtherNodes else { return }
        broker.post(.domain(topic: topic, origin: uid, payload: payload().json)) { [logger] result in
            if case let .failure(error) = result {
                logger.error("cluster replication failed", metadata: ["topic": "\(topic)", "error": "\(error)"])
            }
        }
    }

    public var stats: NodeStats {
        let (clients, users, sessions) = registry.counts
        let channelCounts = channels()
        let uptime = ContinuousClock.now - startedAt
        return NodeStats(
            clients: clients, users: users, channels: channelCounts.count,
            subscriptions: channelCounts.values.reduce(0, +),
            queuedBytes: sessions.reduce(0) { $0 + $1.queue.pendingBytes },
            uptimeSeconds: Int(uptime.components.seconds))
    }

    // MARK: Lifecycle

    /// Refuses new connections and closes every connected one with 3001.
    public func shutdown() {
        for session in registry.shutDown() { session.close(.shutdown) }
    }

    /// Whether `shutdown` was called.
    public var isShuttingDown: Bool { registry.isShuttingDown }

    /// Sends pings, closes connections that stopped answering or whose token
    /// expired, and drops idle memory streams. Runs until cancelled.
    public func runMaintenance() async {
        let tick =
            [Duration.seconds(1), configuration.pingInterval / 4, configuration.pongTimeout / 4]
            .filter { $0 > .zero }.min() ?? .seconds(1)
        var lastSweep = ContinuousClock.now
        while !Task.isCancelled {
            try? await Task.sleep(for: tick)
            let now = ContinuousClock.now
            for session in registry.all { session.tick(now: now, date: Date()) }
            if now - lastSweep > .seconds(60) {
                broker.sweepIdleStreams(now: Date())
                lastSweep = now
            }
        }
    }
}

// MARK: The engine's view

/// What the engine hands the node: its deliveries, reconnects and reloads, and the figures
/// it asks for. Visible to the engines only (`@_spi(Engine)`), never to the domains.
@_spi(Engine) extension Node: EngineDelivery {
    public func deliver(_ event: ClusterEvent) { receive(event) }

    public func deliver(_ events: [ClusterEvent]) {
        guard events.count > 1 else { return events.forEach(receive) }
        OutboundQueue.deferringSignals { events.forEach(receive) }
    }

    /// Makes the subscribers of the channels `affected` accepts recover, as centrifuge does on
    /// an insufficient state: a subscription the client made ends with an unsubscribe of code
    /// 2500, after which the SDK subscribes again from its position; a connection with such a
    /// channel among its server-side subscriptions closes with 3010 and reconnects. Clients of
    /// other channels notice nothing.
    public func streamsInterrupted(where affected: @Sendable (String) -> Bool) {
        var resubscribed = 0
        var reconnected = 0
        for session in registry.all {
            switch subscriptions.recoverStreams(of: session, where: affected) {
            case .untouched: break
            case let .resubscribing(count): resubscribed += count
            case .reconnecting: reconnected += 1
            }
        }
        guard resubscribed + reconnected > 0 else { return }
        logger.notice(
            "subscribers asked to recover after a bus outage",
            metadata: ["subscriptions": "\(resubscribed)", "connections": "\(reconnected)"])
    }

    /// Runs every domain's reload: the engine receives the bus again (and at start).
    public func resynchronize() async { await replication.resynchronize() }

    /// The channel's subscribers on this node that are in its presence, by client id.
    public func localPresence(of channel: String) -> [String: ClientInfo] { table.presence(of: channel) }

    public func localPresenceStats(of channel: String) -> PresenceStats { table.presenceStats(of: channel) }

    public var registryEntry: ClusterNodeInfo { ClusterNodeInfo(uid: uid, name: configuration.nodeName, version: version, stats: stats) }
}
