import PostgresNIO

/// Named schema steps applied once each, in order, to a PostgreSQL database —
/// the counterpart of GRDB's `DatabaseMigrator` for the cluster mode. Nodes that
/// start together take an advisory lock first, so each step runs exactly once.
public struct PostgresMigrator: Sendable {
    /// One step: its name (recorded in `gondola_migration`) and its SQL statements.
    public struct Migration: Sendable {
        public let name: String
        public let statements: [String]
    }

    public private(set) var migrations: [Migration] = []

    public init() {}

    /// Adds a step; `statements` run in one transaction.
    public mutating func register(_ name: String, _ statements: [String]) {
        precondition(!migrations.contains { $0.name == name }, "migration \(name) registered twice")
        migrations.append(Migration(name: name, statements: statements))
    }

    /// Applies the steps not yet recorded; returns their names.
    @discardableResult
    public func migrate(_ pool: PostgresPool) async throws -> [String] {
        try await pool.transaction { connection in
            // Any constant works; it only has to be the same on every node.
            _ = try await pool.run("SELECT pg_advisory_xact_lock(4711018)", on: connection)
            _ = try await pool.run(
                "CREATE TABLE IF NOT EXISTS gondola_migration (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())", on: connection
            )
            var done = Set<String>()
            for row in try await pool.run("SELECT name FROM gondola_migration", on: connection) {
                done.insert(try row.decode(String.self))
            }
            var applied: [String] = []
            for migration in migrations where !done.contains(migration.name) {
                for statement in migration.statements {
                    _ = try await pool.run(PostgresQuery(unsafeSQL: statement), on: connection)
                }
                _ = try await pool.run("INSERT INTO gondola_migration (name) VALUES (\(migration.name))", on: connection)
                applied.append(migration.name)
            }
            return applied
        }
    }
}
