import Foundation
import GondolaProtocol
import Synchronization
import Tracing

/// One client connection's protocol state: authentication, subscriptions, rate
/// limit, keepalive. The transport feeds it frames with `handle(frame:)` (one at a
/// time, in order) and writes what its `queue` yields, in the connection's encoding.
public final class ClientSession: Sendable {
    /// The client id sent in the connect reply.
    public let id: String
    /// What the transport writes to the socket.
    public let queue: OutboundQueue
    let node: Node
    /// The upgrade request's headers that go with proxy requests.
    private let forwardedHeaders: [(name: String, value: String)]
    /// How the connection carries the protocol.
    public let transport: SessionTransport
    /// The secret that addresses this session in `/emulation` requests (the connect
    /// result's `session`); empty on a WebSocket.
    public let key: String

    struct State {
        var credentials: Credentials?
        var subscriptions: Set<String> = []
        var pendingSubscriptions: Set<String> = []
        /// What the subscription tokens of subscribed channels granted (their expiry and `chan_info`).
        var grants: [String: SubscriptionGrant] = [:]
        /// Channels subscribed only because their namespace lets clients subscribe (no token,
        /// proxy or server granted them): a reload that closes the namespace ends them.
        var openedByNamespaceRule: Set<String> = []
        /// Channels the server subscribed the connection to (its token's or proxy's `subs`, its
        /// personal channel, the server API): the client cannot subscribe to them again itself.
        var serverSide: Set<String> = []
        /// The connection's end is prolonged by the refresh proxy, not by the client.
        var refreshedByProxy = false
        /// Proxy refreshes under way: the connection's (nil key) and subscriptions'.
        var proxyRefreshing: Set<String?> = []
        /// The headers of the connection's proxy requests: the `connect`'s emulated ones that
        /// `proxy_emulated_headers` lets through, then the upgrade's forwarded ones.
        var proxyHeaders: [(name: String, value: String)]
        var closed = false
        let openedAt: ContinuousClock.Instant
        var lastSeen: ContinuousClock.Instant
        /// Whether the transport stopped reading the client (its messages wait for the session):
        /// silence then is the server's, and no pong deadline runs.
        var inputHeld = false
        var pingSentAt: ContinuousClock.Instant?
        var nextPingAt: ContinuousClock.Instant
        var bucket: TokenBucket
        var rejectedInARow = 0
        var consecutiveErrors = 0

        /// Forgets the subscription to `channel` and what came with it; answers whether there was one.
        mutating func forget(_ channel: String) -> Bool {
            grants[channel] = nil
            openedByNamespaceRule.remove(channel)
            serverSide.remove(channel)
            return subscriptions.remove(channel) != nil
        }
    }

    /// Everything that changes, behind one lock; the session's parts (`ClientSession*.swift`)
    /// take it for the steps of one decision and no I/O.
    let state: Mutex<State>

    init(
        node: Node, encoding: ProtocolEncoding, transport: SessionTransport = .bidirectional, forwardedHeaders: [(name: String, value: String)] = []
    ) {
        self.node = node
        self.forwardedHeaders = forwardedHeaders
        self.transport = transport
        self.key = transport == .bidirectional ? "" : RandomID.make("", hexDigits: 32)
        self.id = UUID().uuidString.lowercased()
        let configuration = node.configuration
        self.queue = OutboundQueue(
            maxBytes: configuration.clientQueueMaxBytes, maxFrameBytes: configuration.maxOutboundFrameBytes, encoding: encoding,
            unidirectional: transport == .unidirectional)
        let now = ContinuousClock.now
        self.state = Mutex(
            State(
                proxyHeaders: forwardedHeaders, openedAt: now, lastSeen: now, nextPingAt: now + configuration.pingInterval,
                bucket: TokenBucket(rate: configuration.commandRate, burst: configuration.commandBurst, now: now)))
    }

    /// The authenticated user, once `connect` succeeded.
    public var user: String? { state.withLock { $0.credentials?.user } }

    /// Channels this connection is subscribed to.
    public var subscriptions: Set<String> { state.withLock { $0.subscriptions } }

    public var isClosed: Bool { state.withLock { $0.closed } }

    /// The encoding the connection speaks, chosen in its handshake.
    public var encoding: ProtocolEncoding { queue.encoding }

    /// The client as `channel`'s subscribers see it: with the `chan_info` its subscription token gave.
    func clientInfo(on channel: String) -> ClientInfo {
        clientInfo(chanInfo: state.withLock { $0.grants[channel]?.info })
    }

