import Foundation
import GondolaDomain
import GondolaHub
import GondolaProtocol
import Logging
import Synchronization

/// Forms on the push-repository pattern: the server owns each schema, checks every value
/// against its field, stores it as the document's next version and publishes it on
/// `form:<doc>` with the fields that became visible or hidden. Edits of a document are
/// ordered by its lock (`KeyedLocks`: in the process, or in PostgreSQL across a
/// cluster's nodes), so its versions and pushes follow each other while other documents
/// are edited in parallel; a value set from an older `base_version` than the field's last
/// change is refused (108) instead of overwriting it, while edits of different fields
/// merge. Schemas and code tables are kept in memory; in a cluster a node that stores
/// one tells the others, which read them again.
public final class FormService: Sendable {
    static let maxDocsListed = 100
    static let maxSharesPerDoc = 50
    static let channelPrefix = "form:"

    let node: Node
    let repository: any FormRepository
    let codeTables: CodeTables
    let logger: Logger
    /// Every schema version, by id then version.
    private let schemas = Mutex<[String: [Int: FormSchema]]>([:])
    private let editLocks: any KeyedLocks
    /// Reads of the catalog after another node changed it, in the order the bus brought them.
    private let catalogReads: SerialJobs
    static let catalogTopic = "forms.catalog"

    init(node: Node, repository: any FormRepository, locks: any KeyedLocks, logger: Logger) async throws {
        self.node = node
        self.repository = repository
        self.codeTables = CodeTables { name in try await repository.codeTables(name: name).first }
        self.catalogReads = SerialJobs(name: "forms.catalog replicas", logger: logger)
        self.editLocks = locks
        self.logger = logger
        try await reloadCatalog()
    }

    /// Reads the catalog again when another node of a cluster changed it, and when the node (re)gains the bus.
    func follow(in registrations: inout NodeRegistrations) {
        registrations.reloadOnChange(
            topic: Self.catalogTopic,
            FormCatalogChange.self,
            effect: "reads the schemas and code tables again from the shared database", through: catalogReads
        ) { [weak self] in await self?.reloadCatalogLogged() }
    }

    /// Reads every code table and schema version from the repository.
    private func reloadCatalog() async throws {
        for body in try await repository.codeTables(name: nil) {
            codeTables.put(try CodeTable.parse(try RequestFields(try JSONParser.parse(body))))
        }
        var loaded: [String: [Int: FormSchema]] = [:]
        for (id, version, body) in try await repository.schemas(id: nil, after: 0) {
            loaded[id, default: [:]][version] = try await FormSchema.parse(try JSONParser.parse(body), version: version, codeTables: codeTables)
        }
        schemas.withLock { $0 = loaded }
    }

    private func reloadCatalogLogged() async {
        do {
            try await reloadCatalog()
        } catch {
            logger.error("reading the form schemas again failed", metadata: ["error": "\(error)"])
        }
    }

    // MARK: Schemas and code tables

    /// Stores a code table (replacing one of the same name).
    func putCodeTable(_ table: CodeTable) async throws(HubError) -> CodeTable {
        try await databaseWrite { try await repository.putCodeTable(name: table.name, body: table.json.text) }
        codeTables.put(table)
        node.replicate(topic: Self.catalogTopic, FormCatalogChange.codeTable(table.name))
        return table
    }

    /// Checks and stores a schema as a new version of its id (the same body again keeps
    /// the version). Documents keep the version they were created with.
    func putSchema(_ json: JSON) async throws(HubError) -> FormSchema {
        let checked = try await FormSchema.parse(json, version: 0, codeTables: codeTables)
        let (version, _) = try await databaseWrite { try await repository.putSchema(id: checked.id, body: json.text, now: unixMilliseconds()) }
        let schema = try await FormSchema.parse(json, version: version, codeTables: codeTables)
        schemas.withLock { $0[schema.id, default: [:]][version] = schema }
        node.replicate(topic: Self.catalogTopic, FormCatalogChange.schema(schema.id))
        return schema
    }

    /// A schema's given version, or its latest. The latest, and a given version this node
    /// has not heard of, are asked of the database first: another node of a cluster may
    /// have stored a newer version a moment ago.
    func schema(_ id: String, version: Int? = nil) async throws(HubError) -> FormSchema {
        let lookUp = {
            self.schemas.withLock { versions -> FormSchema? in
                guard let all = versions[id] else { return nil }
                return version.map { all[$0] } ?? all.values.max { $0.version < $1.version }
            }
        }
        var found = version == nil ? nil : lookUp()
        if found == nil {
            try await readNewerVersions(of: id)
            found = lookUp()
        }
        guard let found else { throw .badRequest("no form schema '\(id)'\(version.map { " version \($0)" } ?? "")") }
        return found
    }

