import GondolaDomain
import GondolaHub
import GondolaProtocol

/// The forms RPC methods: `form.schemas`, `form.schema`, `form.code_table`, `form.create`,
/// `form.get`, `form.list`, `form.set`, `form.submit`, `form.discard`, `form.share`.
extension FormService {
    func registerRPC(in registrations: inout NodeRegistrations) {
        registrations.register("form.schemas", NoFields.self, SchemaList.self, rules: "", formSchemas)
        registrations.register("form.schema", SchemaReference.self, SchemaAnswer.self, rules: "the latest version without `version`", formSchema)
        registrations.register("form.code_table", CodeTableReference.self, CodeTableAnswer.self, rules: "", formCodeTable)
        registrations.register(
            "form.create", SchemaReference.self, FormDocumentAnswer.self, rules: "a draft of the schema's latest version, owned by the caller",
            formCreate)
        registrations.register("form.get", DocReference.self, FormDocumentAnswer.self, rules: "", formGet)
        registrations.register("form.list", NoFields.self, FormList.self, rules: "", formList)
        registrations.register(
            "form.set", FieldChange.self, FieldChanged.self,
            rules: "the change as pushed on `form:<doc>`; 108 on a conflict, 107 for a value that does not fit", formSet)
        registrations.register("form.submit", DocReference.self, FormSubmitted.self, rules: "107 listing required fields still missing", formSubmit)
        registrations.register("form.discard", DocReference.self, FormChange.self, rules: "the owner only, drafts only", formDiscard)
        registrations.register("form.share", DocShare.self, FormChange.self, rules: "the owner only; at most 50 users", formShare)
    }

    /// Answers `form.schemas`.
    func formSchemas(_: RPCContext, _: NoFields) async throws -> SchemaList {
        var list: [SchemaSummary] = []
        for id in schemaIDs { list.append(SchemaSummary(schema: try await schema(id))) }
        return SchemaList(schemas: list)
    }

    /// Answers `form.schema`.
    func formSchema(_: RPCContext, _ request: SchemaReference) async throws -> SchemaAnswer {
        SchemaAnswer(schema: try await schema(request.schema, version: request.version))
    }

    /// Answers `form.code_table`.
    func formCodeTable(_: RPCContext, _ request: CodeTableReference) async throws -> CodeTableAnswer {
        guard let table = try await codeTables.table(request.name) else {
            throw HubError.badRequest("name: no code table '\(request.name)'")
        }
        return CodeTableAnswer(json: table.json)
    }

    /// Answers `form.create`.
    func formCreate(_ context: RPCContext, _ request: SchemaReference) async throws -> FormDocumentAnswer {
        let (doc, schema) = try await create(schema: request.schema, by: context.user)
        return FormDocumentAnswer(doc, schema: schema, values: [:], shared: [])
    }

    /// Answers `form.get`.
    func formGet(_ context: RPCContext, _ request: DocReference) async throws -> FormDocumentAnswer {
        try await get(request.doc, by: context.user)
    }

    /// Answers `form.list`.
    func formList(_ context: RPCContext, _: NoFields) async throws -> FormList {
        FormList(forms: try await list(of: context.user))
    }

    /// Answers `form.set`.
    func formSet(_ context: RPCContext, _ request: FieldChange) async throws -> FieldChanged {
        try await set(request.doc, key: request.key, value: request.value, baseVersion: request.baseVersion, by: context.user)
    }

    /// Answers `form.submit`.
    func formSubmit(_ context: RPCContext, _ request: DocReference) async throws -> FormSubmitted {
        try await submit(request.doc, by: context.user)
    }

    /// Answers `form.discard`.
    func formDiscard(_ context: RPCContext, _ request: DocReference) async throws -> FormChange {
        try await discard(request.doc, by: context.user)
        return FormChange(doc: request.doc, sharedWith: nil)
    }

    /// Answers `form.share`.
    func formShare(_ context: RPCContext, _ request: DocShare) async throws -> FormChange {
        FormChange(doc: request.doc, sharedWith: try await share(request.doc, with: request.user, by: context.user))
    }
}

