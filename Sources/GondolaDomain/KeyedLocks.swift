import Foundation
import GondolaHub
import GondolaPostgres
import PostgresNIO

/// Serialises the work on one key (a document, a user's assignments): a domain reads,
/// checks, writes and publishes under the key's lock, so that versions and pushes of one
/// key follow each other while other keys proceed in parallel.
public protocol KeyedLocks: Sendable {
    /// Runs `body` holding the lock of `key`.
    func withLock<T>(_ key: String, _ body: () throws(HubError) -> T) throws(HubError) -> T
}

extension DomainStorage {
    /// Locks for `scope` (a name of the domain's choosing) that every node sharing this
    /// storage honours: in one process for SQLite, in PostgreSQL for a cluster.
    public func keyedLocks(scope: String) throws -> any KeyedLocks {
        switch self {
        case .sqlite: return StripedLocks()
        case let .postgres(pool, _): return try PostgresAdvisoryLocks(pool: pool, scope: scope)
        }
    }
}

/// Locks of one process: 64 stripes, picked by the key's hash (two keys may share one).
public final class StripedLocks: KeyedLocks {
    private let stripes = (0..<64).map { _ in NSLock() }

    public init() {}

    public func withLock<T>(_ key: String, _ body: () throws(HubError) -> T) throws(HubError) -> T {
        let lock = stripes[Int(UInt(bitPattern: key.hashValue) % UInt(stripes.count))]
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}

/// Locks the nodes of a cluster share: a PostgreSQL session advisory lock on
/// (`scope`, key), both hashed by the server, taken on a connection of a small pool of
/// its own and released when `body` returns — or by the server when the node dies and
/// its connection drops. Holders wait for the main pool's connections, never the other
/// way round, so the two pools cannot starve each other; at most `maxWaiting` callers
/// wait for a lock connection, more are refused with error 100.
public final class PostgresAdvisoryLocks: KeyedLocks {
    private let pool: PostgresPool
    private let scope: String

    public init(pool: PostgresPool, scope: String, connections: Int = 4) throws {
        self.pool = try PostgresPool(location: pool.location, size: connections, maxWaiting: pool.maxWaiting, logger: pool.logger)
        self.scope = scope
    }

    public func withLock<T>(_ key: String, _ body: () throws(HubError) -> T) throws(HubError) -> T {
        let outcome: Result<T, HubError>
        do {
            outcome = try pool.withConnection { connection in
                try pool.run("SELECT pg_advisory_lock(hashtext(\(scope)), hashtext(\(key)))", on: connection)
                let outcome = Result { () throws(HubError) -> T in try body() }
                try pool.run("SELECT pg_advisory_unlock(hashtext(\(scope)), hashtext(\(key)))", on: connection)
                return outcome
            }
        } catch {
            throw .internalError("lock \(scope) \(key): \(error)")
        }
        return try outcome.get()
    }
}