    func clientInfo(chanInfo: RawJSON?) -> ClientInfo {
        let credentials = state.withLock { $0.credentials }
        return ClientInfo(user: credentials?.user ?? "", client: id, connInfo: credentials?.info, chanInfo: chanInfo)
    }

    // MARK: Input

    /// Handles one frame of the connection's encoding: one or more commands. A
    /// frame that breaks the protocol closes the connection with 3501 once the
    /// commands before the broken one have run (none when the framing itself is broken).
    /// `receivedAt` is when the frame arrived, on the keepalive's clock (`tick(now:date:)`); nil
    /// when the transport already said so with `heard(at:)` as it arrived.
    public func handle(frame: some Collection<UInt8>, receivedAt: ContinuousClock.Instant? = .now) async {
        if let receivedAt { heard(at: receivedAt) }
        let commands: [DecodedCommand]
        do {
            commands = try encoding.commands(in: frame)
        } catch {
            return closeForBadRequest(error.message)
        }
        for decoded in commands {
            guard !isClosed else { return }
            switch decoded {
            case let .command(command):
                await handle(command)
            case let .refused(id, error):
                guard state.withLock({ $0.credentials != nil }) else {
                    return closeForBadRequest("first command refused: \(error.message)")
                }
                if id > 0 { reply(Reply(id: id, .error(error))) }
            case let .malformed(error):
                return closeForBadRequest(error.message)
            }
        }
    }

    /// A frame of the other kind (binary on a JSON connection: 3506; text on a
    /// Protobuf connection: 3501).
    public func handleFrameOfWrongKind() {
        switch encoding {
        case .json:
            close(DisconnectCode.inappropriateProtocol.with(reason: "inappropriate protocol: binary frame on a JSON connection"))
        case .protobuf:
            closeForBadRequest("text frame on a Protobuf connection")
        }
    }

    /// A frame larger than the transport accepts: closed with 3501.
    public func handleOversizedFrame(bytes: Int, limit: Int) {
        closeForBadRequest("frame of \(bytes) bytes exceeds max_frame_bytes \(limit)")
    }

    /// Connects a unidirectional connection with the connect request its transport read
    /// (the client sends nothing else): the result arrives as a connect push, and an error
    /// closes the connection with the disconnect Centrifugo gives it (3005 for an expired
    /// token, 3013 for too many requests, 3507 for permission denied, else 3004). `trusted`
    /// credentials, which the server made itself (the admin page's), take the token's place.
    public func connect(unidirectional request: ConnectRequest, as trusted: Credentials? = nil) async {
        state.withLock { $0.lastSeen = .now }
        node.metrics.commands.increment()
        let command = Command(id: 0, .connect(request))
        do {
            try await connect(id: 0, request, as: trusted)
        } catch let disconnect as DisconnectCode {
            logRefusal(command, code: Int(disconnect.code), reason: disconnect.reason)
            close(disconnect)
        } catch let error as HubError {
            logRefusal(command, code: Int(error.protocolError.code), reason: error.protocolError.message)
            close(Self.unidirectionalDisconnect(for: error.protocolError))
        } catch {
            logRefusal(command, code: Int(DisconnectCode.internalError.code), reason: "\(error)")
            close(.internalError)
        }
    }

    private func handle(_ command: Command) async {
        let connected = state.withLock { $0.credentials != nil }
        if case .pong = command.method { return }
        if !connected {
            guard case .connect = command.method else {
                return closeForBadRequest("first command must be connect, got \(command.methodName)")
            }
        }
        node.metrics.commands.increment()
        // A command about a channel names one: centrifuge closes the connection otherwise.
        if let channel = command.channel, channel.isEmpty {
            return closeForBadRequest("channel required for \(command.methodName)")
        }
        guard admit(command) else { return }
        do {
            try await traced(command)
            state.withLock { $0.consecutiveErrors = 0 }
        } catch let disconnect as DisconnectCode {
            logRefusal(command, code: Int(disconnect.code), reason: disconnect.reason)
            close(disconnect)
        } catch let error as HubError {
            let refusal = error.protocolError
            logRefusal(command, code: Int(refusal.code), reason: refusal.message)
            reply(Reply(id: command.id, .error(refusal)))
        } catch {
            logRefusal(command, code: Int(ProtocolError.internalError.code), reason: "\(error)")
            reply(Reply(id: command.id, .error(.internalError)))
        }
    }

