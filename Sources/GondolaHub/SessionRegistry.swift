import Synchronization

/// This node's connections (centrifuge's hub, its connection side): every open session,
/// the sessions of each user once they connected, and whether the node is shutting down,
/// under one lock held only for a dictionary change.
final class SessionRegistry: Sendable {
    private struct State {
        var sessions: [String: ClientSession] = [:]
        var byUser: [String: Set<String>] = [:]
        var shuttingDown = false
    }

    private let state = Mutex(State())

    /// What `register` decided.
    enum Registration {
        case registered
        case shuttingDown
        /// The user holds `client_user_connection_limit` connections on this node already.
        case userLimitReached(Int)
    }

    /// Adds a session that was just opened; false while shutting down.
    func add(_ session: ClientSession) -> Bool {
        state.withLock { state in
            guard !state.shuttingDown else { return false }
            state.sessions[session.id] = session
            return true
        }
    }

    /// Records the user of a session that completed `connect`, unless the node is shutting
    /// down or the user already holds `limit` connections here (0: no limit; anonymous
    /// connections are not counted per user).
    func register(_ session: ClientSession, user: String, limit: Int) -> Registration {
        state.withLock { state in
            guard !state.shuttingDown, state.sessions[session.id] != nil else { return .shuttingDown }
            if limit > 0, !user.isEmpty, (state.byUser[user]?.count ?? 0) >= limit { return .userLimitReached(limit) }
            state.byUser[user, default: []].insert(session.id)
            return .registered
        }
    }

    /// Removes a session (and its user's entry of it).
    func remove(_ session: ClientSession, user: String?) {
        state.withLock { state in
            state.sessions[session.id] = nil
            guard let user else { return }
            state.byUser[user]?.remove(session.id)
            if state.byUser[user]?.isEmpty == true { state.byUser[user] = nil }
        }
    }

    /// The connected sessions of `user`.
    func sessions(of user: String) -> [ClientSession] {
        state.withLock { state in
            (state.byUser[user] ?? []).compactMap { state.sessions[$0] }
        }
    }

    /// Every open session.
    var all: [ClientSession] { state.withLock { Array($0.sessions.values) } }

    /// Refuses new sessions from now on; answers the open ones.
    func shutDown() -> [ClientSession] {
        state.withLock { state in
            state.shuttingDown = true
            return Array(state.sessions.values)
        }
    }

    var isShuttingDown: Bool { state.withLock { $0.shuttingDown } }

    /// Connected clients, distinct users, and every open session (for their queues).
    var counts: (clients: Int, users: Int, sessions: [ClientSession]) {
        state.withLock { state in
            (state.byUser.values.reduce(0) { $0 + $1.count }, state.byUser.count, Array(state.sessions.values))
        }
    }
}
