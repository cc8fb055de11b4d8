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

    /// `forms`: the folder of form schemas (`*.json`), code tables (`code-tables.json`)
    /// and assessments (`assessments/*.json`), loaded at start.
    public let settingKeys = ["forms"]
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

    public func install(in context: DomainContext) async throws -> InstalledDomain {
        let folder = try settings.string("forms", default: "forms")
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
        FormsRPC(forms: forms, assessments: assessments).register(in: &registrations)
        registrations.provide(FormChannel.options, by: FormChannel(forms: forms))
        return InstalledDomain(service: forms, registrations: registrations, serverMethods: FormsServerAPI.methods(forms, assessments))
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

/// The forms domain's server API methods: `form_schema_put` (the body is the schema),
/// `form_code_table_put` (`{name, values: [{code, label}]}`), `assessment_put` (the body
/// is the assessment), `assessment_assign {user, assessment}` and
/// `assessment_submissions {user?, assessment?}`.
enum FormsServerAPI {
    static func methods(_ forms: FormService, _ assessments: AssessmentService) -> [String: InstalledDomain.ServerMethod] {
        [
            "form_schema_put": { body throws(HubError) in
                let schema = try await forms.putSchema(body)
                return ["schema": .string(schema.id), "version": .int(Int64(schema.version))]
            },
            "form_code_table_put": { body throws(HubError) in try await forms.putCodeTable(body).json },
            "assessment_put": { body throws(HubError) in
                let assessment = try await assessments.put(body)
                return ["assessment": .string(assessment.id), "questions": .int(Int64(assessment.questions.count))]
            },
            "assessment_assign": { body throws(HubError) in
                let fields = try RequestFields(body)
                return try await assessments.assign(try fields.string("assessment", maxLength: 64), to: try fields.string("user", maxLength: 64))
            },
            "assessment_submissions": { body throws(HubError) in
                let fields = try RequestFields(body)
                return [
                    "submissions": .array(
                        try await assessments.submissions(
                            user: try fields.optionalString("user", maxLength: 64),
                            assessment: try fields.optionalString("assessment", maxLength: 64)))
                ]
            },
        ]
    }
}

/// The forms folder read at start: `code-tables.json` (`{"tables": [...]}`), every other
/// `*.json` a schema (stored as a new version when it changed), `assessments/*.json`.
/// A missing folder loads nothing; a bad file stops the start naming it.
struct FormsFolder {
    let path: String

    func load(into forms: FormService, assessments: AssessmentService) async throws(DomainSetupError) {
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
        if files.contains("code-tables.json") {
            let tables = try read("code-tables.json")
            guard case let .array(list)? = tables["tables"] else { throw DomainSetupError("\(path)/code-tables.json: expected {\"tables\": [...]}") }
            for table in list { try await apply("code-tables.json") { () throws(HubError) in _ = try await forms.putCodeTable(table) } }
        }
        for file in files where file != "code-tables.json" {
            let schema = try read(file)
            try await apply(file) { () throws(HubError) in _ = try await forms.putSchema(schema) }
        }
        let folder = path + "/assessments"
        for file in ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter({ $0.hasSuffix(".json") }).sorted() {
            let assessment = try read("assessments/" + file)
            try await apply("assessments/" + file) { () throws(HubError) in _ = try await assessments.put(assessment) }
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