    /// `execute` in a span when the node traces and the command does work worth one
    /// (`HubTracing.span(of:client:)`).
    private func traced(_ command: Command) async throws {
        guard node.tracing.isOn, let (name, attributes) = HubTracing.span(of: command, client: id) else { return try await execute(command) }
        try await node.tracing.span(name, kind: .server, parent: .topLevel, attributes: attributes) { _ in try await execute(command) }
    }

    /// Applies the command rate limit: a command over it gets 111; a client that
    /// keeps going for another burst's worth of commands is closed with 3013.
    private func admit(_ command: Command) -> Bool {
        let (allowed, overLimit) = state.withLock { state -> (Bool, Bool) in
            if state.bucket.take(now: .now) {
                state.rejectedInARow = 0
                return (true, false)
            }
            state.rejectedInARow += 1
            return (false, Double(state.rejectedInARow) > state.bucket.burst)
        }
        if overLimit {
            close(.tooManyRequests)
        } else if !allowed, command.id > 0 {
            node.metrics.error(ProtocolError.tooManyRequests.code)
            queue.enqueue(Reply(id: command.id, .error(.tooManyRequests)))
        }
        return allowed
    }

    /// Queues a reply; an error that is the client's own counts toward
    /// `max_consecutive_errors` (3509 at the limit). A temporary error — the server's fault
    /// (its engine or storage failing) or the rate limit's — is never counted, so an outage
    /// does not close the clients it makes fail.
    private func reply(_ reply: Reply) {
        if case let .error(error) = reply.body {
            node.metrics.error(error.code)
            guard !error.temporary else {
                queue.enqueue(reply)
                return
            }
            let tooMany = state.withLock { state in
                state.consecutiveErrors += 1
                return state.consecutiveErrors >= node.configuration.maxConsecutiveErrors
            }
            if tooMany {
                queue.enqueue(reply)
                close(.tooManyErrors)
                return
            }
        }
        queue.enqueue(reply)
    }

    // MARK: Commands

    private func execute(_ command: Command) async throws {
        switch command.method {
        case let .connect(request): try await connect(id: command.id, request)
        case let .subscribe(request):
            try await node.subscriptions.subscribe(self, request) { result in queue.enqueue(Reply(id: command.id, .subscribe(result))) }
        case let .unsubscribe(channel):
            _ = try node.channelName(channel)
            await unsubscribeLocally(channel)
            reply(Reply(id: command.id, .unsubscribe))
        case let .publish(channel, data):
            try await node.publish(from: self, channel: channel, data: data)
            reply(Reply(id: command.id, .publish))
        case let .presence(channel):
            reply(Reply(id: command.id, .presence(try await node.presence(for: self, channel: channel))))
        case let .presenceStats(channel):
            reply(Reply(id: command.id, .presenceStats(try await node.presenceStats(for: self, channel: channel))))
        case let .history(request):
            reply(Reply(id: command.id, .history(try await node.history(for: self, request))))
        case .ping:
            reply(Reply(id: command.id, .ping))
        // Without a proxy, a call costs no extra lookup.
        case let .rpc(method, data) where node.proxy?.rpcRoute(method) != nil && !node.rpc.serves(method):
            guard let proxy = node.proxy, let route = proxy.rpcRoute(method) else { throw HubError.methodNotFound(method) }
            reply(Reply(id: command.id, .rpc(data: try await proxy.rpc(method, data, route: route, as: proxyCaller(user: user ?? "")))))
        case let .rpc(method, data):
            try await node.call(method, data, from: self) { [weak self] result in self?.reply(Reply(id: command.id, .rpc(data: result))) }
        case let .send(data):
            // An asynchronous message reaches the domains only from a user.
            guard let user, !user.isEmpty else { break }
            await node.handleMessage(RPCContext(user: user, client: id), data)
        case let .refresh(token):
            try await refresh(id: command.id, token: token)
        case let .subRefresh(channel, token):
            try await refreshSubscription(id: command.id, channel: channel, token: token)
        case .pong:
            break
        }
    }

