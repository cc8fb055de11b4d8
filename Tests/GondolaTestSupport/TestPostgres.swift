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

    /// A new, empty database with the core schema and the steps `migrations` adds, and a pool on it.
    public static func freshDatabase(_ migrations: (inout PostgresMigrator) -> Void = { _ in }) throws -> PostgresPool {
        let url = try serverURL()
        let admin = try PostgresPool(location: PostgresLocation(url: url), size: 1)
        let name = "test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try admin.query("CREATE DATABASE \(unescaped: name)")
        let location = try PostgresLocation(url: url.replacingOccurrences(of: "/\(try PostgresLocation(url: url).database)", with: "/\(name)"))
        let pool = try PostgresPool(location: location, size: 4)
        var migrator = PostgresSchema.migrator
        migrations(&migrator)
        try migrator.migrate(pool)
        return pool
    }

    private static func startPrivateServer() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let script = root.appendingPathComponent("Scripts/cluster").path
        let folder = root.appendingPathComponent(".build/test-postgres").path
        // The output goes to a file, and the script is waited for with waitpid: the server
        // it starts inherits the descriptor and outlives it, so a pipe would never end.
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-test-postgres-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let command = "'\(script)' postgres --folder '\(folder)' > '\(outputPath)'"
        var pid: pid_t = 0
        let words: [String] = ["/bin/sh", "-c", command]
        let arguments: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { arguments.forEach { free($0) } }
        let spawned = posix_spawn(&pid, "/bin/sh", nil, nil, arguments, environ)
        guard spawned == 0 else { throw PostgresStoreError("cannot run \(script): error \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let url = String(decoding: FileManager.default.contents(atPath: outputPath) ?? Data(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard status == 0, PostgresLocation.isURL(url) else {
            throw PostgresStoreError("Scripts/cluster postgres failed (wait status \(status)): \(url)")
        }
        return url
    }
}

