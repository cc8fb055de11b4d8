import Foundation
import GRDB
import GondolaDomain
import GondolaHub
import GondolaPostgres
import GondolaProtocol

/// Structured input as a domain: typed forms with dependencies edited live by several
/// people (the inspection app), and assessments assigned to patients and answered as one
/// flow (the patient app).
public struct FormsDomain: Domain {
    public let name = "forms"
    public var namespaces: Set<String> { ["form"] }

    static let folder = DomainSettingKey.text(
        "forms", default: "forms",
        doc:
            "the folder of form schemas (`*.json`), code tables (`code-tables.json`) and assessments (`assessments/*.json`) read at start; a missing folder loads nothing, a bad file stops the start naming it"
    )
    public var settingKeys: [ConfigurationKeyInfo] { [Self.folder.info] }
    let settings: DomainSettings

    public init(settings: DomainSettings) {
        self.settings = settings
    }

    public func registerMigrations(in migrator: inout DatabaseMigrator) {
        FormsSchema.registerMigrations(in: &migrator)
    }

    public func registerPostgresMigrations(in migrator: inout PostgresMigrator) {
        FormsPostgresSchema.register(in: &migrator)
    }

    public func checkSettings() throws(DomainSetupError) { _ = try settings.value(of: Self.folder) }

    public func install(in context: DomainContext) async throws -> InstalledDomain {
        let folder = try settings.value(of: Self.folder)
        let (formRepository, assessmentRepository) = Self.repositories(context.storage)
        let forms: FormService
        let assessments: AssessmentService
        do {
            forms = try await FormService(
                node: context.node, repository: formRepository, locks: try context.storage.keyedLocks(scope: "form"),
                logger: context.logger)
            assessments = try await AssessmentService(
                node: context.node, repository: assessmentRepository,
                locks: try context.storage.keyedLocks(scope: "assessment"), notices: context.notices,
                logger: context.logger)
        } catch {
            throw DomainSetupError("cannot load the stored forms: \(error)")
        }
        try await FormsFolder(path: folder).load(into: forms, assessments: assessments)
        var registrations = NodeRegistrations()
        forms.follow(in: &registrations)
        assessments.follow(in: &registrations)
        forms.registerRPC(in: &registrations)
        assessments.registerRPC(in: &registrations)
        registrations.provide(FormChannel.options, by: FormChannel(forms: forms))
        var serverMethods = ServerAPIMethods()
        forms.registerServerAPI(in: &serverMethods)
        assessments.registerServerAPI(in: &serverMethods)
        return InstalledDomain(service: forms, registrations: registrations, serverMethods: serverMethods)
    }
}

extension FormsDomain {
    static func repositories(_ storage: DomainStorage) -> (any FormRepository, any AssessmentRepository) {
        switch storage {
        case let .sqlite(database): return (SQLiteFormRepository(database: database), SQLiteAssessmentRepository(database: database))
        case let .postgres(pool, _): return (PostgresFormRepository(pool: pool), PostgresAssessmentRepository(pool: pool))
        }
    }
}

/// The forms server API methods: `form_schema_put`, `form_code_table_put`.
extension FormService {
    func registerServerAPI(in api: inout ServerAPIMethods) {
        api.register("form_schema_put", SchemaDocument.self, SchemaStored.self, rules: "", formSchemaPut)
        api.register(
            "form_code_table_put", CodeTableDocument.self, CodeTableAnswer.self, rules: "the stored table, as `form.code_table` answers it",
            formCodeTablePut)
    }

    /// Answers `form_schema_put`.
    func formSchemaPut(_ request: SchemaDocument) async throws(HubError) -> SchemaStored {
        let schema = try await putSchema(request.json)
        return SchemaStored(schema: schema)
    }

    /// Answers `form_code_table_put`.
    func formCodeTablePut(_ request: CodeTableDocument) async throws(HubError) -> CodeTableAnswer {
        CodeTableAnswer(json: try await putCodeTable(request.table).json)
    }
}

/// The assessment server API methods: `assessment_put`, `assessment_assign`, `assessment_submissions`.
extension AssessmentService {
    func registerServerAPI(in api: inout ServerAPIMethods) {
        api.register("assessment_put", AssessmentDocument.self, AssessmentStored.self, rules: "its id and number of questions", assessmentPut)
        api.register(
            "assessment_assign", AssessmentAssignment.self, AssessmentAssigned.self,
            rules: "assigning a submitted one starts it over; the user is told on `personal:#<user>`", assessmentAssign)
        api.register("assessment_submissions", SubmissionQuery.self, SubmissionList.self, rules: "", assessmentSubmissions)
    }