    private func connect(id replyID: UInt32, _ request: ConnectRequest, as trusted: Credentials? = nil) async throws {
        guard state.withLock({ $0.credentials == nil }) else {
            throw DisconnectCode.badRequest.with(reason: "bad request: already connected")
        }
        let credentials: Credentials
        var connectData: RawJSON?
        if let headers = BackendProxy.headers(
            emulated: request.headers, allowed: node.configuration.proxyEmulatedHeaders, forwarded: forwardedHeaders)
        {
            state.withLock { $0.proxyHeaders = headers }
        }
        if let trusted {
            credentials = trusted
        } else if request.token.isEmpty, let proxy = node.proxy, proxy.route(.connect) != nil {
            (credentials, connectData) = try await proxy.connect(request, as: proxyCaller(user: ""))
            if proxy.route(.refresh) != nil { state.withLock { $0.refreshedByProxy = true } }
        } else if request.token.isEmpty {
            // No token, no proxy and no anonymous connections: centrifuge closes with 3501.
            guard node.configuration.allowAnonymousConnectWithoutToken else {
                throw DisconnectCode.badRequest.with(reason: "bad request: client credentials not found (connect needs a token)")
            }
            credentials = Credentials(user: "")
        } else {
            credentials = try await verify(request.token)
        }
        for channel in credentials.subscriptions.keys {
            do throws(HubError) {
                _ = try node.resolve(channel)
            } catch {
                throw DisconnectCode.invalidToken.with(reason: "invalid token: its channel \(channel): \(error.protocolError.message)")
            }
        }
        state.withLock { $0.credentials = credentials }
        switch node.register(self, user: credentials.user) {
        case .registered: break
        case .shuttingDown: throw DisconnectCode.shutdown
        case let .userLimitReached(limit):
            throw DisconnectCode.connectionLimit.with(reason: "connection limit: client_user_connection_limit (\(limit)) reached")
        }
        // Domains hear of users, not of anonymous connections.
        if !credentials.user.isEmpty { await node.connected(credentials) }
        let configuration = node.configuration
        var result = ConnectResult(client: id, version: node.version, node: node.uid)
        result.session = key
        result.data = connectData
        if configuration.pingInterval > .zero {
            result.ping = UInt32(max(1, configuration.pingInterval.components.seconds))
            result.pong = transport != .unidirectional
        }
        if !state.withLock({ $0.refreshedByProxy }), let ttl = Self.ttl(until: credentials.expiresAt) {
            result.expires = true
            result.ttl = ttl
        }
        try await node.subscriptions.subscribeServerSide(self, credentials, recovering: request.subs) { subscriptions in
            result.subs = subscriptions
            if transport == .unidirectional {
                queue.enqueue(Push(channel: "", .connect(result)))
            } else {
                reply(Reply(id: replyID, .connect(result)))
            }
        }
        if configuration.userPersonalSingleConnection, !credentials.user.isEmpty {
            node.keepSingleConnection(of: credentials.user, client: id)
        }
    }

    private func refresh(id replyID: UInt32, token: String) async throws {
        guard !token.isEmpty else { throw DisconnectCode.badRequest.with(reason: "bad request: client token required to refresh") }
        let credentials = try await verify(token)
        let sameUser = state.withLock { state -> Bool in
            guard state.credentials?.user == credentials.user else { return false }
            state.credentials?.expiresAt = credentials.expiresAt
            return true
        }
        guard sameUser else {
            throw DisconnectCode.invalidToken.with(reason: "invalid token: refresh token is for another user")
        }
        let ttl = Self.ttl(until: credentials.expiresAt)
        reply(Reply(id: replyID, .refresh(RefreshResult(client: id, version: node.version, expires: ttl != nil, ttl: ttl ?? 0))))
    }

    private func verify(_ token: String) async throws -> Credentials {
        do {
            return try await node.tokens.verify(token)
        } catch .expired {
            throw HubError.tokenExpired
        } catch let .keyUnavailable(reason) {
            node.logger.info("connection token waits for its key", metadata: ["client": "\(id)", "reason": "\(reason)"])
            throw HubError.internalError(reason)
        } catch let .invalid(reason) {
            throw DisconnectCode.invalidToken.with(reason: "invalid token: \(reason)")
        }
    }

    /// `sub_refresh`: a new token for a subscription that a token granted, before it expires.
    private func refreshSubscription(id replyID: UInt32, channel: String, token: String) async throws {
        guard state.withLock({ $0.subscriptions.contains(channel) }) else {
            throw HubError.permissionDenied("sub_refresh needs a subscription to \(channel)")
        }
        guard !token.isEmpty else { throw HubError.badRequest("sub_refresh.token is required") }
        let grant = try await node.subscriptions.grant(token, channel: channel, for: self)
        state.withLock { state in
            guard state.subscriptions.contains(channel) else { return }
            state.grants[channel] = grant
        }
        let ttl = Self.ttl(until: grant.expiresAt)
        reply(Reply(id: replyID, .subRefresh(SubRefreshResult(expires: ttl != nil, ttl: ttl ?? 0))))
    }