    /// Reads the versions of schema `id` newer than this node's latest.
    private func readNewerVersions(of id: String) async throws(HubError) {
        let latest = schemas.withLock { $0[id]?.keys.max() ?? 0 }
        let newer = try await databaseRead { try await repository.schemas(id: id, after: latest) }
        guard !newer.isEmpty else { return }
        var parsed: [FormSchema] = []
        for (_, version, body) in newer {
            await parsed.append(try databaseRead { try await FormSchema.parse(try JSONParser.parse(body), version: version, codeTables: codeTables) })
        }
        schemas.withLock { versions in for schema in parsed { versions[id, default: [:]][schema.version] = schema } }
    }

    var schemaIDs: [String] { schemas.withLock { $0.keys.sorted() } }

    // MARK: Documents

    /// A new draft of the latest version of `schemaID`, owned by `user`.
    func create(schema schemaID: String, by user: String) async throws(HubError) -> (FormDoc, FormSchema) {
        let schema = try await schema(schemaID)
        let now = unixMilliseconds()
        let doc = FormDoc(
            id: RandomID.make("form-"), schemaID: schema.id, schemaVersion: schema.version, owner: user, state: "draft", version: 0,
            submission: nil, createdAt: now, updatedAt: now, submittedAt: nil)
        try await databaseWrite { try await repository.insert(doc) }
        return (doc, schema)
    }

    /// The document when `user` owns it or it was shared with them; 103 otherwise, the
    /// same whether it exists or not.
    func accessible(_ id: String, by user: String) async throws(HubError) -> FormDoc {
        guard let doc = try await databaseRead({ try await repository.doc(id) }) else { throw .permissionDenied("form \(id) is not yours") }
        guard doc.owner == user else {
            guard try await databaseRead({ try await repository.isShared(id, with: user) }) else {
                throw .permissionDenied("form \(id) is not yours")
            }
            return doc
        }
        return doc
    }

    /// The document with its schema, values and shares.
    func get(_ id: String, by user: String) async throws(HubError) -> FormDocumentAnswer {
        let doc = try await accessible(id, by: user)
        let values = try await databaseRead { try await repository.values(of: id) }
        return await FormDocumentAnswer(
            doc, schema: try schema(doc.schemaID, version: doc.schemaVersion), values: values,
            shared: try databaseRead { try await repository.sharedUsers(of: id) })
    }

    func list(of user: String) async throws(HubError) -> [FormDoc] {
        try await databaseRead { try await repository.docs(of: user, limit: Self.maxDocsListed) }
    }

    /// Sets one field from `baseVersion` (the document version the editor last saw);
    /// answers and publishes the value, the new version and the visibility changes.
    func set(_ id: String, key: String, value: JSON, baseVersion: Int64, by user: String) async throws(HubError) -> FieldChanged {
        try await editing(id) { () throws(HubError) -> FieldChanged in
            let doc = try await accessible(id, by: user)
            guard doc.state == "draft" else { throw .notAvailable("form \(id) is submitted and read-only") }
            let schema = try await schema(doc.schemaID, version: doc.schemaVersion)
            guard let field = schema.fields[key] else { throw .badRequest("key: schema '\(schema.id)' has no field '\(key)'") }
            guard field.editable else { throw .badRequest("key: field '\(key)' is not editable") }
            let stored = try await FieldValidation.check(value, for: field, codeTables: codeTables)
            guard baseVersion <= doc.version else {
                throw .badRequest("base_version: \(baseVersion) is newer than the document's version \(doc.version)")
            }
            var values = try await databaseRead { try await repository.values(of: id) }
            if let current = values[key], current.version > baseVersion {
                throw .notAvailable(
                    "'\(key)' was changed at version \(current.version) by \(current.updatedBy), after base_version \(baseVersion); its value is now \(current.value.text)"
                )
            }
            let before = schema.visibleKeys(FormValue.present(values))
            let version = doc.version + 1
            let now = unixMilliseconds()
            try await databaseWrite { try await repository.set(key, to: stored, in: id, version: version, by: user, now: now) }
            values[key] = FormValue(value: stored, version: version, updatedBy: user)
            let after = schema.visibleKeys(FormValue.present(values))
            let order = { (keys: Set<String>) in keys.sorted { schema.position($0) < schema.position($1) } }
            let change = FieldChanged(
                doc: id, key: key, value: stored, version: version, by: user, shown: order(after.subtracting(before)),
                hidden: order(before.subtracting(after)))
            await publish(id, change.json)
            return change
        }
    }

