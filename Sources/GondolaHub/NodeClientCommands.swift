import GondolaProtocol

/// What a client's connection may ask of the node besides its connection and subscriptions:
/// publish (through the publish proxy when the namespace sends publishes there), read presence
/// and history, each needing what the namespace allows subscribers (or every client, or
/// anonymous connections; a refusal answers 103 naming the rule), and call RPC methods.
extension Node {
    /// A client's `publish`: the publish proxy's answer (which may refuse it or change its
    /// data) when the namespace sends publishes there, else the namespace's rules, then the
    /// publication with the client's info.
    func publish(from session: ClientSession, channel: String, data: Payload) async throws {
        var data = data
        let options = try resolve(channel).1
        if let proxy, let route = proxy.route(.publish, named: options.publishProxyName, enabled: options.proxyPublish) {
            data = try await proxy.publish(data, to: channel, route: route, as: session.proxyCaller(user: session.user ?? ""))
        } else {
            try Self.requireSubscribed(
                session, to: channel, options: options, allowed: \.allowPublishForSubscriber, unlessOpen: \.allowPublishForClient,
                anonymous: \.allowPublishForAnonymous, what: "publish")
        }
        try await publish(channel: channel, data: data, info: session.clientInfo(on: channel))
    }

    /// A client's `presence`.
    func presence(for session: ClientSession, channel: String) async throws(HubError) -> [String: ClientInfo] {
        try Self.requireSubscribed(
            session, to: channel, options: try resolve(channel).1, allowed: \.allowPresenceForSubscriber, anonymous: \.allowPresenceForAnonymous,
            what: "presence")
        return try await presence(channel: channel)
    }

    /// A client's `presence_stats`.
    func presenceStats(for session: ClientSession, channel: String) async throws(HubError) -> PresenceStats {
        try Self.requireSubscribed(
            session, to: channel, options: try resolve(channel).1, allowed: \.allowPresenceForSubscriber, anonymous: \.allowPresenceForAnonymous,
            what: "presence")
        return try await presenceStats(channel: channel)
    }

    /// A client's `history`.
    func history(for session: ClientSession, _ request: HistoryRequest) async throws(HubError) -> HistoryResult {
        try Self.requireSubscribed(
            session, to: request.channel, options: try resolve(request.channel).1, allowed: \.allowHistoryForSubscriber,
            anonymous: \.allowHistoryForAnonymous, what: "history")
        return try await history(channel: request.channel, limit: Int(request.limit), since: request.since, reverse: request.reverse)
    }

    /// A user's RPC call: the domain's method answers through `reply`, once (a handler may
    /// answer early from another thread; what it returns or throws afterwards is dropped).
    /// Anonymous connections call methods only through the RPC proxy.
    func call(_ method: String, _ data: JSON?, from session: ClientSession, reply: @escaping @Sendable (RawJSON) -> Void) async throws {
        let user = session.user ?? ""
        guard !user.isEmpty else {
            throw HubError.permissionDenied("anonymous connections call RPC methods through the RPC proxy only, not \(method)")
        }
        let answer = RPCAnswer(reply)
        let started = ContinuousClock.now
        defer { metrics.rpcDuration.recordSeconds((ContinuousClock.now - started).timeInterval) }
        do {
            let result = try await rpc.call(method, context: RPCContext(user: user, client: session.id, answer: answer), data: data)
            if answer.claim() { reply(result) }
        } catch {
            // A reply sent early stands; otherwise the error is the reply.
            guard answer.claim() else { return }
            throw error
        }
    }

    /// Refuses `what` unless the namespace allows it for subscribers and the client is one; a
    /// namespace whose `unlessOpen` option is set allows it to every client. An anonymous
    /// connection also needs the namespace's `anonymous` option. Whether the namespace has the
    /// feature at all (108) is the caller's check.
    private static func requireSubscribed(
        _ session: ClientSession, to channel: String, options: NamespaceOptions, allowed: KeyPath<NamespaceOptions, Bool>,
        unlessOpen open: KeyPath<NamespaceOptions, Bool>? = nil, anonymous: KeyPath<NamespaceOptions, Bool>, what: String
    ) throws(HubError) {
        if session.user?.isEmpty != false, !options[keyPath: anonymous] {
            throw .permissionDenied("namespace '\(options.name)' does not allow \(what) for anonymous connections")
        }
        if let open, options[keyPath: open] { return }
        guard options[keyPath: allowed] else {
            throw .permissionDenied("namespace '\(options.name)' does not allow \(what) for subscribers")
        }
        guard session.subscriptions.contains(channel) else {
            throw .permissionDenied("\(what) needs a subscription to \(channel)")
        }
    }
}
