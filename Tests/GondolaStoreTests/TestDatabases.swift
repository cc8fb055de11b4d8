import Foundation
import GondolaHub
import GondolaPostgres
import GondolaProtocol
import GondolaStore
import GondolaTestSupport
import Testing

func temporaryDatabasePath() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("gondola-test-\(UUID().uuidString)/db.sqlite").path
}

/// A stream store the tests append to one publication at a time, whatever its engine.
protocol AppendableHistoryStore: HistoryStore {
    func append(_ publication: Publication, to channel: String, options: NamespaceOptions, now: Date) async throws -> (Publication, StreamPosition)
    /// Drops the streams past their `history_meta_ttl` at `now`; what is read after it sees the sweep done.
    func sweepStreams(now: Date) async throws
}

extension SQLiteHistoryStore: AppendableHistoryStore {
    /// The sweep is a write queued before any later read, which waits for it.
    func sweepStreams(now: Date) async throws { sweep(now: now) }
}

extension PostgresHistoryStore: AppendableHistoryStore {
    /// One publication as a batch of one (the cluster's bus writer appends in batches).
    func append(_ publication: Publication, to channel: String, options: NamespaceOptions, now: Date) async throws -> (Publication, StreamPosition) {
        let positions = try await pool.withConnection { connection in
            try await append([Append(channel: channel, publication: publication, options: options)], on: connection, now: now).get()
        }
        var stored = publication
        stored.offset = positions[0].offset
        return (stored, positions[0])
    }

    func sweepStreams(now: Date) async throws { try await sweep(now: now) }
}

/// A stream store of `engine` and a way to open the same storage again (a restart).
func historyStores(_ engine: Engine) async throws -> (store: any AppendableHistoryStore, reopen: () throws -> any AppendableHistoryStore) {
    switch engine {
    case .sqlite:
        let path = temporaryDatabasePath()
        return (SQLiteHistoryStore(database: try GondolaDatabase(path: path)), { SQLiteHistoryStore(database: try GondolaDatabase(path: path)) })
    case .postgres:
        let pool = try await freshPool()
        let location = pool.location
        return (
            PostgresHistoryStore(pool: pool, durable: true),
            { PostgresHistoryStore(pool: try PostgresPool(location: location, size: 2), durable: true) }
        )
    }
}

/// A user repository of `engine` on empty storage.
func userRepository(_ engine: Engine) async throws -> any UserRepository {
    switch engine {
    case .sqlite: SQLiteUserRepository(database: try GondolaDatabase(path: temporaryDatabasePath()))
    case .postgres: await PostgresUserRepository(pool: try freshPool())
    }
}

private func freshPool() async throws -> PostgresPool { try await TestPostgres.freshDatabase() }
