import GRDB
import GondolaProtocol
import GondolaStore

/// A form document as stored: its schema version, owner, state and version.
struct FormDoc: Sendable, Equatable {
    let id: String
    let schemaID: String
    let schemaVersion: Int
    let owner: String
    var state: String
    var version: Int64
    var submission: JSON?
    let createdAt: Int64
    var updatedAt: Int64
    var submittedAt: Int64?
}

extension FormDoc {
    /// A submission as a repository stores it: JSON text, or nil.
    static func submission(_ stored: String?) -> JSON? {
        stored.flatMap { try? JSONParser.parse($0) }
    }
}

/// A stored value with the document version that last changed it (`null` when it was cleared).
struct FormValue: Sendable, Equatable {
    let value: JSON
    let version: Int64
    let updatedBy: String

    /// A value as a repository stores it: its JSON text (unreadable text reads as `null`).
    init(stored: String, version: Int64, updatedBy: String) {
        self.init(value: (try? JSONParser.parse(stored)) ?? .null, version: version, updatedBy: updatedBy)
    }

    init(value: JSON, version: Int64, updatedBy: String) {
        self.value = value
        self.version = version
        self.updatedBy = updatedBy
    }

    /// The values that are set, without the cleared ones.
    static func present(_ values: [String: FormValue]) -> [String: JSON] {
        values.filter { !$0.value.value.isNull }.mapValues(\.value)
    }
}

/// Where form schemas, code tables, documents, values and shares live.
protocol FormRepository: Sendable {
    /// The stored schema versions' bodies (of `id` only, when given) newer than `version`,
    /// by id and version.
    func schemas(id: String?, after version: Int) async throws -> [(id: String, version: Int, body: String)]
    /// Stores `body` as the next version of schema `id` unless it equals the latest;
    /// answers the version it is stored as.
    func putSchema(id: String, body: String, now: Int64) async throws -> (version: Int, new: Bool)
    /// Every code table's body (the one named `name` only, when given).
    func codeTables(name: String?) async throws -> [String]
    /// Stores a code table, replacing one of the same name.
    func putCodeTable(name: String, body: String) async throws
    func insert(_ doc: FormDoc) async throws
    func doc(_ id: String) async throws -> FormDoc?
    /// The document's values by field key, cleared ones included (as `null`).
    func values(of doc: String) async throws -> [String: FormValue]
    /// Writes a value as the document's next version. A cleared field keeps its row with
    /// `null`, so that the clear has a version a stale edit conflicts with.
    func set(_ key: String, to value: JSON, in doc: String, version: Int64, by user: String, now: Int64) async throws
    /// Marks the document submitted with its submission.
    func submit(_ doc: String, submission: JSON, version: Int64, now: Int64) async throws
    /// Deletes the document with its values and shares.
    func delete(_ doc: String) async throws
    /// Lets `user` read and edit the document (again is nothing).
    func share(_ doc: String, with user: String) async throws
    func sharedUsers(of doc: String) async throws -> [String]
    func isShared(_ doc: String, with user: String) async throws -> Bool
    /// The documents a user owns or was given, newest first, at most `limit`.
    func docs(of user: String, limit: Int) async throws -> [FormDoc]
}

/// Schemas, code tables, documents, values and shares in SQLite.
struct SQLiteFormRepository: FormRepository {
    let database: GondolaDatabase

    // MARK: Schemas and code tables