    /// Seconds from now until `expiry` (at least 1), nil without one: a reply's `ttl`.
    static func ttl(until expiry: Date?) -> UInt32? {
        guard let expiry else { return nil }
        return UInt32(max(1, min(Double(UInt32.max), expiry.timeIntervalSinceNow.rounded(.down))))
    }

    // MARK: Subscription state

    /// Holds `channel` for a subscription being set up (it counts against
    /// `max_channels_per_client` from here); refused when the connection has it already or
    /// is at its limit.
    func reserve(_ channel: String) throws(HubError) {
        let limit = node.configuration.maxChannelsPerClient
        try state.withLock { state throws(HubError) in
            guard !state.subscriptions.contains(channel), !state.pendingSubscriptions.contains(channel) else {
                throw .alreadySubscribed(channel)
            }
            guard state.subscriptions.count + state.pendingSubscriptions.count < limit else {
                throw .limitExceeded("at most \(limit) channels per connection")
            }
            state.pendingSubscriptions.insert(channel)
        }
    }

    /// Lets go of a channel `reserve` held.
    func release(_ channel: String) {
        state.withLock { _ = $0.pendingSubscriptions.remove(channel) }
    }

    /// Records a subscription going live, with what granted it (a token or proxy's `grant`; the
    /// namespace's rule; the server); false when the connection closed meanwhile.
    func markLive(_ channel: String, grant: SubscriptionGrant?, byNamespaceRule: Bool, serverSide: Bool) -> Bool {
        state.withLock { state in
            guard !state.closed else { return false }
            state.subscriptions.insert(channel)
            state.grants[channel] = grant
            if byNamespaceRule { state.openedByNamespaceRule.insert(channel) }
            if serverSide { state.serverSide.insert(channel) }
            return true
        }
    }

    /// The live subscriptions, those only a namespace rule opened, and the server's.
    var subscriptionOrigins: (all: Set<String>, byNamespaceRule: Set<String>, serverSide: Set<String>) {
        state.withLock { ($0.subscriptions, $0.openedByNamespaceRule, $0.serverSide) }
    }

    // MARK: Proxy

    /// Who this client is, for a proxy request.
    func proxyCaller(user: String) -> BackendProxy.Caller {
        let (meta, headers) = state.withLock { ($0.credentials?.meta, $0.proxyHeaders) }
        return BackendProxy.Caller(client: id, user: user, encoding: encoding, meta: meta, headers: headers)
    }

    private func unsubscribeLocally(_ channel: String) async {
        if state.withLock({ $0.forget(channel) }) { await node.subscriptions.remove(self, from: channel) }
    }

    /// The server removes a subscription and tells the client with an unsubscribe push.
    func serverUnsubscribe(_ channel: String, code: UInt32 = UnsubscribeCode.server, reason: String = "server unsubscribe") {
        guard state.withLock({ $0.forget(channel) }) else { return }
        node.subscriptions.removeInBackground(self, from: channel)
        queue.enqueue(Push(channel: channel, .unsubscribe(code: code, reason: reason)))
    }

    // MARK: Lifecycle (the keepalive and expiry checks are in ClientSessionKeepalive.swift)

    /// Closes the connection with `code`: the client is removed from its channels
    /// at once, what was queued before is still written, then the close frame.
    public func close(_ code: DisconnectCode) {
        queue.close(code)
        finish()
    }

    /// The transport is gone (the client closed it or the writer stopped):
    /// the session leaves its channels and the node.
    public func transportClosed() {
        queue.close(.transportClosed)
        finish()
    }

    private func finish() {
        let (firstTime, user, channels) = state.withLock { state -> (Bool, String?, [String]) in
            guard !state.closed else { return (false, nil, []) }
            state.closed = true
            let channels = Array(state.subscriptions)
            state.subscriptions = []
            return (true, state.credentials?.user, channels)
        }
        guard firstTime else { return }
        if let code = queue.closeCode { node.metrics.disconnect(code.code) }
        node.detach(self, user: user, channels: channels)
    }
}