    /// Answers `assessment_put`.
    func assessmentPut(_ request: AssessmentDocument) async throws(HubError) -> AssessmentStored {
        let assessment = try await put(request.assessment, body: request.json)
        return AssessmentStored(assessment: assessment)
    }

    /// Answers `assessment_assign`.
    func assessmentAssign(_ request: AssessmentAssignment) async throws(HubError) -> AssessmentAssigned {
        try await assign(request.assessment, to: request.user)
    }

    /// Answers `assessment_submissions`.
    func assessmentSubmissions(_ request: SubmissionQuery) async throws(HubError) -> SubmissionList {
        SubmissionList(submissions: try await submissions(user: request.user, assessment: request.assessment))
    }
}

/// `form_schema_put`: the body is the schema, `{id, title, sections: [{key, title, fields}]}`;
/// the fields are checked by `FormField` (see the forms page).
struct SchemaDocument: RequestContract {
    /// The schema as given (checked when it is stored, against the code tables).
    let json: JSON
    init(_ fields: RequestFields) throws(HubError) {
        // The outline is checked here, each field when the schema is stored (against the code tables).
        _ = try SchemaOutline(fields)
        json = fields.json
    }
}

/// `form_code_table_put`: `{name, values: [{code, label}]}`.
struct CodeTableDocument: RequestContract {
    let table: CodeTable
    init(_ fields: RequestFields) throws(HubError) { table = try CodeTable.parse(fields) }
}

/// `assessment_put`: the body is the assessment, `{id, title, display_name, questions}`.
struct AssessmentDocument: RequestContract {
    let assessment: Assessment
    /// The body as given, which is stored.
    let json: JSON
    init(_ fields: RequestFields) throws(HubError) {
        json = fields.json
        assessment = try Assessment.parse(fields)
    }
}

/// `assessment_assign`: `{user, assessment}`.
struct AssessmentAssignment: RequestContract {
    let user: String
    let assessment: String
    init(_ fields: RequestFields) throws(HubError) {
        assessment = try fields.string("assessment", maxLength: 64)
        user = try fields.string("user", maxLength: 64)
    }
}

/// `assessment_submissions`: `{user?, assessment?}`.
struct SubmissionQuery: RequestContract {
    let user: String?
    let assessment: String?
    init(_ fields: RequestFields) throws(HubError) {
        user = try fields.optionalString("user", maxLength: 64)
        assessment = try fields.optionalString("assessment", maxLength: 64)
    }
}

/// The forms folder read at start: `code-tables.json` (`{"tables": [...]}`), every other
/// `*.json` a schema (stored as a new version when it changed), `assessments/*.json`.
/// A missing folder loads nothing; a bad file (a member its contract does not list too)
/// stops the start naming it.
struct FormsFolder {
    let path: String

    func load(into forms: FormService, assessments: AssessmentService) async throws(DomainSetupError) {
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
        if files.contains("code-tables.json") {
            let tables = try read("code-tables.json")
            guard case let .array(list)? = tables["tables"] else { throw DomainSetupError("\(path)/code-tables.json: expected {\"tables\": [...]}") }
            for table in list {
                try await apply("code-tables.json") { () throws(HubError) in
                    _ = try await forms.putCodeTable(try CodeTableDocument.decode(table).table)
                }
            }
        }
        for file in files where file != "code-tables.json" {
            let schema = try read(file)
            try await apply(file) { () throws(HubError) in _ = try await forms.putSchema(try SchemaDocument.decode(schema).json) }
        }
        let folder = path + "/assessments"
        for file in ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter({ $0.hasSuffix(".json") }).sorted() {
            let assessment = try read("assessments/" + file)
            try await apply("assessments/" + file) { () throws(HubError) in
                let document = try AssessmentDocument.decode(assessment)
                _ = try await assessments.put(document.assessment, body: document.json)
            }
        }
    }

    private func read(_ file: String) throws(DomainSetupError) -> JSON {
        guard let data = FileManager.default.contents(atPath: path + "/" + file) else { throw DomainSetupError("cannot read \(path)/\(file)") }
        do { return try JSONParser.parse(Array(data)) } catch { throw DomainSetupError("\(path)/\(file): \(error)") }
    }

    private func apply(_ file: String, _ body: () async throws(HubError) -> Void) async throws(DomainSetupError) {
        do { try await body() } catch { throw DomainSetupError("\(path)/\(file): \(error.protocolError.message)") }
    }
}
