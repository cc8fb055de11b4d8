import Foundation
import GondolaHub
import GondolaPostgres
import PostgresNIO
import Synchronization

/// Serialises the work on one key (a document, a user's assignments): a domain reads,
/// checks, writes and publishes under the key's lock, so that versions and pushes of one
/// key follow each other while other keys proceed in parallel. A caller waiting for a
/// key is a suspended task, never a blocked thread.
public protocol KeyedLocks: Sendable {
    /// Runs `body` holding the lock of `key`.
    func withLock<T: Sendable>(_ key: String, _ body: () async throws(HubError) -> T) async throws(HubError) -> T
}

extension DomainStorage {
    /// Locks for `scope` (a name of the domain's choosing) that every node sharing this
    /// storage honours: in one process for SQLite, in PostgreSQL for a cluster.
    public func keyedLocks(scope: String) throws -> any KeyedLocks {
        switch self {
        case .sqlite: return TaskKeyedLocks()
        case let .postgres(pool, _): return try PostgresAdvisoryLocks(pool: pool, scope: scope)
        }
    }
}

/// Locks of one process, one per key in use: a key's callers take it in the order they
/// asked. A key's entry exists while someone holds it. At most `maxWaiting` callers wait
/// in all; more are refused with 106 (limit exceeded).
public final class TaskKeyedLocks: KeyedLocks {
    /// The waiters of a held key, first come first served.
    private struct State {
        var waiters: [String: [CheckedContinuation<Bool, Never>]] = [:]
        var waiting = 0
    }

    public let maxWaiting: Int
    private let state = Mutex(State())

    public init(maxWaiting: Int = 10_000) {
        self.maxWaiting = maxWaiting
    }

    public func withLock<T: Sendable>(_ key: String, _ body: () async throws(HubError) -> T) async throws(HubError) -> T {
        let granted = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let turn = state.withLock { state -> LockTurn in
                guard state.waiters[key] != nil else {
                    state.waiters[key] = []
                    return .now
                }
                guard state.waiting < maxWaiting else { return .refused }
                state.waiters[key]!.append(continuation)
                state.waiting += 1
                return .later
            }
            switch turn {
            case .now: continuation.resume(returning: true)
            case .refused: continuation.resume(returning: false)
            case .later: break
            }
        }
        guard granted else { throw .limitExceeded("\(maxWaiting) callers already wait for a lock") }
        defer { release(key) }
        return try await body()
    }

    /// How many callers wait for a key held by another.
    public var waitingCount: Int { state.withLock { $0.waiting } }

    /// What a caller asking for a key gets.
    private enum LockTurn { case now, later, refused }

    /// Hands the key to its next waiter, or frees it.
    private func release(_ key: String) {
        let next = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard var waiters = state.waiters[key], !waiters.isEmpty else {
                state.waiters[key] = nil
                return nil
            }
            let next = waiters.removeFirst()
            state.waiters[key] = waiters
            state.waiting -= 1
            return next
        }
        next?.resume(returning: true)
    }
}

/// Locks the nodes of a cluster share: a PostgreSQL session advisory lock on
/// (`scope`, key), both hashed by the server, taken on a connection of a small pool of
/// its own and released when `body` returns — or by the server when the node dies and
/// its connection drops. Holders wait for the main pool's connections, never the other
/// way round, so the two pools cannot starve each other; at most `maxWaiting` callers
/// wait for a lock connection, more are refused with error 100. The wait for a lock is bounded
/// by `waitTimeout` (a minute, six times the main pool's bound on each statement): past it the
/// lock's connection is closed and the caller gets 100. Its holder's statements are each
/// bounded on the main pool, so a lock is not held for good either.
public final class PostgresAdvisoryLocks: KeyedLocks {
    private let pool: PostgresPool
    private let scope: String

    /// The longest a lock is waited for.
    public static let waitTimeout = Duration.seconds(60)

    public init(pool: PostgresPool, scope: String, connections: Int = 4) throws {
        self.pool = try PostgresPool(
            location: pool.location, size: connections, maxWaiting: pool.maxWaiting, statementTimeout: Self.waitTimeout, logger: pool.logger)
        self.scope = scope
    }

    public func withLock<T: Sendable>(_ key: String, _ body: () async throws(HubError) -> T) async throws(HubError) -> T {
        let outcome: Result<T, HubError>
        do {
            outcome = try await pool.withConnection { connection in
                try await pool.run("SELECT pg_advisory_lock(hashtext(\(scope)), hashtext(\(key)))", on: connection)
                let outcome: Result<T, HubError>
                do throws(HubError) {
                    outcome = .success(try await body())
                } catch {
                    outcome = .failure(error)
                }
                try await pool.run("SELECT pg_advisory_unlock(hashtext(\(scope)), hashtext(\(key)))", on: connection)
                return outcome
            }
        } catch {
            throw .internalError("lock \(scope) \(key): \(error)")
        }
        return try outcome.get()
    }
}
