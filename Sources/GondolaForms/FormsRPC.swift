import GondolaDomain
import GondolaHub
import GondolaProtocol

/// The RPC methods of forms and assessments: `form.schemas`, `form.schema`,
/// `form.code_table`, `form.create`, `form.get`, `form.list`, `form.set`, `form.submit`,
/// `form.discard`, `form.share`, `assessment.flow`, `assessment.answer`, `assessment.submit`.
struct FormsRPC: Sendable {
    let forms: FormService
    let assessments: AssessmentService

    func register(in registrations: inout NodeRegistrations) {
        registrations.register("form.schemas") { _, _ in
            var list: [JSON] = []
            for id in forms.schemaIDs {
                let schema = try await forms.schema(id)
                list.append(["id": .string(id), "version": .int(Int64(schema.version)), "title": .string(schema.title)])
            }
            return ["schemas": .array(list)]
        }
        registrations.register("form.schema") { _, data in
            let fields = try RequestFields(data)
            let version = try fields.optionalInteger("version", in: 1...1_000_000).map { Int($0) }
            let schema = try await forms.schema(try fields.string("schema", maxLength: 64), version: version)
            return ["version": .int(Int64(schema.version)), "schema": schema.json]
        }
        registrations.register("form.code_table") { _, data in
            let name = try RequestFields(data).string("name", maxLength: 64)
            guard let table = try await forms.codeTables.table(name) else { throw HubError.badRequest("name: no code table '\(name)'") }
            return table.json
        }
        registrations.register("form.create") { context, data in
            let (doc, schema) = try await forms.create(schema: try RequestFields(data).string("schema", maxLength: 64), by: context.user)
            return FormJSON.doc(doc, schema: schema, values: [:], shared: [])
        }
        registrations.register("form.get") { context, data in
            try await forms.get(try RequestFields(data).string("doc", maxLength: 64), by: context.user)
        }
        registrations.register("form.list") { context, _ in
            ["forms": .array(try await forms.list(of: context.user).map(FormJSON.summary))]
        }
        registrations.register("form.set") { context, data in
            let fields = try RequestFields(data)
            guard let value = fields.members.last(where: { $0.key == "value" })?.value else {
                throw HubError.badRequest("value is required (null clears the field)")
            }
            let plain: JSON = if case let .raw(raw) = value { raw.value } else { value }
            return try await forms.set(
                try fields.string("doc", maxLength: 64), key: try fields.string("key", maxLength: 64), value: plain,
                baseVersion: try fields.integer("base_version", in: 0...Int64.max), by: context.user)
        }
        registrations.register("form.submit") { context, data in
            try await forms.submit(try RequestFields(data).string("doc", maxLength: 64), by: context.user)
        }
        registrations.register("form.discard") { context, data in
            let id = try RequestFields(data).string("doc", maxLength: 64)
            try await forms.discard(id, by: context.user)
            return ["doc": .string(id), "discarded": true]
        }
        registrations.register("form.share") { context, data in
            let fields = try RequestFields(data)
            let id = try fields.string("doc", maxLength: 64)
            let shared = try await forms.share(id, with: try fields.string("user", maxLength: 64), by: context.user)
            return ["doc": .string(id), "shared_with": .array(shared.map(JSON.string))]
        }
        registrations.register("assessment.flow") { context, _ in
            try await assessments.flow(of: context.user)
        }
        registrations.register("assessment.answer") { context, data in
            let fields = try RequestFields(data)
            guard let value = fields.value("value"), value.isScalarAnswer else {
                throw HubError.badRequest("value: expected an option's value (a number or a string)")
            }
            return try await assessments.answer(
                try fields.string("assessment", maxLength: 64), question: try fields.string("question", maxLength: 64),
                value: value, by: context.user)
        }
        registrations.register("assessment.submit") { context, data in
            try await assessments.submit(try RequestFields(data).string("assessment", maxLength: 64), by: context.user)
        }
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
