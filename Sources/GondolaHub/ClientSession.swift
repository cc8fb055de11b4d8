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

    private struct State {
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

    private let state: Mutex<State>

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

    private var clientInfo: ClientInfo { clientInfo(chanInfo: nil) }

    /// The client as `channel`'s subscribers see it: with the `chan_info` its subscription token gave.
    private func clientInfo(on channel: String) -> ClientInfo {
        clientInfo(chanInfo: state.withLock { $0.grants[channel]?.info })
    }

    private func clientInfo(chanInfo: RawJSON?) -> ClientInfo {
        let credentials = state.withLock { $0.credentials }
        return ClientInfo(user: credentials?.user ?? "", client: id, connInfo: credentials?.info, chanInfo: chanInfo)
    }

    // MARK: Input

    /// Handles one frame of the connection's encoding: one or more commands. A
    /// frame that breaks the protocol closes the connection with 3501 once the
    /// commands before the broken one have run (none when the framing itself is broken).
    /// `receivedAt` is when the frame arrived, on the keepalive's clock (`tick(now:date:)`).
    public func handle(frame: some Collection<UInt8>, receivedAt: ContinuousClock.Instant = .now) async {
        state.withLock { $0.lastSeen = receivedAt }
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

    /// `execute` in a span when the node traces and the command does work worth one (a
    /// connect, subscribe, publish, RPC or refresh, each of which may also call the proxy).
    private func traced(_ command: Command) async throws {
        guard node.tracing.isOn else { return try await execute(command) }
        let name: String
        var attributes: SpanAttributes = ["gondola.client": .string(id)]
        switch command.method {
        case .connect: name = "client.connect"
        case let .subscribe(request):
            name = "client.subscribe"
            attributes["messaging.destination.name"] = request.channel
        case let .publish(channel, _):
            name = "client.publish"
            attributes["messaging.destination.name"] = channel
        case let .rpc(method, _):
            name = "client.rpc"
            attributes["rpc.method"] = method
        case .refresh, .subRefresh: name = "client.refresh"
        default: return try await execute(command)
        }
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
        case let .subscribe(request): try await subscribe(id: command.id, request)
        case let .unsubscribe(channel):
            _ = try node.channelName(channel)
            await unsubscribeLocally(channel)
            reply(Reply(id: command.id, .unsubscribe))
        case let .publish(channel, data):
            var data = data
            let options = try node.resolve(channel).1
            if let proxy = node.proxy, let route = proxy.route(.publish, named: options.publishProxyName, enabled: options.proxyPublish) {
                data = try await proxy.publish(data, to: channel, route: route, as: proxyCaller(user: user ?? ""))
            } else {
                try requireSubscribed(
                    channel, options: options, allowed: \.allowPublishForSubscriber, unlessOpen: \.allowPublishForClient,
                    anonymous: \.allowPublishForAnonymous, what: "publish")
            }
            try await node.publish(channel: channel, data: data, info: clientInfo(on: channel))
            reply(Reply(id: command.id, .publish))
        case let .presence(channel):
            try requireSubscribed(channel, allowed: \.allowPresenceForSubscriber, anonymous: \.allowPresenceForAnonymous, what: "presence")
            reply(Reply(id: command.id, .presence(try await node.presence(channel: channel))))
        case let .presenceStats(channel):
            try requireSubscribed(channel, allowed: \.allowPresenceForSubscriber, anonymous: \.allowPresenceForAnonymous, what: "presence")
            reply(Reply(id: command.id, .presenceStats(try await node.presenceStats(channel: channel))))
        case let .history(request):
            try requireSubscribed(request.channel, allowed: \.allowHistoryForSubscriber, anonymous: \.allowHistoryForAnonymous, what: "history")
            let result = try await node.history(channel: request.channel, limit: Int(request.limit), since: request.since, reverse: request.reverse)
            reply(Reply(id: command.id, .history(result)))
        case .ping:
            reply(Reply(id: command.id, .ping))
        // Without a proxy, a call costs no extra lookup.
        case let .rpc(method, data) where node.proxy?.rpcRoute(method) != nil && !node.rpc.serves(method):
            guard let proxy = node.proxy, let route = proxy.rpcRoute(method) else { throw HubError.methodNotFound(method) }
            reply(Reply(id: command.id, .rpc(data: try await proxy.rpc(method, data, route: route, as: proxyCaller(user: user ?? "")))))
        case let .rpc(method, data):
            let user = user ?? ""
            guard !user.isEmpty else {
                throw HubError.permissionDenied("anonymous connections call RPC methods through the RPC proxy only, not \(method)")
            }
            let answer = RPCAnswer { [weak self] result in self?.reply(Reply(id: command.id, .rpc(data: result))) }
            let started = ContinuousClock.now
            defer { node.metrics.rpcDuration.recordSeconds((ContinuousClock.now - started).timeInterval) }
            do {
                let result = try await node.rpc.call(method, context: RPCContext(user: user, client: id, answer: answer), data: data)
                if answer.claim() { reply(Reply(id: command.id, .rpc(data: result))) }
            } catch {
                // A reply sent early stands; otherwise the error is the reply.
                guard answer.claim() else { return }
                throw error
            }
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
        let allowed = node.configuration.proxyEmulatedHeaders
        if !allowed.isEmpty {
            // A header the upgrade request carried wins over the client's emulated one.
            let transport = Set(forwardedHeaders.map { $0.name.lowercased() })
            let emulated = request.headers.filter { allowed.contains($0.key.lowercased()) && !transport.contains($0.key.lowercased()) }
                .sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
            state.withLock { $0.proxyHeaders = emulated + forwardedHeaders }
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
        try await subscribeServerSide(credentials, recovering: request.subs) { subscriptions in
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
        let grant = try await subscriptionGrant(token, channel: channel)
        state.withLock { state in
            guard state.subscriptions.contains(channel) else { return }
            state.grants[channel] = grant
        }
        let ttl = Self.ttl(until: grant.expiresAt)
        reply(Reply(id: replyID, .subRefresh(SubRefreshResult(expires: ttl != nil, ttl: ttl ?? 0))))
    }

    /// Verifies a subscription token for `channel`: an expired one answers 109 (the SDK asks
    /// for a new one), any other fault 103, its reason in the error (and so in the refusal's log line).
    private func subscriptionGrant(_ token: String, channel: String) async throws(HubError) -> SubscriptionGrant {
        do throws(TokenError) {
            return try await node.tokens.verifySubscription(token, channel: channel, user: user ?? "", client: id)
        } catch {
            switch error {
            case .expired:
                throw .tokenExpired
            case let .keyUnavailable(reason):
                throw .internalError(reason)
            case let .invalid(reason):
                throw .permissionDenied("invalid subscription token: \(reason)")
            }
        }
    }

    private static func ttl(until expiry: Date?) -> UInt32? {
        guard let expiry else { return nil }
        return UInt32(max(1, min(Double(UInt32.max), expiry.timeIntervalSinceNow.rounded(.down))))
    }

    private func subscribe(id replyID: UInt32, _ request: SubscribeRequest) async throws {
        var grant = request.token.isEmpty ? nil : try await subscriptionGrant(request.token, channel: request.channel)
        let options = try node.resolve(request.channel).1
        if grant == nil, let proxy = node.proxy, node.provider(of: try node.channelName(request.channel)) == nil,
            let route = proxy.route(.subscribe, named: options.subscribeProxyName, enabled: options.proxySubscribe)
        {
            grant = try await proxy.subscribe(request, route: route, as: proxyCaller(user: user ?? ""))
            grant?.refreshedByProxy = proxy.route(.subRefresh, named: options.subRefreshProxyName) != nil
        }
        let prepared = try await admitSubscription(request, grant: grant, grantedByServer: false)
        try await activate(prepared, grant: grant, byNamespaceRule: grant == nil) { result in queue.enqueue(Reply(id: replyID, .subscribe(result))) }
    }

    /// Admits a subscription and prepares it (the first half): the channel and its namespace,
    /// who may subscribe (`Subscriptions.admit`; a provider's own rules next), the connection's
    /// limit, then presence and the stream position. The channel stays pending (it counts
    /// against the limit) until `activate` or a failure.
    private func admitSubscription(
        _ request: SubscribeRequest, grant: SubscriptionGrant?,
        grantedByServer: Bool
    ) async throws -> Subscriptions.PreparedSubscription {
        let channel = request.channel
        let (name, namespaceOptions) = try node.resolve(channel)
        let user = user ?? ""
        let provider = node.provider(of: name)
        try Subscriptions.admit(
            request, to: name, in: namespaceOptions, user: user, provided: provider != nil, granted: grant != nil, grantedByServer: grantedByServer)
        let options = grant?.overrides.applied(to: namespaceOptions) ?? namespaceOptions
        try state.withLock { state throws(HubError) in
            guard !state.subscriptions.contains(channel), !state.pendingSubscriptions.contains(channel) else {
                throw .alreadySubscribed(channel)
            }
            guard state.subscriptions.count + state.pendingSubscriptions.count < node.configuration.maxChannelsPerClient else {
                throw .limitExceeded("at most \(node.configuration.maxChannelsPerClient) channels per connection")
            }
            state.pendingSubscriptions.insert(channel)
        }
        do {
            var replyData = grant?.data
            if let provider {
                var attached = false
                do {
                    try await provider.subscribe(ProvidedSubscription(channel: name, user: user, data: request.data)) { data throws(HubError) in
                        precondition(!attached, "a provider attaches once")
                        node.subscriptions.begin(self, to: channel)
                        replyData = data ?? replyData
                        attached = true
                    }
                } catch {
                    if attached { node.subscriptions.abandon(self, to: channel) }
                    throw error
                }
                guard attached else { throw HubError.internalError("provider of \(options.name) did not attach") }
            } else {
                node.subscriptions.begin(self, to: channel)
            }
            return try await node.subscriptions.prepare(
                self, request: request, options: options, info: clientInfo(chanInfo: grant?.info),
                data: replyData,
                expiresIn: grant?.refreshedByProxy == true ? nil : Self.ttl(until: grant?.expiresAt))
        } catch {
            state.withLock { _ = $0.pendingSubscriptions.remove(channel) }
            throw error
        }
    }

    /// The second half: the subscription goes live once `sendReply` has queued its answer.
    private func activate(
        _ prepared: Subscriptions.PreparedSubscription, grant: SubscriptionGrant?, byNamespaceRule: Bool = false, serverSide: Bool = false,
        sendReply: (SubscribeResult) -> Void
    ) async throws {
        let channel = prepared.channel
        defer { state.withLock { _ = $0.pendingSubscriptions.remove(channel) } }
        var stillOpen = true
        try await node.subscriptions.activate(prepared, of: self) { result in
            // Subscribed before the client can read that it is: a command it sends right after
            // the reply (a publish, a presence call) finds the subscription.
            stillOpen = state.withLock { state in
                guard !state.closed else { return false }
                state.subscriptions.insert(channel)
                state.grants[channel] = grant
                if byNamespaceRule { state.openedByNamespaceRule.insert(channel) }
                if serverSide { state.serverSide.insert(channel) }
                return true
            }
            sendReply(result)
        }
        if !stillOpen { await node.subscriptions.remove(self, from: channel) }
    }

    /// The server-side subscriptions of a connection that just authenticated: the channels
    /// its token lists (`subs`, else `channels`) and, when `user_subscribe_to_personal` is
    /// on, its personal channel. Each is prepared (recovering from where `connect.subs`
    /// says the client was), answered in the connect reply that `sendReply` queues, then
    /// made live. One that cannot be set up refuses the connect with its error.
    private func subscribeServerSide(
        _ credentials: Credentials, recovering positions: [String: SubscribeRequest],
        sendReply: ([String: SubscribeResult]) -> Void
    ) async throws {
        var channels = credentials.subscriptions
        if node.configuration.userSubscribeToPersonal, !credentials.user.isEmpty {
            let personal = node.configuration.personalChannel(of: credentials.user)
            if channels[personal] == nil { channels[personal] = SubscriptionGrant() }
        }
        var prepared: [(Subscriptions.PreparedSubscription, SubscriptionGrant)] = []
        do {
            for (channel, grant) in channels.sorted(by: { $0.key < $1.key }) {
                var request = positions[channel] ?? SubscribeRequest(channel: channel)
                request.channel = channel
                prepared.append((try await admitSubscription(request, grant: grant, grantedByServer: true), grant))
            }
        } catch {
            for (subscription, _) in prepared { await undo(subscription) }
            throw error
        }
        sendReply(Dictionary(uniqueKeysWithValues: prepared.map { ($0.0.channel, $0.0.result) }))
        for (subscription, grant) in prepared {
            do {
                try await activate(subscription, grant: grant, serverSide: true) { _ in }
            } catch {
                // The connect reply announced it: the client is told it is gone and subscribes again.
                queue.enqueue(Push(channel: subscription.channel, .unsubscribe(code: UnsubscribeCode.insufficientState, reason: "\(error)")))
            }
        }
    }

    /// A subscription the server API asked for: set up as a client's would be (a provider's
    /// rules still apply), announced with a subscribe push. What refuses it is logged; an
    /// existing subscription to the channel stays as it is.
    func serverSubscribe(_ channel: String, _ subscription: ServerSubscription) async {
        var request = SubscribeRequest(channel: channel)
        if let since = subscription.recoverSince {
            request.recover = true
            request.offset = since.offset
            request.epoch = since.epoch
        }
        do {
            let prepared = try await admitSubscription(request, grant: subscription.grant, grantedByServer: true)
            try await activate(prepared, grant: subscription.grant, serverSide: true) { result in
                queue.enqueue(Push(channel: channel, .subscribe(result)))
            }
        } catch {
            node.logger.notice("server subscribe refused", metadata: ["client": "\(id)", "channel": "\(channel)", "error": "\(error)"])
        }
    }

    // MARK: Proxy

    /// Who this client is, for a proxy request.
    private func proxyCaller(user: String) -> BackendProxy.Caller {
        let (meta, headers) = state.withLock { ($0.credentials?.meta, $0.proxyHeaders) }
        return BackendProxy.Caller(client: id, user: user, encoding: encoding, meta: meta, headers: headers)
    }

    /// Undoes a prepared subscription that will not go live.
    private func undo(_ prepared: Subscriptions.PreparedSubscription) async {
        node.subscriptions.abandon(self, to: prepared.channel)
        if prepared.options.presence { try? await node.presenceManager.removePresence(channel: prepared.channel, client: id) }
        state.withLock { _ = $0.pendingSubscriptions.remove(prepared.channel) }
    }

    /// Refuses `what` unless the namespace allows it for subscribers and the client is
    /// one; a namespace whose `unlessOpen` option is set allows it to every client. An
    /// anonymous connection also needs the namespace's `anonymous` option. Whether the
    /// namespace has the feature at all (108) is the node's check. `options` are the
    /// channel's namespace options when the caller has them already.
    private func requireSubscribed(
        _ channel: String, options resolved: NamespaceOptions? = nil, allowed: KeyPath<NamespaceOptions, Bool>,
        unlessOpen open: KeyPath<NamespaceOptions, Bool>? = nil, anonymous: KeyPath<NamespaceOptions, Bool>,
        what: String
    ) throws(HubError) {
        let options: NamespaceOptions
        if let resolved { options = resolved } else { options = try node.resolve(channel).1 }
        if user?.isEmpty != false, !options[keyPath: anonymous] {
            throw .permissionDenied("namespace '\(options.name)' does not allow \(what) for anonymous connections")
        }
        if let open, options[keyPath: open] { return }
        guard options[keyPath: allowed] else {
            throw .permissionDenied("namespace '\(options.name)' does not allow \(what) for subscribers")
        }
        guard subscriptions.contains(channel) else {
            throw .permissionDenied("\(what) needs a subscription to \(channel)")
        }
    }

    private func unsubscribeLocally(_ channel: String) async {
        let removed = state.withLock { $0.forget(channel) }
        if removed { await node.subscriptions.remove(self, from: channel) }
    }

    /// The server removes a subscription and tells the client with an unsubscribe push.
    func serverUnsubscribe(_ channel: String, code: UInt32 = UnsubscribeCode.server, reason: String = "server unsubscribe") {
        let removed = state.withLock { $0.forget(channel) }
        guard removed else { return }
        node.subscriptions.removeInBackground(self, from: channel)
        queue.enqueue(Push(channel: channel, .unsubscribe(code: code, reason: reason)))
    }

    /// Ends, as a server unsubscribe (2000), each subscription the node's namespaces no longer
    /// allow after a reload: its namespace is gone, or it was opened only by a namespace rule
    /// (`allow_subscribe_for_client`, `allow_subscribe_for_anonymous`) that is now off.
    /// Subscriptions a token, a proxy or the server granted keep going. Answers how many ended.
    func endDisallowedSubscriptions() -> Int {
        let (channels, byRule) = state.withLock { ($0.subscriptions, $0.openedByNamespaceRule) }
        let anonymous = (user ?? "").isEmpty
        var ended = 0
        for channel in channels.sorted() {
            let reason: String
            if let (name, options) = try? node.resolve(channel) {
                guard byRule.contains(channel), name.allowedUsers == nil, node.provider(of: name) == nil,
                    !options.allowSubscribeForClient || (anonymous && !options.allowSubscribeForAnonymous)
                else { continue }
                reason = "permission denied"
            } else {
                reason = "unknown channel"
            }
            serverUnsubscribe(channel, reason: reason)
            ended += 1
        }
        return ended
    }

    /// What `recoverStreams` did to a connection.
    enum StreamRecovery: Equatable {
        case untouched
        /// This many client-side subscriptions ended with 2500; the client subscribes to them again.
        case resubscribing(Int)
        /// A server-side subscription was affected: the connection closed with 3010.
        case reconnecting
    }

    /// The node may have missed publications of the channels `affected` accepts: each such
    /// subscription ends so that the client recovers it (see `Node.streamsInterrupted`).
    func recoverStreams(where affected: (String) -> Bool) -> StreamRecovery {
        let (channels, serverSide) = state.withLock { state in (state.subscriptions.filter(affected), state.serverSide) }
        guard !channels.isEmpty else { return .untouched }
        guard channels.isDisjoint(with: serverSide) else {
            close(.insufficientState)
            return .reconnecting
        }
        for channel in channels.sorted() {
            serverUnsubscribe(channel, code: UnsubscribeCode.insufficientState, reason: "insufficient state")
        }
        return .resubscribing(channels.count)
    }

    // MARK: Lifecycle

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

    /// Periodic checks: the connect deadline, server pings, the pong deadline, token expiry,
    /// and subscriptions whose token expired (unsubscribed with 2501, which the SDKs answer
    /// by subscribing again with a new token).
    func tick(now: ContinuousClock.Instant, date: Date) {
        let configuration = node.configuration
        enum Action {
            case none, ping
            case close(DisconnectCode)
        }
        let action = state.withLock { state -> Action in
            guard !state.closed else { return .none }
            guard let credentials = state.credentials else {
                let deadline = max(configuration.pingInterval + configuration.pongTimeout, .seconds(1))
                return now - state.openedAt > deadline
                    ? .close(DisconnectCode.badRequest.with(reason: "bad request: no connect command in time")) : .none
            }
            if let expiry = credentials.expiresAt, date.timeIntervalSince(expiry) > configuration.pongTimeout.timeInterval {
                return .close(.expired)
            }
            if transport != .unidirectional, let sent = state.pingSentAt, state.lastSeen < sent, now - sent > configuration.pongTimeout {
                return .close(.noPong)
            }
            if configuration.pingInterval > .zero, now >= state.nextPingAt {
                state.pingSentAt = now
                state.nextPingAt = now + configuration.pingInterval
                return .ping
            }
            return .none
        }
        switch action {
        case .none: break
        case .ping: queue.enqueue(encoding.ping)
        case let .close(code): close(code)
        }
        let grace = configuration.pongTimeout.timeInterval
        let (expired, refreshes) = state.withLock { state -> ([String], [String?]) in
            let expired = state.grants.compactMap { channel, grant in
                grant.expiresAt.flatMap { date.timeIntervalSince($0) > grace ? channel : nil }
            }
            // What the backend prolongs is asked once its end has come, one request at a time
            // for each; until the grace is over a failed request is asked again at the next tick.
            // (The channels as `String?`, nil standing for the connection: a grant not due must
            // add nothing, not a nil, which would ask for the connection's refresh.)
            var due: [String?] = state.grants.filter { $0.value.refreshedByProxy && $0.value.expiresAt.map { $0 <= date } == true }.map(\.key)
            if state.refreshedByProxy, let end = state.credentials?.expiresAt, end <= date { due.append(nil) }
            due = due.filter { !state.proxyRefreshing.contains($0) }
            state.proxyRefreshing.formUnion(due)
            return (expired, due)
        }
        for channel in expired { serverUnsubscribe(channel, code: UnsubscribeCode.expired, reason: "subscription expired") }
        for channel in refreshes { Task { await proxyRefresh(channel) } }
    }

    /// Applies the server API's `refresh`: closes the connection with 3005 when it is
    /// expired (or its new end is past), else sets its end and info and tells the client
    /// with a refresh push.
    func serverRefresh(_ refresh: ConnectionRefresh) {
        let ttl = Self.ttl(until: refresh.expireAt)
        if refresh.expired || refresh.expireAt.map({ $0 <= Date() }) == true {
            return close(.expired)
        }
        state.withLock { state in
            state.credentials?.expiresAt = refresh.expireAt
            if let info = refresh.info { state.credentials?.info = info }
        }
        queue.enqueue(Push(channel: "", .refresh(expires: ttl != nil, ttl: ttl ?? 0)))
    }

    /// Proxy refreshes of this connection or its subscriptions waiting on the backend.
    var proxyRefreshesUnderWay: Int { state.withLock { $0.proxyRefreshing.count } }

    /// Asks the backend to prolong the connection (`channel` nil, the refresh proxy) or a
    /// subscription (the sub_refresh proxy): `expired: true` ends it (3005, or an unsubscribe
    /// with 2501), else `expire_at` (0: never) and `info`/`b64info` replace what it had. A
    /// failed request is logged and asked again at the next tick, until the grace is over.
    private func proxyRefresh(_ channel: String?) async {
        defer { state.withLock { _ = $0.proxyRefreshing.remove(channel) } }
        guard let proxy = node.proxy else { return }
        do {
            let route =
                try channel.map { channel in ProxyRoute(.subRefresh, name: try node.resolve(channel).1.subRefreshProxyName) }
                ?? ProxyRoute(.refresh)
            let result = try await proxy.ask(route, proxyCaller(user: user ?? ""), channel.map { [("channel", .string($0))] } ?? [])
            if result.has("expired"), try result.bool("expired") {
                if let channel {
                    serverUnsubscribe(channel, code: UnsubscribeCode.expired, reason: "subscription expired")
                } else {
                    close(.expired)
                }
                return
            }
            let end = try result.optionalInteger("expire_at", in: 0...Int64(1e12)).flatMap { $0 == 0 ? nil : Date(timeIntervalSince1970: Double($0)) }
            let info = try ConnectionTokens.json(result, raw: "info", base64: "b64info")
            state.withLock { state in
                if let channel {
                    state.grants[channel]?.expiresAt = end
                    if let info { state.grants[channel]?.info = info }
                } else {
                    state.credentials?.expiresAt = end
                    if let info { state.credentials?.info = info }
                }
            }
        } catch let disconnect as DisconnectCode {
            close(disconnect)
        } catch {
            node.logger.warning("proxy refresh failed", metadata: ["client": "\(id)", "channel": "\(channel ?? "")", "error": "\(error)"])
        }
    }
}
