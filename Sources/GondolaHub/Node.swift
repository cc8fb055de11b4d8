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
    public var configuration: HubConfiguration { currentConfiguration.value }
    private let currentConfiguration: SharedConfiguration
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
    private let providers = Mutex(Providers())
    /// Who installed each RPC method, namespace, channel and replica topic.
    private let claims: Mutex<NameClaims>
    /// The contracts of what was installed.
    private let contracts = Mutex(MethodCatalog())

    /// Namespaces and single channels handed to domain services.
    private struct Providers {
        typealias Entry = (options: NamespaceOptions, provider: any ChannelProvider)
        var namespaces: [String: Entry] = [:]
        var channels: [String: Entry] = [:]

        /// A provided channel first, else its provided namespace.
        func entry(for name: ChannelName) -> Entry? { channels[name.raw] ?? namespaces[name.namespace] }
    }

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
        self.currentConfiguration = shared
        self.tokens = tokens
        self.tracing = tracing
        self.proxy = proxy.map { BackendProxy(transport: $0, rpcRoutes: { shared.value.rpcProxies }, tracing: tracing, logger: logger) }
        self.cluster = cluster
        let alone = MemoryBroker(durableHistory: durableHistory)
        self.broker = cluster ?? alone
        self.presenceManager = cluster ?? alone
        self.metrics = HubMetrics(factory: metricsFactory)
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
        providers.withLock { providers in
            for entry in registrations.provided {
                switch entry.provision {
                case let .namespace(name): providers.namespaces[name] = (entry.options, entry.provider)
                case let .channel(name): providers.channels[name] = (entry.options, entry.provider)
                }
            }
        }
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
            removeSubscriberInBackground(session, from: channel)
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
    func provider(of name: ChannelName) -> (any ChannelProvider)? {
        providers.withLock { $0.entry(for: name)?.provider }
    }

    /// `raw` checked as a channel name under this node's `channel_max_length`.
    public func channelName(_ raw: String) throws(HubError) -> ChannelName {
        try ChannelName(raw, maxBytes: configuration.channelMaxLength)
    }

    /// Validates a channel name and finds its namespace's options.
    public func resolve(_ channel: String) throws(HubError) -> (ChannelName, NamespaceOptions) {
        let name = try channelName(channel)
        if let provided = providers.withLock({ $0.entry(for: name)?.options }) { return (name, provided) }
        guard let options = configuration.namespace(name.namespace) else { throw .unknownChannel(channel) }
        return (name, options)
    }

    /// Puts `newer` in force (a configuration reload): connections keep going, new commands
    /// follow its namespaces and limits, and every subscription its namespaces no longer
    /// allow is ended with the unsubscribe code 2000, as a server unsubscribe. The node's
    /// name stays. Answers how many subscriptions were ended.
    @discardableResult
    public func reconfigure(_ newer: HubConfiguration) -> Int {
        currentConfiguration.replace(with: newer)
        return registry.all.reduce(0) { $0 + $1.endDisallowedSubscriptions() }
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

    /// Starts a subscription of `session` to `channel`: from here on what the channel
    /// delivers is kept for it until `completeSubscription` sends its reply, so a
    /// provider may publish right after it called this and the subscriber gets it after
    /// the reply's snapshot.
    func beginSubscription(_ session: ClientSession, to channel: String) {
        table.beginPending(session, on: channel)
    }

    /// Completes what `beginSubscription` started: `prepareSubscription`, then
    /// `activateSubscription` queuing the subscribe reply. On failure the subscription
    /// is undone and nothing was sent.
    func completeSubscription(
        _ session: ClientSession, replyID: UInt32, request: SubscribeRequest, options: NamespaceOptions,
        info: ClientInfo, data: RawJSON? = nil, expiresIn ttl: UInt32? = nil
    ) async throws(HubError) {
        let prepared = try await prepareSubscription(session, request: request, options: options, info: info, data: data, expiresIn: ttl)
        try await activateSubscription(prepared, of: session) { result in session.queue.enqueue(Reply(id: replyID, .subscribe(result))) }
    }

    /// A subscription whose presence is recorded and whose stream position is read, not yet live.
    struct PreparedSubscription {
        let channel: String
        let result: SubscribeResult
        let info: ClientInfo
        let options: NamespaceOptions
        /// The subscriber gets join and leave pushes.
        let hearsJoinLeave: Bool
        /// Only publications whose tags match it reach the subscriber.
        let tagsFilter: TagsFilter?
    }

    /// Records presence and reads the stream's position (and the publications to
    /// recover) of a subscription `beginSubscription` started, holding no lock; both reads
    /// may wait on the engine, no thread does. On failure the subscription is undone.
    func prepareSubscription(
        _ session: ClientSession, request: SubscribeRequest, options: NamespaceOptions, info: ClientInfo,
        data: RawJSON? = nil, expiresIn ttl: UInt32? = nil
    ) async throws(HubError) -> PreparedSubscription {
        let channel = request.channel
        var presenceAdded = false
        do throws(HubError) {
            // Presence is recorded before the reply, so that a presence call anywhere after
            // the client saw its reply lists it.
            if options.presence {
                try await presenceManager.addPresence(channel: channel, info: info)
                presenceAdded = true
            }
            var result = SubscribeResult()
            if options.keepsHistory { result = try await streamState(for: request, options: options) }
            result.data = data
            if let ttl {
                result.expires = true
                result.ttl = ttl
            }
            result.delta = DeltaType(rawValue: request.delta).map(options.allowedDeltaTypes.contains) ?? false
            // Recovered publications come whole; a JSON delta subscription takes data as text.
            if result.delta, session.encoding == .json { result.publications = result.publications.map(\.withDataAsText) }
            if let filter = request.tagsFilter { result.publications = result.publications.filter { filter.matches($0.tags) } }
            return PreparedSubscription(
                channel: channel, result: result, info: info, options: options,
                hearsJoinLeave: request.joinLeave || options.forcePushJoinLeave, tagsFilter: request.tagsFilter)
        } catch {
            abandonSubscription(session, to: channel)
            if presenceAdded { try? await presenceManager.removePresence(channel: channel, client: info.client) }
            throw error
        }
    }

    /// Makes a prepared subscription live: under the channel's lock `sendReply` queues what
    /// answers it (a subscribe reply; nothing when the caller already sent the connect reply
    /// that carries it), then what the channel delivered since the subscription began and
    /// the reply does not cover, and the subscriber starts receiving. On failure (more
    /// publications arrived meanwhile than `ChannelState.pendingLimit`) nothing of it was
    /// sent and its presence is removed.
    func activateSubscription(
        _ prepared: PreparedSubscription, of session: ClientSession,
        sendReply: (SubscribeResult) -> Void
    ) async throws(HubError) {
        let channel = prepared.channel
        let options = prepared.options
        let reply = prepared.result
        do throws(HubError) {
            try table.withChannel(channel, create: true) { (state) throws(HubError) in
                guard let pending = state.takePending(session.id) else {
                    throw .internalError("the subscription to \(channel) ended while it was set up")
                }
                guard !pending.overflowed else {
                    throw .internalError(
                        "more than \(ChannelState.pendingLimit) publications arrived on \(channel) while the subscription was set up")
                }
                sendReply(reply)
                let covered = options.keepsHistory ? reply.offset : 0
                var floor = covered
                for publication in pending.publications where publication.offset == 0 || publication.offset > covered {
                    floor = max(floor, publication.offset)
                    if let filter = prepared.tagsFilter, !filter.matches(publication.tags) { continue }
                    let sent = reply.delta && session.encoding == .json ? publication.withDataAsText : publication
                    session.queue.enqueue(Push(channel: channel, .publication(sent)))
                }
                // The broker may still deliver publications up to the offset the subscriber has.
                state.add(
                    .init(
                        session: session, info: prepared.info, joinLeave: prepared.hearsJoinLeave, delta: reply.delta,
                        tagsFilter: prepared.tagsFilter, presence: options.presence, announcesJoinLeave: options.joinLeave),
                    floor: options.keepsHistory ? floor : nil)
            }
        } catch {
            abandonSubscription(session, to: channel)
            if options.presence { try? await presenceManager.removePresence(channel: channel, client: prepared.info.client) }
            throw error
        }
        if options.joinLeave { announce(.join(channel: channel, prepared.info)) }
    }

    /// Undoes a `beginSubscription` that will not be completed.
    func abandonSubscription(_ session: ClientSession, to channel: String) {
        let vacated = table.abandonPending(session, on: channel)
        if vacated, let name = try? channelName(channel) { provider(of: name)?.vacated(channel: name) }
    }

    /// Sends a join or leave to every node without waiting; a refusal is logged (the
    /// subscription itself stands).
    private func announce(_ event: ClusterEvent) {
        broker.post(event) { [logger] result in
            if case let .failure(error) = result {
                logger.warning("join/leave not sent", metadata: ["event": "\(event)", "error": "\(error)"])
            }
        }
    }

    /// The stream part of a subscribe reply: position, and the recovery when asked.
    private func streamState(for request: SubscribeRequest, options: NamespaceOptions) async throws(HubError) -> SubscribeResult {
        var result = SubscribeResult()
        let recoverable = request.recoverable || request.recover || options.forceRecovery
        result.recoverable = recoverable
        result.positioned = recoverable || request.positioned || options.forcePositioning
        let limit = configuration.maxHistoryPerRequest
        let slice = try await read(
            request.channel, after: request.recover ? request.offset : nil, limit: request.recover ? limit + 1 : 0, reverse: false, options: options)
        result.epoch = slice.position.epoch
        result.offset = slice.position.offset
        guard request.recover else { return result }
        result.wasRecovering = true
        let top = slice.position.offset
        let missed = top >= request.offset ? top - request.offset : UInt64.max
        // An empty epoch asks for whatever the stream still holds after the offset.
        let sameStream = request.epoch.isEmpty || request.epoch == slice.position.epoch
        let complete = sameStream && missed <= UInt64(limit) && UInt64(slice.publications.count) == missed
        if complete {
            result.recovered = true
            result.publications = slice.publications
        } else if request.flag & SubscribeRequest.rejectUnrecoveredFlag != 0 {
            throw .unrecoverablePosition
        }
        return result
    }

    private func read(_ channel: String, after: UInt64?, limit: Int, reverse: Bool, options: NamespaceOptions) async throws(HubError) -> StreamSlice {
        do {
            if let store = ownStore(of: options) {
                return try await store.read(channel: channel, after: after, limit: limit, reverse: reverse, options: options, now: Date())
            }
            return try await broker.history(channel: channel, after: after, limit: limit, reverse: reverse, options: options)
        } catch {
            logger.error("history read failed", metadata: ["channel": "\(channel)", "error": "\(error)"])
            throw .internalError("history read failed: \(error)")
        }
    }

    /// Removes a subscriber; its channel's join-leave listeners get a leave, and
    /// the namespace's provider hears when the channel is left empty.
    func removeSubscriber(_ session: ClientSession, from channel: String) async {
        guard let removal = removeLocally(session, from: channel) else { return }
        await finish(removal)
    }

    /// `removeSubscriber` for callers that cannot wait (a connection that closed, a
    /// server-side unsubscribe): the subscriber stops receiving at once; the presence
    /// entry (which may take a database round trip) is removed by a task of its own.
    func removeSubscriberInBackground(_ session: ClientSession, from channel: String) {
        guard let removal = removeLocally(session, from: channel) else { return }
        if removal.presence {
            Task { await finish(removal) }
        } else {
            finish(withoutPresence: removal)
        }
    }

    /// A subscriber removed from this node whose presence and leave are still to be done.
    private struct Removal {
        let channel: String
        let info: ClientInfo
        let presence: Bool
        let announcesLeave: Bool
    }

    /// Takes the subscriber out of the channel's state (telling the provider when that
    /// left the channel empty).
    private func removeLocally(_ session: ClientSession, from channel: String) -> Removal? {
        guard let name = try? channelName(channel) else { return nil }
        let (removed, vacated) = table.remove(session, from: channel)
        if vacated { provider(of: name)?.vacated(channel: name) }
        return removed.map { Removal(channel: channel, info: $0.info, presence: $0.presence, announcesLeave: $0.announcesJoinLeave) }
    }

    private func finish(_ removal: Removal) async {
        if removal.presence {
            do throws(HubError) {
                try await presenceManager.removePresence(channel: removal.channel, client: removal.info.client)
            } catch {
                logger.warning("presence removal failed", metadata: ["channel": "\(removal.channel)", "error": "\(error)"])
            }
        }
        finish(withoutPresence: removal)
    }

    private func finish(withoutPresence removal: Removal) {
        if removal.announcesLeave { announce(.leave(channel: removal.channel, removal.info)) }
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
        var options: NamespaceOptions
        do {
            options = try publishableNamespace(of: channel)
        } catch {
            return completion(.failure(error))
        }
        if publishing.skipHistory { options.historySize = 0 }
        if publishing.version > 0, !options.keepsHistory {
            let namespace = options.name.isEmpty ? "the default namespace" : "namespace '\(options.name)'"
            let reason = publishing.skipHistory ? "skip_history leaves it out" : "\(namespace) keeps no history"
            return completion(.failure(.badRequest("version needs the channel's stream: \(reason)")))
        }
        var publication = Publication(data: data, info: info, tags: tags, useDelta: publishing.delta || options.deltaPublish)
        // Traced, the publication carries its span's context to the nodes that deliver it.
        let span = tracing.start("publish", kind: .producer, attributes: ["messaging.destination.name": .string(channel)])
        if let span { publication.traceParent = tracing.traceParent(of: span.context) }
        // A store that failed is logged here, once for every path; refusals are the caller's to report.
        let answer: @Sendable (Result<StreamPosition?, HubError>) -> Void = { [logger] result in
            switch result {
            case let .failure(.internalError(reason)), let .failure(.unavailable(reason)):
                logger.error("publish failed", metadata: ["channel": "\(channel)", "error": "\(reason)"])
            default: break
            }
            if let span {
                if case let .failure(error) = result { HubTracing.fail(span, "\(error)") }
                if case let .success(position?) = result { span.attributes["gondola.offset"] = Int64(clamping: position.offset) }
                span.end()
            }
            completion(result)
        }
        broker.publish(publication, to: channel, options: options, publishing: publishing, completion: answer)
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

    /// The namespace of a channel `publish` may write to: any but those whose provider
    /// keeps the streams itself (its domain writes them and delivers with `deliver`).
    private func publishableNamespace(of channel: String) throws(HubError) -> NamespaceOptions {
        let (_, options) = try resolve(channel)
        if ownStore(of: options) != nil {
            throw .notAvailable("the streams of namespace '\(options.name)' are written by its domain, not by publish")
        }
        return options
    }

    /// Publishes to this node's subscribers only, for channels without a stream
    /// whose publications every node of a cluster computes for its own subscribers
    /// (the travel domain's position frames, computed from each node's whole live
    /// map). `channel` belongs to `namespace`, which the caller provides; the caller
    /// built the name itself, so it is not parsed again.
    public func publishLocally(channel: String, providedIn namespace: NamespaceOptions, data: RawJSON) {
        precondition(!namespace.keepsHistory, "\(namespace.name) keeps a stream")
        fanOut(Publication(data: Payload(data), info: nil, useDelta: namespace.deltaPublish), on: channel)
    }

    /// The store of a provided namespace that keeps its own streams.
    private func ownStore(of options: NamespaceOptions) -> (any HistoryStore)? {
        providers.withLock { $0.namespaces[options.name]?.provider.historyStore }
    }

    /// Sends a publication that the namespace's own store has already written (its
    /// offset set) to the channel's subscribers. Under the channel's lock
    /// `whileLocked` runs first — the store makes the publication readable there — so
    /// a subscriber recovering at the same time gets it either from the store or
    /// live, never both and never neither. For providers that write in batches.
    public func deliver(channel: String, publication: Publication, whileLocked: () -> Void) {
        metrics.publications.increment()
        count(sent: table.deliver(publication, on: channel, whileLocked: whileLocked))
    }

    /// Sends a publication to the subscribers the channel has on this node, if any; answers
    /// the messages queued.
    @discardableResult
    private func fanOut(_ publication: Publication, on channel: String) -> Int {
        metrics.publications.increment()
        let sent = table.fanOut(publication, on: channel)
        count(sent: sent)
        return sent
    }

    /// `fanOut` in a span continuing the publisher's trace, when the publication carries one.
    private func deliver(_ publication: Publication, on channel: String) {
        guard let traceParent = publication.traceParent, tracing.isOn else {
            fanOut(publication, on: channel)
            return
        }
        let span = tracing.start(
            "deliver", kind: .consumer, parent: tracing.context(traceParent: traceParent),
            attributes: ["messaging.destination.name": .string(channel), "gondola.node": .string(configuration.nodeName)])
        span?.attributes["gondola.messages_sent"] = fanOut(publication, on: channel)
        span?.end()
    }

    private func count(sent messages: Int) {
        if messages > 0 { metrics.messagesOut.increment(by: Int64(messages)) }
    }

    /// A channel's stream: `limit` publications after `since` (0 gives only the position).
    public func history(channel: String, limit: Int, since: StreamPosition?, reverse: Bool) async throws(HubError) -> HistoryResult {
        let (_, options) = try resolve(channel)
        guard options.keepsHistory else { throw .notAvailable("namespace of \(channel) keeps no history") }
        let capped = limit < 0 ? configuration.maxHistoryPerRequest : min(limit, configuration.maxHistoryPerRequest)
        // A stream read is a consistent snapshot of its own; it takes no channel's lock.
        let slice = try await read(channel, after: reverse ? nil : since?.offset, limit: capped, reverse: reverse, options: options)
        if let since, !reverse, since.epoch != slice.position.epoch { throw .unrecoverablePosition }
        var publications = slice.publications
        if reverse, let since { publications = publications.filter { $0.offset < since.offset } }
        return HistoryResult(publications: publications, epoch: slice.position.epoch, offset: slice.position.offset)
    }

    /// Drops a channel's retained publications.
    public func removeHistory(channel: String) async throws(HubError) {
        let (_, options) = try resolve(channel)
        guard options.keepsHistory else { throw .notAvailable("namespace of \(channel) keeps no history") }
        do {
            if let store = ownStore(of: options) {
                try await store.removeHistory(channel: channel)
            } else {
                try await broker.removeHistory(channel: channel, options: options)
            }
        } catch let refused as HubError {
            throw refused
        } catch {
            throw .internalError("history remove failed: \(error)")
        }
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
            deliver(publication, on: channel)
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
                Task { await session.serverSubscribe(channel, subscription) }
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
            default: replication.apply(topic: topic, payload)
            }
        case let .regional(region, topic, origin, payload):
            guard origin != uid else { return }
            switch replication.apply(topic: topic, region: region, payload) {
            case .applied: metrics.regionalApplied.increment()
            case .dropped: metrics.regionalDropped.increment()
            }
        }
    }

    /// Tells the nodes following `region` about a change a domain keeps in memory
    /// (a traveller's position): like `replicate(topic:_:)`, but a node applies it only
    /// while it follows the region (`follow(regions:)`), and an engine that routes by
    /// region does not even bring it to the others.
    public func replicate(topic: String, region: String, _ payload: @autoclosure () -> JSON) {
        guard broker.reachesOtherNodes else { return }
        broker.post(.regional(region: region, topic: topic, origin: uid, payload: payload())) { [logger] result in
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
    public func replicate(topic: String, _ payload: @autoclosure () -> JSON) {
        guard broker.reachesOtherNodes else { return }
        broker.post(.domain(topic: topic, origin: uid, payload: payload())) { [logger] result in
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
            switch session.recoverStreams(where: affected) {
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

/// The node's configuration, shared with what reads it live (the backend proxy's RPC routes).
final class SharedConfiguration: Sendable {
    private let current: Mutex<HubConfiguration>

    init(_ configuration: HubConfiguration) { current = Mutex(configuration) }

    var value: HubConfiguration { current.withLock { $0 } }

    /// Puts `newer` in force, keeping the node's name.
    func replace(with newer: HubConfiguration) {
        current.withLock { current in
            let name = current.nodeName
            current = newer
            current.nodeName = name
        }
    }
}