    /// Submits a draft whose shown required fields all have values; the submission keeps
    /// only the shown fields' values. The document is read-only from then on.
    func submit(_ id: String, by user: String) async throws(HubError) -> FormSubmitted {
        try await editing(id) { () throws(HubError) -> FormSubmitted in
            let doc = try await accessible(id, by: user)
            guard doc.state == "draft" else { throw .notAvailable("form \(id) is already submitted") }
            let schema = try await schema(doc.schemaID, version: doc.schemaVersion)
            let values = await FormValue.present(try databaseRead { try await repository.values(of: id) })
            let missing = schema.missing(values)
            guard missing.isEmpty else { throw .badRequest("required fields without a value: \(missing.joined(separator: ", "))") }
            let visible = schema.visibleKeys(values)
            let kept = values.filter { visible.contains($0.key) }.sorted { schema.position($0.key) < schema.position($1.key) }
            let submission = FormSubmission(
                doc: id, schema: schema.id, schemaVersion: schema.version, submittedBy: user, values: kept.map { ($0.key, $0.value) })
            let version = doc.version + 1
            try await databaseWrite { try await repository.submit(id, submission: submission.json, version: version, now: unixMilliseconds()) }
            let change = FormSubmitted(version: version, submission: submission)
            await publish(id, change.json)
            return change
        }
    }

    /// Deletes a draft; only its owner may.
    func discard(_ id: String, by user: String) async throws(HubError) {
        try await editing(id) { () throws(HubError) in
            let doc = try await accessible(id, by: user)
            guard doc.owner == user else { throw .permissionDenied("only the owner of form \(id) may discard it") }
            guard doc.state == "draft" else { throw .notAvailable("form \(id) is submitted and is kept") }
            try await databaseWrite { try await repository.delete(id) }
            await publish(id, ["type": "discarded", "doc": .string(id)])
        }
    }

    /// Lets `other` read and edit the document; only its owner may share it.
    func share(_ id: String, with other: String, by user: String) async throws(HubError) -> [String] {
        let doc = try await accessible(id, by: user)
        guard doc.owner == user else { throw .permissionDenied("only the owner of form \(id) may share it") }
        guard UserID.isValid(other), other != user else { throw .badRequest("user: expected another user's id, got '\(other)'") }
        let shared = try await databaseRead { try await repository.sharedUsers(of: id) }
        guard shared.count < Self.maxSharesPerDoc || shared.contains(other) else {
            throw .limitExceeded("a form is shared with at most \(Self.maxSharesPerDoc) users")
        }
        try await databaseWrite { try await repository.share(id, with: other) }
        await publish(id, ["type": "shared", "doc": .string(id), "user": .string(other)])
        return try await databaseRead { try await repository.sharedUsers(of: id) }
    }

    /// Runs `body` holding the document's lock.
    private func editing<T: Sendable>(_ doc: String, _ body: () async throws(HubError) -> T) async throws(HubError) -> T {
        try await editLocks.withLock(doc, body)
    }

    /// Publishes a committed change on the document's channel and waits until it is in the
    /// channel's stream: called under the document's lock, which is the cluster's, so the
    /// changes of any node are stored and pushed in version order. A failure is logged
    /// (editors catch up with `form.get`).
    private func publish(_ doc: String, _ data: JSON) async {
        do {
            try await node.publish(channel: Self.channelPrefix + doc, data: Payload(data))
        } catch {
            logger.error("form change not published", metadata: ["doc": "\(doc)", "error": "\(error)"])
        }
    }
}

/// `forms.catalog`: a schema or a code table one node stored; the others read the catalog again.
enum FormCatalogChange: ReplicaPayload {
    case schema(String)
    case codeTable(String)

    init(_ fields: RequestFields) throws(HubError) {
        let schema: RequestFields.Reader<FormCatalogChange> = { fields throws(HubError) in
            FormCatalogChange.schema(try fields.noting("a stored schema's id").string("schema", maxLength: .max))
        }
        let codeTable: RequestFields.Reader<FormCatalogChange> = { fields throws(HubError) in
            FormCatalogChange.codeTable(try fields.noting("a stored code table's name").string("code_table", maxLength: .max))
        }
        self = try fields.oneOf(
            ["schema": schema, "code_table": codeTable], ifNone: "schema or code_table is required",
            ifSeveral: "give schema or code_table, not both")
    }

    var json: JSON {
        switch self {
        case let .schema(id): ["schema": .string(id)]
        case let .codeTable(name): ["code_table": .string(name)]
        }
    }
}
