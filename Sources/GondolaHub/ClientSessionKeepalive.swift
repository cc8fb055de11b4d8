import Foundation
import GondolaProtocol
import Synchronization

/// A session's keepalive and expiry: when the client was last heard, the pings and the pong
/// deadline, the end of the connection's and its subscriptions' grants, and their refresh by
/// the server API or the backend's refresh proxies.
extension ClientSession {
    /// Notes that a message from the client arrived at `instant`: the pong deadline counts from
    /// its arrival, not from when the session gets to it, which may be after a slow command
    /// (a database far away) ahead of it. The transport calls it as a message comes in.
    public func heard(at instant: ContinuousClock.Instant = .now) {
        state.withLock { $0.lastSeen = max($0.lastSeen, instant) }
    }

    /// The transport stopped (`held`) or resumed reading the client because messages wait for
    /// the session: while held the pong deadline is suspended, since a pong cannot be read, and
    /// on resuming it starts over from now.
    public func holdingInput(_ held: Bool) {
        state.withLock { state in
            state.inputHeld = held
            if !held { state.lastSeen = max(state.lastSeen, .now) }
        }
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
            if transport != .unidirectional, !state.inputHeld, let sent = state.pingSentAt, state.lastSeen < sent,
                now - sent > configuration.pongTimeout
            {
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
            switch try await proxy.refresh(channel, route: route, as: proxyCaller(user: user ?? "")) {
            case .expired:
                if let channel { serverUnsubscribe(channel, code: UnsubscribeCode.expired, reason: "subscription expired") } else { close(.expired) }
            case let .prolonged(end, info):
                state.withLock { state in
                    if let channel {
                        state.grants[channel]?.expiresAt = end
                        if let info { state.grants[channel]?.info = info }
                    } else {
                        state.credentials?.expiresAt = end
                        if let info { state.credentials?.info = info }
                    }
                }
            }
        } catch let disconnect as DisconnectCode {
            close(disconnect)
        } catch {
            node.logger.warning("proxy refresh failed", metadata: ["client": "\(id)", "channel": "\(channel ?? "")", "error": "\(error)"])
        }
    }
}
