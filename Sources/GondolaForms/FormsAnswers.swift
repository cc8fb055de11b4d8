import GondolaHub
import GondolaProtocol

/// A schema as `form.schemas` lists it: its latest version.
struct SchemaSummary: AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("id") { $0.schema.id }, .integer("version") { Int64($0.schema.version) }, .string("title") { $0.schema.title },
    ]
    let schema: FormSchema
}

/// `form.schemas`' answer: the latest version of each schema.
struct SchemaList: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [.objects("schemas", "the latest version of each") { $0.schemas }]
    let schemas: [SchemaSummary]
}

/// `form.schema`'s answer.
struct SchemaAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .integer("version") { Int64($0.schema.version) }, .json("schema", .object, "the schema as stored") { $0.schema.json },
    ]
    let schema: FormSchema
}

/// `form.code_table`'s answer: the table as `form_code_table_put` takes it.
struct CodeTableAnswer: JSONAnswer {
    static let fields: [FieldContract] = CodeTableDocument.fields
    let json: JSON
}

extension FormDoc: AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("id") { $0.id }, .string("schema") { $0.schemaID }, .integer("schema_version") { Int64($0.schemaVersion) },
        .string("owner") { $0.owner }, .string("state", "`draft` or `submitted`") { $0.state }, .integer("version") { $0.version },
        .integer("created_at", "Unix ms") { $0.createdAt }, .integer("updated_at", "Unix ms") { $0.updatedAt },
        .integer("submitted_at", "Unix ms, once submitted", ifAny: { $0.submittedAt }),
    ]
}

/// A form document as `form.create` and `form.get` answer it: the document, its values
/// and what its schema makes of them.
struct FormDocumentAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] =
        FormDoc.members(in: { $0.doc }) + [
            .json("values", .object, "field key → value, in the schema's order") { .object($0.values) },
            .json("field_versions", .object, "field key → the version that last set it") { .object($0.fieldVersions) },
            .strings("visible", "the fields shown, in order") { $0.visible }, .strings("missing", "required fields still empty") { $0.missing },
            .strings("shared_with") { $0.shared },
            .json("submission", .object, "as `form.submit` answered it, once submitted", ifAny: { $0.doc.submission }),
        ]

    let doc: FormDoc
    let values: [(key: String, value: JSON)]
    let fieldVersions: [(key: String, value: JSON)]
    let visible: [String]
    let missing: [String]
    let shared: [String]

    init(_ doc: FormDoc, schema: FormSchema, values: [String: FormValue], shared: [String]) {
        let plain = FormValue.present(values)
        let shown = schema.visibleKeys(plain)
        self.doc = doc
        self.values = plain.sorted { schema.position($0.key) < schema.position($1.key) }.map { ($0.key, $0.value) }
        fieldVersions = values.sorted { schema.position($0.key) < schema.position($1.key) }.map { ($0.key, .int($0.value.version)) }
        visible = schema.order.filter(shown.contains).sorted { schema.position($0) < schema.position($1) }
        missing = schema.missing(plain)
        self.shared = shared
    }
}

/// `form.list`'s answer.
struct FormList: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [.objects("forms", "the caller's and shared documents, newest first, at most 100") { $0.forms }]
    let forms: [FormDoc]
}

/// `form.set`'s answer: the change as pushed on `form:<doc>`.
struct FieldChanged: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("type", "`value`") { _ in "value" }, .string("doc") { $0.doc }, .string("key") { $0.key },
        .json("value", .any, "as stored") { $0.value }, .integer("version", "the document's, after the change") { $0.version },
        .string("by", "who set it") { $0.by }, .strings("shown", "fields the change shows") { $0.shown },
        .strings("hidden", "fields the change hides") { $0.hidden },
    ]
    let doc: String
    let key: String
    let value: JSON
    let version: Int64
    let by: String
    let shown: [String]
    let hidden: [String]
}

/// A submitted document: the shown fields' values, as stored and pushed.
struct FormSubmission: AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("doc") { $0.doc }, .string("schema") { $0.schema }, .integer("schema_version") { Int64($0.schemaVersion) },
        .string("submitted_by") { $0.submittedBy },
        .json("values", .object, "the shown fields' values, in the schema's order") { .object($0.values) },
    ]
    let doc: String
    let schema: String
    let schemaVersion: Int
    let submittedBy: String
    let values: [(key: String, value: JSON)]
}

/// `form.submit`'s answer: the change as pushed on `form:<doc>`.
struct FormSubmitted: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("type", "`submitted`") { _ in "submitted" }, .string("doc") { $0.submission.doc }, .integer("version") { $0.version },
        .object("submission") { $0.submission },
    ]
    let version: Int64
    let submission: FormSubmission
}

