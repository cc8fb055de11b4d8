import GondolaHub
import GondolaProtocol

/// `api.proto`, the GRPC server API's schema, written from the server API's method contracts
/// (the members each request's reader records and each answer declares, with their rules as
/// comments) and `GRPCSchemaFacts` (Centrifugo's names, numbers and Protobuf types). A member
/// without a number, a number without a member, or a message written two ways is a
/// `Problem`, so the schema cannot drift from what the server API reads and answers.
/// `gondola catalog --write-proto` writes it; a test fails when the committed file differs.
public struct GRPCSchema {
    /// Why the schema cannot be written: every member and fact that do not match.
    public struct Problem: Error, CustomStringConvertible {
        public let mismatches: [String]
        public var description: String { "the GRPC schema does not match the contracts:\n" + mismatches.joined(separator: "\n") }
    }

    /// Where the committed schema lives in the repository.
    public static let path = "Sources/GondolaServer/GRPC/api.proto"

    private typealias Facts = GRPCSchemaFacts

    private let methods: [String: MethodContract]
    private let errorMembers: [FieldContract]
    private var order: [String] = []
    private var definitions: [String: Definition] = [:]
    private var mismatches: [String] = []

    /// The schema of `contracts` (the hub's server API methods among them; others are left out).
    public static func proto(_ contracts: [MethodContract]) throws(Problem) -> String {
        var schema = GRPCSchema(contracts)
        let text = schema.write()
        guard schema.mismatches.isEmpty else { throw Problem(mismatches: schema.mismatches) }
        return text
    }

    init(_ contracts: [MethodContract]) {
        let served = Set(Facts.methods.map(\.name))
        methods = Dictionary(
            contracts.filter { $0.surface == .serverAPI && $0.owner == NameClaims.hub && served.contains($0.name) }.map { ($0.name, $0) },
            uniquingKeysWith: { first, _ in first })
        errorMembers = ErrorAnswer.fields
    }

    private mutating func write() -> String {
        for (name, _) in Facts.methods {
            guard let method = methods[name] else {
                mismatches.append("\(name): the server API has no such method")
                continue
            }
            writeMethod(method)
        }
        let rpcs = Facts.methods.map { name, _ in
            let rpc = Self.rpcName(name)
            return "  rpc \(rpc) (\(rpc)Request) returns (\(rpc)Response) {}"
        }
        let lines =
            Self.header + ["", "syntax = \"proto3\";", "", "package \(Facts.package);", "", "service \(Facts.service) {"] + rpcs + ["}"]
        return (lines + order.flatMap { ["", text($0)] }).joined(separator: "\n") + "\n"
    }

    private static let header = [
        "// Gondola's server API over GRPC (`grpc_api_listen`).",
        "//",
        "// Written by `gondola catalog --write-proto` from the server API's contracts (the members",
        "// and rules below are those the JSON API reads and answers) and GRPCSchemaFacts.swift",
        "// (Centrifugo's message names, field numbers and types, so that a client generated for",
        "// Centrifugo calls Gondola unchanged): edit those, not this file, then run",
        "// `Scripts/generate-protobuf`.",
        "//",
        "// Each method is answered by the code that answers `POST /api/<method>`: a response",
        "// carries either `error` or `result`. Payloads (`data`, `info`, `conn_info`,",
        "// `chan_info`) are bytes: JSON is published as it is, other bytes as a binary",
        "// publication. A method Gondola does not serve answers UNIMPLEMENTED.",
    ]

    /// `presence_stats` → `PresenceStats`.
    static func rpcName(_ method: String) -> String {
        method.split(separator: "_").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }

    private mutating func writeMethod(_ method: MethodContract) {
        let rpc = Self.rpcName(method.name)
        let rules = method.answer.isEmpty ? "" : ": \(method.answer)"
        message("\(rpc)Request", method.fields, comment: "`\(method.name)`\(rules).")
        if method.name == ServerAPI.batchContract.name {
            message("\(rpc)Response", method.answerFields, comment: "One reply per command, in the commands' order.")
            return
        }
        define(
            "\(rpc)Response", comment: "Either `error` or `result`.",
            fields: [(1, "Error error", ""), (2, "\(rpc)Result result", "")], reserved: [])
        message("Error", errorMembers, comment: "A refusal: one of the protocol's codes and why.")
        message("\(rpc)Result", method.answerFields, comment: nil)
    }

    /// Writes message `name` from a contract's `members` and its facts, and every message its
    /// members hold.
    private mutating func message(_ name: String, _ members: [FieldContract], comment: String?) {
        guard let facts = Facts.messages[name] else {
            mismatches.append("\(name): no facts (numbers) for this message")
            return
        }
        var fields: [Field] = []
        for member in members {
            guard let fact = facts.fields.first(where: { $0.name == member.name }) else {
                mismatches.append("\(name).\(member.name): no field number in GRPCSchemaFacts")
                continue
            }
            guard let type = fact.type ?? Self.defaultType(member.kind) else {
                mismatches.append("\(name).\(member.name): a \(member.kind.rawValue) needs its Protobuf type in GRPCSchemaFacts")
                continue
            }
            if let nested = type.messageName { holds(nested, members: member.members, in: "\(name).\(member.name)") }
            let rule = fact.isGondolas ? "Gondola's own member" + (member.rule.isEmpty ? "." : ": \(member.rule)") : member.rule
            fields.append((fact.number, "\(type.text) \(member.name)", rule))
        }
        for fact in facts.fields where !members.contains(where: { $0.name == fact.name }) {
            guard let reason = fact.refusal, let type = fact.type else {
                mismatches.append("\(name).\(fact.name): in GRPCSchemaFacts but not a member of the contract")
                continue
            }
            if let nested = type.messageName { holds(nested, members: nil, in: "\(name).\(fact.name)") }
            fields.append((fact.number, "\(type.text) \(fact.name)", "Refused (107 naming it): \(reason)."))
        }
        define(name, comment: comment, fields: fields, reserved: facts.reserved)
    }