    func schemas(id: String?, after version: Int) throws -> [(id: String, version: Int, body: String)] {
        try database.pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT id, version, body FROM form_schema WHERE (? IS NULL OR id = ?) AND version > ? ORDER BY id, version",
                arguments: [id, id, version]
            ).map { ($0["id"], $0["version"], $0["body"]) }
        }
    }

    /// Stores `body` as the next version of schema `id` unless it equals the latest;
    /// answers the version it is stored as.
    func putSchema(id: String, body: String, now: Int64) throws -> (version: Int, new: Bool) {
        try database.pool.write { db in
            let latest = try Row.fetchOne(
                db, sql: "SELECT version, body FROM form_schema WHERE id = ? ORDER BY version DESC LIMIT 1", arguments: [id])
            if let latest, latest["body"] as String == body { return (latest["version"], false) }
            let version = (latest?["version"] as Int? ?? 0) + 1
            try db.execute(
                sql: "INSERT INTO form_schema (id, version, body, created_at_ms) VALUES (?, ?, ?, ?)", arguments: [id, version, body, now])
            return (version, true)
        }
    }

    func codeTables(name: String?) throws -> [String] {
        try database.pool.read { db in
            try String.fetchAll(db, sql: "SELECT body FROM form_code_table WHERE ? IS NULL OR name = ? ORDER BY name", arguments: [name, name])
        }
    }

    func putCodeTable(name: String, body: String) throws {
        try database.pool.write { db in
            try db.execute(
                sql: "INSERT INTO form_code_table (name, body) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET body = excluded.body",
                arguments: [name, body])
        }
    }

    // MARK: Documents

    func insert(_ doc: FormDoc) throws {
        try database.pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO form_doc (id, schema_id, schema_version, owner, state, version, created_at_ms, updated_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [doc.id, doc.schemaID, doc.schemaVersion, doc.owner, doc.state, doc.version, doc.createdAt, doc.updatedAt])
        }
    }

    func doc(_ id: String) throws -> FormDoc? {
        try database.pool.read { db in try Row.fetchOne(db, sql: "SELECT * FROM form_doc WHERE id = ?", arguments: [id]).map(Self.doc) }
    }

    func values(of doc: String) throws -> [String: FormValue] {
        try database.pool.read { db in
            var values: [String: FormValue] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT key, value, version, updated_by FROM form_value WHERE doc_id = ?", arguments: [doc]) {
                values[row["key"]] = FormValue(stored: row["value"], version: row["version"], updatedBy: row["updated_by"])
            }
            return values
        }
    }

    /// Writes a value as the document's next version. A cleared field keeps its row with
    /// `null`, so that the clear has a version a stale edit conflicts with.
    func set(_ key: String, to value: JSON, in doc: String, version: Int64, by user: String, now: Int64) throws {
        try database.pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO form_value (doc_id, key, value, version, updated_by, updated_at_ms) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (doc_id, key) DO UPDATE SET value = excluded.value, version = excluded.version,
                      updated_by = excluded.updated_by, updated_at_ms = excluded.updated_at_ms
                    """, arguments: [doc, key, value.text, version, user, now])
            try db.execute(sql: "UPDATE form_doc SET version = ?, updated_at_ms = ? WHERE id = ?", arguments: [version, now, doc])
        }
    }

    func submit(_ doc: String, submission: JSON, version: Int64, now: Int64) throws {
        try database.pool.write { db in
            try db.execute(
                sql: "UPDATE form_doc SET state = 'submitted', submission = ?, version = ?, submitted_at_ms = ?, updated_at_ms = ? WHERE id = ?",
                arguments: [submission.text, version, now, now, doc])
        }
    }

    func delete(_ doc: String) throws {
        try database.pool.write { db in try db.execute(sql: "DELETE FROM form_doc WHERE id = ?", arguments: [doc]) }
    }

    func share(_ doc: String, with user: String) throws {
        try database.pool.write { db in
            try db.execute(sql: "INSERT OR IGNORE INTO form_share (doc_id, user_id) VALUES (?, ?)", arguments: [doc, user])
        }
    }

    func sharedUsers(of doc: String) throws -> [String] {
        try database.pool.read { db in
            try String.fetchAll(db, sql: "SELECT user_id FROM form_share WHERE doc_id = ? ORDER BY user_id", arguments: [doc])
        }
    }

    func isShared(_ doc: String, with user: String) throws -> Bool {
        try database.pool.read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM form_share WHERE doc_id = ? AND user_id = ?)", arguments: [doc, user]) ?? false
        }
    }

    /// The documents a user owns or was given, newest first, at most `limit`.
    func docs(of user: String, limit: Int) throws -> [FormDoc] {
        try database.pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM form_doc WHERE owner = ? OR id IN (SELECT doc_id FROM form_share WHERE user_id = ?)
                    ORDER BY updated_at_ms DESC LIMIT ?
                    """, arguments: [user, user, limit]
            ).map(Self.doc)
        }
    }

    static func doc(_ row: Row) -> FormDoc {
        FormDoc(
            id: row["id"], schemaID: row["schema_id"], schemaVersion: row["schema_version"], owner: row["owner"], state: row["state"],
            version: row["version"], submission: FormDoc.submission(row["submission"]),
            createdAt: row["created_at_ms"], updatedAt: row["updated_at_ms"], submittedAt: row["submitted_at_ms"])
    }
}
