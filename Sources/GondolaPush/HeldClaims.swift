import Synchronization

/// The claims on a single node's outbox, kept in memory instead of in its rows: one process
/// owns an SQLite file, so no other node needs to see them, and a claimed notification is
/// written once, when its answer is recorded, instead of twice. A restart starts with none,
/// which frees what the run that died had claimed.
///
/// Callers change and read it inside the database's write transactions, so a claim and a
/// fold into a waiting notification never interleave. Its size is bounded by the rows the
/// lanes have in flight: an id leaves when its outcome is recorded, and a lapsed claim
/// (its answer never recorded) leaves at the next claim.
final class HeldClaims: Sendable {
    private struct Claim {
        let runner: String
        let until: Int64
    }

    /// The claims, and the earliest moment one of them may lapse (nothing lapsed before it).
    private struct State {
        var claims: [String: Claim] = [:]
        var earliestEnd = Int64.max
    }

    private let state = Mutex(State())

    /// Whether `id` is claimed, lapsed or not (a claimed notification takes no more folds).
    func contains(_ id: String) -> Bool {
        state.withLock { $0.claims[id] != nil }
    }

    /// Whether `id`'s claim still holds at `now`.
    func holds(_ id: String, at now: Int64) -> Bool {
        state.withLock { state in state.claims[id].map { $0.until > now } ?? false }
    }

    /// Claims `ids` for `runner` until `until`, after dropping the claims lapsed at `now`.
    func hold(_ ids: [String], runner: String, until: Int64, now: Int64) {
        state.withLock { state in
            if state.earliestEnd <= now {
                state.claims = state.claims.filter { $0.value.until > now }
                state.earliestEnd = state.claims.values.map(\.until).min() ?? .max
            }
            for id in ids { state.claims[id] = Claim(runner: runner, until: until) }
            if !ids.isEmpty { state.earliestEnd = min(state.earliestEnd, until) }
        }
    }

    /// Frees the claims of `ids` (their outcome is recorded).
    func release(_ ids: some Sequence<String>) {
        state.withLock { state in
            for id in ids { state.claims[id] = nil }
        }
    }

    /// Frees the claims of every runner but `runner`; returns how many there were.
    func release(except runner: String) -> Int {
        state.withLock { state in
            let before = state.claims.count
            state.claims = state.claims.filter { $0.value.runner == runner }
            return before - state.claims.count
        }
    }
}