    /// Writes `nested`, which the member `path` holds: from the member's own members, else
    /// from its facts alone (a fixed message), else the batch's `Command` or `Reply`.
    private mutating func holds(_ nested: String, members: [FieldContract]?, in path: String) {
        if let members { return message(nested, members, comment: nil) }
        switch nested {
        case "Command": batchMessage("Command", errorNumber: nil, reserved: Facts.commandReserved, suffix: "Request")
        case "Reply": batchMessage("Reply", errorNumber: Facts.replyErrorNumber, reserved: Facts.replyReserved, suffix: "Result")
        default: fixedMessage(nested, in: path)
        }
    }

    private mutating func fixedMessage(_ name: String, in path: String) {
        guard !order.contains(name) else { return }
        guard let facts = Facts.messages[name], let comment = facts.fixed else {
            mismatches.append("\(path): holds \(name), whose members no contract lists and no fixed message in GRPCSchemaFacts gives")
            return
        }
        order.append(name)
        var fields: [Field] = []
        for fact in facts.fields {
            guard let type = fact.type else {
                mismatches.append("\(name).\(fact.name): a fixed message's member needs its Protobuf type")
                continue
            }
            if let nested = type.messageName, nested != name { fixedMessage(nested, in: "\(name).\(fact.name)") }
            fields.append((fact.number, "\(type.text) \(fact.name)", ""))
        }
        define(name, comment: comment, fields: fields, reserved: facts.reserved)
    }

    /// A batch's `Command` (one request per method) or `Reply` (the error, or one result per method).
    private mutating func batchMessage(_ name: String, errorNumber: Int?, reserved: [Int], suffix: String) {
        var fields: [Field] = errorNumber.map { [($0, "Error error", "")] } ?? []
        for case let (method, number?) in Facts.methods {
            fields.append((number, "\(Self.rpcName(method))\(suffix) \(method)", ""))
        }
        let comment =
            errorNumber == nil
            ? "One command of a batch: exactly one member is set." : "The answer to one command of a batch: its error, or its result."
        define(name, comment: comment, fields: fields, reserved: reserved)
    }

    /// A message's parts, written out at the end.
    private struct Definition {
        var comment: String?
        var fields: [Field]
        let reserved: [Int]

        /// The declaration lines without comments: what two definitions must share.
        var signature: [String] { fields.map { "\($0.declaration) = \($0.number);" } + reserved.map { "reserved \($0)" } }
    }

    private typealias Field = (number: Int, declaration: String, comment: String)

    /// Keeps message `name`; a second definition must declare the same members, and a
    /// member's comment stays only when both say the same (a message shared by two requests
    /// with different rules, such as `StreamPosition`, says neither).
    private mutating func define(_ name: String, comment: String?, fields: [Field], reserved: [Int]) {
        let definition = Definition(comment: comment, fields: fields.sorted { $0.number < $1.number }, reserved: reserved)
        guard var known = definitions[name] else {
            definitions[name] = definition
            if !order.contains(name) { order.append(name) }
            return
        }
        guard known.signature == definition.signature else {
            mismatches.append("\(name): written two ways, \(known.signature) and \(definition.signature)")
            return
        }
        for index in known.fields.indices where known.fields[index].comment != definition.fields[index].comment {
            known.fields[index].comment = ""
        }
        known.comment = known.comment ?? definition.comment
        definitions[name] = known
    }

    /// Message `name` as `api.proto` writes it.
    private func text(_ name: String) -> String {
        guard let definition = definitions[name] else { return "" }
        let fields = definition.fields
        let reserved = definition.reserved
        var lines = definition.comment.map { Self.comment($0, indent: "") } ?? []
        lines.append("message \(name) {" + (fields.isEmpty && reserved.isEmpty ? "}" : ""))
        if !reserved.isEmpty {
            lines.append("  reserved \(reserved.map(String.init).joined(separator: ", "));")
            if !fields.isEmpty { lines.append("") }
        }
        for field in fields {
            if !field.comment.isEmpty { lines += Self.comment(field.comment, indent: "  ") }
            lines.append("  \(field.declaration) = \(field.number);")
        }
        if !(fields.isEmpty && reserved.isEmpty) { lines.append("}") }
        return lines.joined(separator: "\n")
    }

    /// A member's type when its JSON kind says it; nil for objects, whose message the facts name.
    private static func defaultType(_ kind: FieldContract.Kind) -> ProtoType? {
        switch kind {
        case .string: .scalar("string")
        case .integer: .scalar("int64")
        case .number: .scalar("double")
        case .boolean: .scalar("bool")
        case .any: .scalar("bytes")
        case .stringArray: .repeated(.scalar("string"))
        case .numberArray: .repeated(.scalar("double"))
        case .object, .objectArray: nil
        }
    }

    /// `text` as `//` lines of at most 92 characters.
    private static func comment(_ text: String, indent: String) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty, indent.count + 3 + line.count + 1 + word.count > 92 {
                lines.append(line)
                line = ""
            }
            line += line.isEmpty ? String(word) : " \(word)"
        }
        if !line.isEmpty { lines.append(line) }
        return lines.map { "\(indent)// \($0)" }
    }
}
