import Foundation
import GondolaPostgres
import Synchronization
import Testing

/// The storage engines a repository test runs against.
public enum Engine: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite, postgres
    public var testDescription: String { rawValue }
}

/// A PostgreSQL server for the tests: `TEST_POSTGRES_URL` (a `postgres://` URL of a
/// server the tests may create databases on), else the private one `Scripts/cluster
/// postgres` starts in `.build/test-postgres` (and leaves running for the next run;
/// `Scripts/cluster stop --folder .build/test-postgres` stops it). Each test gets a
/// database of its own.
public enum TestPostgres {
    private static let server = Mutex<String?>(nil)

    public static func serverURL() throws -> String {
        try server.withLock { url in
            if let url { return url }
            let found = try ProcessInfo.processInfo.environment["TEST_POSTGRES_URL"] ?? startPrivateServer()
            url = found
            return found
        }
    }

    /// The few connections that create the tests' databases. A `CREATE DATABASE` copies the
    /// template through the write-ahead log; thirty at once contend for it for seconds,
    /// past the statement bound on a busy machine, so at most four run at once here (a test
    /// waits for its turn in the pool, not in the server).
    private static let admin = Mutex<PostgresPool?>(nil)

    private static func adminPool() throws -> PostgresPool {
        try admin.withLock { pool in
            if let pool { return pool }
            let made = try PostgresPool(location: PostgresLocation(url: try serverURL()), size: 4)
            pool = made
            return made
        }
    }

    /// A new, empty database with the core schema and the steps `migrations` adds, and a pool on it.
    public static func freshDatabase(_ migrations: (inout PostgresMigrator) -> Void = { _ in }) async throws -> PostgresPool {
        let url = try serverURL()
        let admin = try adminPool()
        let name = "test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try await admin.query("CREATE DATABASE \(unescaped: name)")
        let location = try PostgresLocation(url: url.replacingOccurrences(of: "/\(try PostgresLocation(url: url).database)", with: "/\(name)"))
        let pool = try PostgresPool(location: location, size: 4)
        var migrator = PostgresSchema.migrator
        migrations(&migrator)
        try await migrator.migrate(pool)
        return pool
    }

    private static func startPrivateServer() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let script = root.appendingPathComponent("Scripts/cluster").path
        let folder = root.appendingPathComponent(".build/test-postgres").path
        // The server the script starts outlives it and keeps its output, so the output goes to a file.
        let (status, output) = try TestProcess.run([script, "postgres", "--folder", folder])
        let url = output.trimmingCharacters(in: .whitespacesAndNewlines)
        guard status == 0, PostgresLocation.isURL(url) else {
            throw PostgresStoreError("Scripts/cluster postgres failed (exit status \(status)): \(url)")
        }
        return url
    }
}
