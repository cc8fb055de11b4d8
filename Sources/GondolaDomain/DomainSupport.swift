import Foundation
import GondolaHub

/// Runs a database read; a failure answers the caller with an internal error (100)
/// and changes nothing.
public func databaseRead<T>(_ body: () async throws -> T) async throws(HubError) -> T {
    do { return try await body() } catch { throw .internalError("database read failed: \(error)") }
}

/// Runs a database write; a failure answers the caller with an internal error (100),
/// and the caller keeps its in-memory view as it was.
public func databaseWrite<T>(_ body: () async throws -> T) async throws(HubError) -> T {
    do { return try await body() } catch { throw .internalError("database write failed: \(error)") }
}

/// Milliseconds since 1970, the time unit of every domain's rows and JSON.
public func unixMilliseconds(_ date: Date = Date()) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }

extension NamespaceOptions {
    /// Options of a namespace whose channels keep a durable, always recoverable stream of
    /// the last `size` publications for `ttl`, readable by subscribers with `history`.
    public static func durableStream(_ name: String, size: Int, ttl: Duration) -> NamespaceOptions {
        var options = NamespaceOptions(name: name)
        options.historySize = size
        options.historyTTL = ttl
        options.historyDurable = true
        options.forceRecovery = true
        options.allowHistoryForSubscriber = true
        return options
    }
}
