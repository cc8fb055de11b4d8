import Foundation
import GondolaProtocol

/// How a connection's subscription is set up, whoever asks for it: the client's `subscribe`
/// (granted by a token, the subscribe proxy or the namespace's rule), the server-side ones of a
/// connect (its token's or proxy's `subs`, the personal channel), and the server API's
/// `subscribe`. Each is admitted and prepared (`open`), answered, then made live (`goLive`);
/// the connection keeps its own subscription state (`ClientSession.reserve`, `markLive`).
/// What a reload or a lost stream does to a connection's subscriptions is here too.
extension Subscriptions {
    /// The client's `subscribe`: its token's grant, else the subscribe proxy's when the
    /// namespace sends subscribes there, else the namespace's own rule; `sendReply` queues
    /// the answer once the subscription is prepared.
    func subscribe(_ session: ClientSession, _ request: SubscribeRequest, sendReply: (SubscribeResult) -> Void) async throws {
        var grant = request.token.isEmpty ? nil : try await self.grant(request.token, channel: request.channel, for: session)
        let (name, options) = try directory.resolve(request.channel)
        if grant == nil, let proxy = session.node.proxy, directory.provider(of: name) == nil,
            let route = proxy.route(.subscribe, named: options.subscribeProxyName, enabled: options.proxySubscribe)
        {
            grant = try await proxy.subscribe(request, route: route, as: session.proxyCaller(user: session.user ?? ""))
            grant?.refreshedByProxy = proxy.route(.subRefresh, named: options.subRefreshProxyName) != nil
        }
        let prepared = try await open(request, for: session, grant: grant, grantedByServer: false)
        try await goLive(prepared, of: session, grant: grant, byNamespaceRule: grant == nil, sendReply: sendReply)
    }

