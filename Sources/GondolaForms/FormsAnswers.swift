import GondolaHub
import GondolaProtocol

/// `form.schemas`' answer: the latest version of each schema.
struct SchemaList: JSONAnswer {
    static let fields: [FieldContract] = [
        .required(
            "schemas", .objectArray, "the latest version of each",
            members: [
                .required("id", .string), .required("version", .integer), .required("title", .string),
            ])
    ]
    let json: JSON
}

/// `form.schema`'s answer.
struct SchemaAnswer: JSONAnswer {
    static let fields: [FieldContract] = [.required("version", .integer), .required("schema", .object, "the schema as stored")]
    let json: JSON
}

/// `form.code_table`'s answer.
struct CodeTableAnswer: JSONAnswer {
    static let fields: [FieldContract] = CodeTableDocument.fields
    let json: JSON
}

/// A form document as `form.create` and `form.get` answer it.
struct FormDocumentAnswer: JSONAnswer {
    static let fields: [FieldContract] = [
        .required("id", .string), .required("schema", .string), .required("schema_version", .integer), .required("owner", .string),
        .required("state", .string, "`draft` or `submitted`"), .required("version", .integer), .required("created_at", .integer),
        .required("updated_at", .integer), .optional("submitted_at", .integer), .optional("submission", .string),
        .required("values", .object, "field key → value"),
        .required("field_versions", .object, "field key → the version that last set it"), .required("visible", .stringArray),
        .required("missing", .stringArray, "required fields still empty"), .required("shared_with", .stringArray),
    ]
    let json: JSON
}

/// `form.list`'s answer.
struct FormList: JSONAnswer {
    static let fields: [FieldContract] = [.required("forms", .objectArray, "the caller's and shared documents, newest first, at most 100")]
    let json: JSON
}

/// `form.set`'s answer: the change as pushed on `form:<doc>`.
struct FieldChanged: JSONAnswer {
    static let fields: [FieldContract] = [
        .required("type", .string, "`value`"), .required("doc", .string), .required("key", .string), .required("value", .any),
        .required("version", .integer), .required("by", .string), .required("shown", .stringArray), .required("hidden", .stringArray),
    ]
    let json: JSON
}

/// `form.submit`'s answer.
struct FormSubmitted: JSONAnswer {
    static let fields: [FieldContract] = [
        .required("type", .string, "`submitted`"), .required("doc", .string), .required("version", .integer),
        .required("submission", .object, "`doc`, `schema`, `schema_version`, `submitted_by`, `values`"),
    ]
    let json: JSON
}

/// `form.discard`'s and `form.share`'s answer: the document and what became of it.
struct FormChange: JSONAnswer {
    static let fields: [FieldContract] = [
        .required("doc", .string), .optional("discarded", .boolean, "`form.discard`"), .optional("shared_with", .stringArray, "`form.share`"),
    ]
    let json: JSON
}

/// `assessment.flow`'s answer: the caller's assessments and their questions.
struct AssessmentFlow: JSONAnswer {
    static let fields: [FieldContract] = [
        .required("total", .integer), .required("answered", .integer), .required("assessments", .objectArray), .required("questions", .objectArray),
    ]
    let json: JSON
}

/// `assessment.answer`'s answer, also pushed on `personal:#<user>`.
struct AssessmentAnswered: JSONAnswer {
    static let fields: [FieldContract] = [
        .required("type", .string), .required("assessment", .string), .required("question", .string), .required("value", .any),
        .required("progress", .object, "`{answered, total}`"),
    ]
    let json: JSON
}

/// `assessment.submit`'s answer.
struct AssessmentSubmitted: JSONAnswer {
    static let fields: [FieldContract] = [.required("submission", .string), .required("progress", .object, "`{answered, total}`")]
    let json: JSON
}

/// `form_schema_put`'s answer.
struct SchemaStored: JSONAnswer {
    static let fields: [FieldContract] = [.required("schema", .string), .required("version", .integer, "a changed schema becomes a new version")]
    let json: JSON
}

/// `assessment_put`'s answer.
struct AssessmentStored: JSONAnswer {
    static let fields: [FieldContract] = [.required("assessment", .string), .required("questions", .integer)]
    let json: JSON
}

/// `assessment_assign`'s answer.
struct AssessmentAssigned: JSONAnswer {
    static let fields: [FieldContract] = [.required("user", .string), .required("assessment", .string), .required("progress", .object)]
    let json: JSON
}

/// `assessment_submissions`' answer.
struct SubmissionList: JSONAnswer {
    static let fields: [FieldContract] = [.required("submissions", .objectArray, "newest first, at most 500")]
    let json: JSON
}
