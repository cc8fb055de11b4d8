import Foundation
import GondolaHub
import GondolaPostgres
import GondolaStore
import Synchronization
import Testing

/// The storage engines a repository test runs against.
enum Engine: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite, postgres
    var testDescription: String { rawValue }
}

/// A PostgreSQL server for the tests: `TEST_POSTGRES_URL` (a `postgres://` URL of a
/// server the tests may create databases on), else the private one `Scripts/cluster
/// postgres` starts in `.build/test-postgres` (and leaves running for the next run;
/// `Scripts/cluster stop --folder .build/test-postgres` stops it). Each test gets a
/// database of its own.
enum TestPostgres {
    private static let server = Mutex<String?>(nil)

    static func serverURL() throws -> String {
        try server.withLock { url in
            if let url { return url }
            let found = try ProcessInfo.processInfo.environment["TEST_POSTGRES_URL"] ?? startPrivateServer()
            url = found
            return found
        }
    }

    /// A new, empty database with the core schema, and a pool on it.
    static func freshDatabase() throws -> PostgresPool {
        let url = try serverURL()
        let admin = try PostgresPool(location: PostgresLocation(url: url), size: 1)
        let name = "test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try admin.query("CREATE DATABASE \(unescaped: name)")
        let location = try PostgresLocation(url: url.replacingOccurrences(of: "/\(try PostgresLocation(url: url).database)", with: "/\(name)"))
        let pool = try PostgresPool(location: location, size: 4)
        try PostgresSchema.migrator.migrate(pool)
        return pool
    }

    private static func startPrivateServer() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let process = Process()
        process.executableURL = root.appendingPathComponent("Scripts/cluster")
        process.arguments = ["postgres", "--folder", root.appendingPathComponent(".build/test-postgres").path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let url = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard process.terminationStatus == 0, PostgresLocation.isURL(url) else {
            throw PostgresStoreError("Scripts/cluster postgres failed (status \(process.terminationStatus)): \(url)")
        }
        return url
    }
}

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
