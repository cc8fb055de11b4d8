import GondolaPostgres
import GondolaProtocol
import PostgresNIO

/// Form schemas, code tables, documents, values and shares in PostgreSQL (cluster mode).
/// A schema's next version is numbered under a transaction lock on its id, so nodes that
/// load the same folder at the same time store each body once.
struct PostgresFormRepository: FormRepository {
    let pool: PostgresPool

    private static let docColumns = "id, schema_id, schema_version, owner, state, version, submission, created_at_ms, updated_at_ms, submitted_at_ms"

    func schemas(id: String?, after version: Int) async throws -> [(id: String, version: Int, body: String)] {
        try await pool.query(
            """
            SELECT id, version, body FROM form_schema WHERE (\(id)::text IS NULL OR id = \(id)) AND version > \(Int32(clamping: version))
            ORDER BY id, version
            """
        ).map { row in
            let (id, version, body) = try row.decode((String, Int32, String).self)
            return (id, Int(version), body)
        }
    }

    func putSchema(id: String, body: String, now: Int64) async throws -> (version: Int, new: Bool) {
        try await pool.transaction { connection in
            try await pool.run("SELECT pg_advisory_xact_lock(hashtext('form_schema'), hashtext(\(id)))", on: connection)
            let latest = try await pool.run("SELECT version, body FROM form_schema WHERE id = \(id) ORDER BY version DESC LIMIT 1", on: connection)
                .first?.decode((Int32, String).self)
            if let latest, latest.1 == body { return (Int(latest.0), false) }
            let version = Int32(latest?.0 ?? 0) + 1
            try await pool.run(
                "INSERT INTO form_schema (id, version, body, created_at_ms) VALUES (\(id), \(version), \(body), \(now))", on: connection)
            return (Int(version), true)
        }
    }

    func codeTables(name: String?) async throws -> [String] {
        try await pool.query("SELECT body FROM form_code_table WHERE \(name)::text IS NULL OR name = \(name) ORDER BY name").map {
            try $0.decode(String.self)
        }
    }

    func putCodeTable(name: String, body: String) async throws {
        try await pool.query(
            "INSERT INTO form_code_table (name, body) VALUES (\(name), \(body)) ON CONFLICT (name) DO UPDATE SET body = EXCLUDED.body")
    }

    func insert(_ doc: FormDoc) async throws {
        try await pool.query(
            """
            INSERT INTO form_doc (id, schema_id, schema_version, owner, state, version, created_at_ms, updated_at_ms)
            VALUES (\(doc.id), \(doc.schemaID), \(Int32(doc.schemaVersion)), \(doc.owner), \(doc.state), \(doc.version), \(doc.createdAt), \(doc.updatedAt))
            """)
    }

    func doc(_ id: String) async throws -> FormDoc? {
        try await pool.query("SELECT \(unescaped: Self.docColumns) FROM form_doc WHERE id = \(id)").first.map(Self.doc)
    }

    func values(of doc: String) async throws -> [String: FormValue] {
        var values: [String: FormValue] = [:]
        for row in try await pool.query("SELECT key, value, version, updated_by FROM form_value WHERE doc_id = \(doc)") {
            let (key, value, version, updatedBy) = try row.decode((String, String, Int64, String).self)
            values[key] = FormValue(stored: value, version: version, updatedBy: updatedBy)
        }
        return values
    }

    func set(_ key: String, to value: JSON, in doc: String, version: Int64, by user: String, now: Int64) async throws {
        try await pool.transaction { connection in
            try await pool.run(
                """
                INSERT INTO form_value (doc_id, key, value, version, updated_by, updated_at_ms) VALUES (\(doc), \(key), \(value.text), \(version), \(user), \(now))
                ON CONFLICT (doc_id, key) DO UPDATE SET value = EXCLUDED.value, version = EXCLUDED.version,
                  updated_by = EXCLUDED.updated_by, updated_at_ms = EXCLUDED.updated_at_ms
                """, on: connection)
            try await pool.run("UPDATE form_doc SET version = \(version), updated_at_ms = \(now) WHERE id = \(doc)", on: connection)
        }
    }

    func submit(_ doc: String, submission: JSON, version: Int64, now: Int64) async throws {
        try await pool.query(
            """
            UPDATE form_doc SET state = 'submitted', submission = \(submission.text), version = \(version), submitted_at_ms = \(now), updated_at_ms = \(now)
            WHERE id = \(doc)
            """)
    }

    func delete(_ doc: String) async throws {
        try await pool.query("DELETE FROM form_doc WHERE id = \(doc)")
    }

    func share(_ doc: String, with user: String) async throws {
        try await pool.query("INSERT INTO form_share (doc_id, user_id) VALUES (\(doc), \(user)) ON CONFLICT DO NOTHING")
    }

    func sharedUsers(of doc: String) async throws -> [String] {
        try await pool.query("SELECT user_id FROM form_share WHERE doc_id = \(doc) ORDER BY user_id").map { try $0.decode(String.self) }
    }

    func isShared(_ doc: String, with user: String) async throws -> Bool {
        try await pool.query("SELECT EXISTS (SELECT 1 FROM form_share WHERE doc_id = \(doc) AND user_id = \(user))").first?.decode(Bool.self) ?? false
    }

    func docs(of user: String, limit: Int) async throws -> [FormDoc] {
        try await pool.query(
            """
            SELECT \(unescaped: Self.docColumns) FROM form_doc WHERE owner = \(user) OR id IN (SELECT doc_id FROM form_share WHERE user_id = \(user))
            ORDER BY updated_at_ms DESC LIMIT \(Int64(limit))
            """
        ).map(Self.doc)
    }

    private static func doc(_ row: PostgresRow) throws -> FormDoc {
        let (id, schemaID, schemaVersion, owner, state, version, submission, createdAt, updatedAt, submittedAt) =
            try row.decode((String, String, Int32, String, String, Int64, String?, Int64, Int64, Int64?).self)
        return FormDoc(
            id: id, schemaID: schemaID, schemaVersion: Int(schemaVersion), owner: owner, state: state, version: version,
            submission: FormDoc.submission(submission), createdAt: createdAt, updatedAt: updatedAt, submittedAt: submittedAt)
    }
}
