import Foundation
import GondolaHub
import GondolaPostgres
import GondolaStore
import GondolaTestSupport
import Testing

func temporaryDatabasePath() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("gondola-test-\(UUID().uuidString)/db.sqlite").path
}

/// A stream store of `engine` and a way to open the same storage again (a restart).
func historyStores(_ engine: Engine) throws -> (store: any HistoryStore, reopen: () throws -> any HistoryStore) {
    switch engine {
    case .sqlite:
        let path = temporaryDatabasePath()
        return (SQLiteHistoryStore(database: try GondolaDatabase(path: path)), { SQLiteHistoryStore(database: try GondolaDatabase(path: path)) })
    case .postgres:
        let pool = try freshPool()
        let location = pool.location
        return (PostgresHistoryStore(pool: pool, durable: true), { PostgresHistoryStore(pool: try PostgresPool(location: location, size: 2), durable: true) })
    }
}

/// A user repository of `engine` on empty storage.
func userRepository(_ engine: Engine) throws -> any UserRepository {
    switch engine {
    case .sqlite: SQLiteUserRepository(database: try GondolaDatabase(path: temporaryDatabasePath()))
    case .postgres: PostgresUserRepository(pool: try freshPool())
    }
}

private func freshPool() throws -> PostgresPool { try TestPostgres.freshDatabase() }