/// `form.discard`'s and `form.share`'s answer: the document and what became of it.
struct FormChange: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("doc") { $0.doc }, .boolean("discarded", "`form.discard`", ifAny: { $0.sharedWith == nil ? true : nil }),
        .strings("shared_with", "`form.share`: everyone it is shared with", ifAny: { $0.sharedWith }),
    ]
    let doc: String
    /// nil: discarded.
    let sharedWith: [String]?
}

/// How far a user is through their assessments.
struct AssessmentProgress: AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .integer("answered", "questions answered") { Int64($0.answered) }, .integer("total", "questions assigned") { Int64($0.total) },
    ]
    let answered: Int
    let total: Int
}

/// An assessment in the flow.
struct FlowAssessment: AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("id") { $0.assessment.id }, .string("title") { $0.assessment.title }, .string("display_name") { $0.assessment.displayName },
        .integer("questions") { Int64($0.assessment.questions.count) }, .integer("answered") { Int64($0.answered) },
    ]
    let assessment: Assessment
    let answered: Int
}

/// A question in the flow, numbered across the assessments.
struct FlowQuestion: AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .integer("number", "from 1, across the assessments") { Int64($0.number) }, .string("assessment") { $0.assessment.id },
        .string("assessment_title") { $0.assessment.title }, .string("display_name") { $0.assessment.displayName },
        .string("question") { $0.question.id }, .string("title") { $0.question.title },
        .json("options", .objectArray, "`{title, value}`") { .array($0.question.options.map { ["title": .string($0.title), "value": $0.value] }) },
        .json("answer", .any, "the value given, when answered", ifAny: { $0.answer }),
    ]
    let number: Int
    let assessment: Assessment
    let question: Assessment.Question
    let answer: JSON?
}

/// `assessment.flow`'s answer: the caller's unfinished assessments as one sequence of questions.
struct AssessmentFlow: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .integer("total") { Int64($0.questions.count) }, .integer("answered") { Int64($0.assessments.reduce(0) { $0 + $1.answered }) },
        .objects("assessments") { $0.assessments }, .objects("questions") { $0.questions },
    ]
    let assessments: [FlowAssessment]
    let questions: [FlowQuestion]
}

/// `assessment.answer`'s answer, also pushed on `personal:#<user>`.
struct AssessmentAnswered: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("type", "`assessment.answer`") { _ in "assessment.answer" }, .string("assessment") { $0.assessment },
        .string("question") { $0.question }, .json("value", .any, "one of the question's option values") { $0.value },
        .object("progress") { $0.progress },
    ]
    let assessment: String
    let question: String
    let value: JSON
    let progress: AssessmentProgress
}

/// What `personal:#<user>` is told when an assessment is assigned or submitted.
struct AssessmentProgressPush: AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("type", "`assessment.assigned` or `assessment.submitted`") { $0.type }, .string("assessment") { $0.assessment },
        .object("progress") { $0.progress },
    ]
    let type: String
    let assessment: String
    let progress: AssessmentProgress
}

/// A submitted assessment, as stored and listed for staff.
struct AssessmentSubmission: AnswerObject {
    /// One answer.
    struct Answer: AnswerObject {
        static let members: [AnswerMember<Self>] = [.string("question_id") { $0.question }, .json("value", .any) { $0.value }]
        let question: String
        let value: JSON
    }

    static let members: [AnswerMember<Self>] = [
        .string("assessment_id") { $0.assessment }, .string("patient_id") { $0.patient }, .objects("answers", "in question order") { $0.answers },
        .string("submitted_at", "ISO 8601") { $0.submittedAt },
    ]
    let assessment: String
    let patient: String
    let answers: [Answer]
    let submittedAt: String
}

/// `assessment.submit`'s answer.
struct AssessmentSubmitted: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [.object("submission") { $0.submission }, .object("progress") { $0.progress }]
    let submission: AssessmentSubmission
    let progress: AssessmentProgress
}

/// `form_schema_put`'s answer.
struct SchemaStored: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("schema") { $0.schema.id }, .integer("version", "a changed schema becomes a new version") { Int64($0.schema.version) },
    ]
    let schema: FormSchema
}

/// `assessment_put`'s answer.
struct AssessmentStored: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("assessment") { $0.assessment.id }, .integer("questions") { Int64($0.assessment.questions.count) },
    ]
    let assessment: Assessment
}

/// `assessment_assign`'s answer.
struct AssessmentAssigned: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("user") { $0.user }, .string("assessment") { $0.assessment }, .object("progress") { $0.progress },
    ]
    let user: String
    let assessment: String
    let progress: AssessmentProgress
}

/// `assessment_submissions`' answer.
struct SubmissionList: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .objects("submissions", "newest first, at most 500", as: AssessmentSubmission.self) { $0.submissions }
    ]
    let submissions: [JSON]
}