/// The assessment RPC methods: `assessment.flow`, `assessment.answer`, `assessment.submit`.
extension AssessmentService {
    func registerRPC(in registrations: inout NodeRegistrations) {
        registrations.register("assessment.flow", NoFields.self, AssessmentFlow.self, rules: "", assessmentFlow)
        registrations.register(
            "assessment.answer", AssessmentAnswer.self, AssessmentAnswered.self, rules: "also pushed on `personal:#<user>`", assessmentAnswer)
        registrations.register(
            "assessment.submit", AssessmentReference.self, AssessmentSubmitted.self, rules: "107 listing unanswered questions", assessmentSubmit)
    }

    /// Answers `assessment.flow`.
    func assessmentFlow(_ context: RPCContext, _: NoFields) async throws -> AssessmentFlow {
        try await flow(of: context.user)
    }

    /// Answers `assessment.answer`.
    func assessmentAnswer(_ context: RPCContext, _ request: AssessmentAnswer) async throws -> AssessmentAnswered {
        try await answer(request.assessment, question: request.question, value: request.value, by: context.user)
    }

    /// Answers `assessment.submit`.
    func assessmentSubmit(_ context: RPCContext, _ request: AssessmentReference) async throws -> AssessmentSubmitted {
        try await submit(request.assessment, by: context.user)
    }
}

/// `form.schema` and `form.create`: `{schema, version?}` (`form.create` takes the latest).
struct SchemaReference: RequestContract {
    let schema: String
    let version: Int?
    init(_ fields: RequestFields) throws(HubError) {
        version = try fields.noting("the latest when absent").optionalInteger("version", in: 1...1_000_000).map { Int($0) }
        schema = try fields.string("schema", maxLength: 64)
    }
}

/// `form.code_table`: `{name}`.
struct CodeTableReference: RequestContract {
    let name: String
    init(_ fields: RequestFields) throws(HubError) { name = try fields.string("name", maxLength: 64) }
}

/// `{doc}`: one form document.
struct DocReference: RequestContract {
    let doc: String
    init(_ fields: RequestFields) throws(HubError) { doc = try fields.string("doc", maxLength: 64) }
}

/// `form.set`: `{doc, key, value, base_version}`; `value: null` clears the field.
struct FieldChange: RequestContract {
    let doc: String
    let key: String
    let value: JSON
    let baseVersion: Int64
    init(_ fields: RequestFields) throws(HubError) {
        doc = try fields.string("doc", maxLength: 64)
        key = try fields.string("key", maxLength: 64)
        value = try fields.noting("fits the field's type; null clears it").nullableValue("value")
        baseVersion = try fields.noting("the field's version the change is based on").integer("base_version", in: 0...Int64.max)
    }
}

/// `form.share`: `{doc, user}`.
struct DocShare: RequestContract {
    let doc: String
    let user: String
    init(_ fields: RequestFields) throws(HubError) {
        doc = try fields.string("doc", maxLength: 64)
        user = try fields.string("user", maxLength: 64)
    }
}

/// `{assessment}`.
struct AssessmentReference: RequestContract {
    let assessment: String
    init(_ fields: RequestFields) throws(HubError) { assessment = try fields.string("assessment", maxLength: 64) }
}

/// `assessment.answer`: `{assessment, question, value}`, an option's value.
struct AssessmentAnswer: RequestContract {
    let assessment: String
    let question: String
    let value: JSON
    init(_ fields: RequestFields) throws(HubError) {
        assessment = try fields.string("assessment", maxLength: 64)
        question = try fields.string("question", maxLength: 64)
        value = try fields.noting("an option's value, a number or a string").anyValue("value")
        guard value.isScalarAnswer else { throw .badRequest("value: expected an option's value (a number or a string)") }
    }
}

/// `form:<doc>`: the changes of one document, a durable stream that its owner and the
/// users it was shared with may subscribe to and recover from after a reconnect.
struct FormChannel: ChannelProvider {
    static let options = NamespaceOptions.durableStream("form", size: 1_000, ttl: .seconds(30 * 86_400))
    let forms: FormService

    func subscribe(_ subscription: ProvidedSubscription, attach: (RawJSON?) throws(HubError) -> Void) async throws(HubError) {
        _ = try await forms.accessible(subscription.channel.key, by: subscription.user)
        try attach(nil)
    }

    func vacated(channel: ChannelName) {}
}