    /// Verifies a subscription token for `channel`: an expired one answers 109 (the SDK asks
    /// for a new one), any other fault 103, its reason in the error (and so in the refusal's log line).
    func grant(_ token: String, channel: String, for session: ClientSession) async throws(HubError) -> SubscriptionGrant {
        do throws(TokenError) {
            return try await session.node.tokens.verifySubscription(token, channel: channel, user: session.user ?? "", client: session.id)
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

    /// Admits a subscription and prepares it (the first half): the channel and its namespace,
    /// who may subscribe (`admit`; a provider's own rules next), the connection's limit, then
    /// presence and the stream position. The channel stays reserved (it counts against the
    /// limit) until `goLive` or a failure.
    func open(_ request: SubscribeRequest, for session: ClientSession, grant: SubscriptionGrant?, grantedByServer: Bool) async throws
        -> PreparedSubscription
    {
        let channel = request.channel
        let (name, namespaceOptions) = try directory.resolve(channel)
        let user = session.user ?? ""
        let provider = directory.provider(of: name)
        try Self.admit(
            request, to: name, in: namespaceOptions, user: user, provided: provider != nil, granted: grant != nil, grantedByServer: grantedByServer)
        let options = grant?.overrides.applied(to: namespaceOptions) ?? namespaceOptions
        try session.reserve(channel)
        do {
            var replyData = grant?.data
            if let provider {
                var attached = false
                do {
                    try await provider.subscribe(ProvidedSubscription(channel: name, user: user, data: request.data)) { data throws(HubError) in
                        precondition(!attached, "a provider attaches once")
                        begin(session, to: channel)
                        replyData = data ?? replyData
                        attached = true
                    }
                } catch {
                    if attached { abandon(session, to: channel) }
                    throw error
                }
                guard attached else { throw HubError.internalError("provider of \(options.name) did not attach") }
            } else {
                begin(session, to: channel)
            }
            return try await prepare(
                session, request: request, options: options, info: session.clientInfo(chanInfo: grant?.info), data: replyData,
                expiresIn: grant?.refreshedByProxy == true ? nil : ClientSession.ttl(until: grant?.expiresAt))
        } catch {
            session.release(channel)
            throw error
        }
    }

    /// The second half: the subscription goes live once `sendReply` has queued its answer.
    func goLive(
        _ prepared: PreparedSubscription, of session: ClientSession, grant: SubscriptionGrant?, byNamespaceRule: Bool = false,
        serverSide: Bool = false, sendReply: (SubscribeResult) -> Void
    ) async throws {
        let channel = prepared.channel
        defer { session.release(channel) }
        var stillOpen = true
        try await activate(prepared, of: session) { result in
            // Subscribed before the client can read that it is: a command it sends right after
            // the reply (a publish, a presence call) finds the subscription.
            stillOpen = session.markLive(channel, grant: grant, byNamespaceRule: byNamespaceRule, serverSide: serverSide)
            sendReply(result)
        }
        if !stillOpen { await remove(session, from: channel) }
    }

    /// The server-side subscriptions of a connection that just authenticated: the channels
    /// its token lists (`subs`, else `channels`) and, when `user_subscribe_to_personal` is
    /// on, its personal channel. Each is prepared (recovering from where `connect.subs`
    /// says the client was), answered in the connect reply that `sendReply` queues, then
    /// made live. One that cannot be set up refuses the connect with its error.
    func subscribeServerSide(
        _ session: ClientSession, _ credentials: Credentials, recovering positions: [String: SubscribeRequest],
        sendReply: ([String: SubscribeResult]) -> Void
    ) async throws {
        var channels = credentials.subscriptions
        let configuration = directory.configuration
        if configuration.userSubscribeToPersonal, !credentials.user.isEmpty {
            let personal = configuration.personalChannel(of: credentials.user)
            if channels[personal] == nil { channels[personal] = SubscriptionGrant() }
        }
        var prepared: [(PreparedSubscription, SubscriptionGrant)] = []
        do {
            for (channel, grant) in channels.sorted(by: { $0.key < $1.key }) {
                var request = positions[channel] ?? SubscribeRequest(channel: channel)
                request.channel = channel
                prepared.append((try await open(request, for: session, grant: grant, grantedByServer: true), grant))
            }
        } catch {
            for (subscription, _) in prepared { await undo(subscription, of: session) }
            throw error
        }
        sendReply(Dictionary(uniqueKeysWithValues: prepared.map { ($0.0.channel, $0.0.result) }))
        for (subscription, grant) in prepared {
            do {
                try await goLive(subscription, of: session, grant: grant, serverSide: true) { _ in }
            } catch {
                // The connect reply announced it: the client is told it is gone and subscribes again.
                session.queue.enqueue(Push(channel: subscription.channel, .unsubscribe(code: UnsubscribeCode.insufficientState, reason: "\(error)")))
            }
        }
    }

    /// A subscription the server API asked for: set up as a client's would be (a provider's
    /// rules still apply), announced with a subscribe push. What refuses it is logged; an
    /// existing subscription to the channel stays as it is.
    func serverSubscribe(_ session: ClientSession, to channel: String, _ subscription: ServerSubscription) async {
        var request = SubscribeRequest(channel: channel)
        if let since = subscription.recoverSince {
            request.recover = true
            request.offset = since.offset
            request.epoch = since.epoch
        }
        do {
            let prepared = try await open(request, for: session, grant: subscription.grant, grantedByServer: true)
            try await goLive(prepared, of: session, grant: subscription.grant, serverSide: true) { result in
                session.queue.enqueue(Push(channel: channel, .subscribe(result)))
            }
        } catch {
            logger.notice("server subscribe refused", metadata: ["client": "\(session.id)", "channel": "\(channel)", "error": "\(error)"])
        }
    }

    /// Undoes a prepared subscription that will not go live.
    private func undo(_ prepared: PreparedSubscription, of session: ClientSession) async {
        abandon(session, to: prepared.channel)
        if prepared.options.presence { try? await presenceManager.removePresence(channel: prepared.channel, client: session.id) }
        session.release(prepared.channel)
    }

    /// Ends, as a server unsubscribe (2000), each subscription of `session` the node's
    /// namespaces no longer allow after a reload: its namespace is gone, or it was opened only
    /// by a namespace rule (`allow_subscribe_for_client`, `allow_subscribe_for_anonymous`) that
    /// is now off. Subscriptions a token, a proxy or the server granted keep going. Answers how
    /// many ended.
    func endDisallowed(of session: ClientSession) -> Int {
        let (channels, byRule, _) = session.subscriptionOrigins
        let anonymous = (session.user ?? "").isEmpty
        var ended = 0
        for channel in channels.sorted() {
            let reason: String
            if let (name, options) = try? directory.resolve(channel) {
                guard byRule.contains(channel), name.allowedUsers == nil, directory.provider(of: name) == nil,
                    !options.allowSubscribeForClient || (anonymous && !options.allowSubscribeForAnonymous)
                else { continue }
                reason = "permission denied"
            } else {
                reason = "unknown channel"
            }
            session.serverUnsubscribe(channel, reason: reason)
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
    /// subscription of `session` ends so that the client recovers it (see `Node.streamsInterrupted`).
    func recoverStreams(of session: ClientSession, where affected: (String) -> Bool) -> StreamRecovery {
        let (all, _, serverSide) = session.subscriptionOrigins
        let channels = all.filter(affected)
        guard !channels.isEmpty else { return .untouched }
        guard channels.isDisjoint(with: serverSide) else {
            session.close(.insufficientState)
            return .reconnecting
        }
        for channel in channels.sorted() {
            session.serverUnsubscribe(channel, code: UnsubscribeCode.insufficientState, reason: "insufficient state")
        }
        return .resubscribing(channels.count)
    }
}
