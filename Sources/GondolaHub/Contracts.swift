import GondolaProtocol
import Synchronization

/// The decoded request of an RPC method or a server API method: a named type whose reader
/// is its one declaration. Run over the call's JSON it reads the members (a wrong one
/// throws 107 naming it); run over nothing (`FieldRecorder`) it records them, so the
/// members the catalog, the docs and the OpenAPI document list, and the only ones the
/// decoder lets through, are the ones it reads.
public protocol RequestContract: Sendable {
    /// Reads the members (a wrong one throws `HubError.badRequest` naming it). Its reads
    /// say the rules (`noting` adds what a member means); it reads every member before it
    /// checks what they say together, so that a recording reaches them all.
    init(_ fields: RequestFields) throws(HubError)
}

extension RequestContract {
    /// The members it reads, with their kinds and rules, as its reader recorded them.
    public static var fields: [FieldContract] { RecordedContracts.fields(of: Self.self) }

    /// Reads `data` (an absent one reads as `{}`): unknown members are refused first, at
    /// every level the contract describes, then the type reads the rest.
    public static func decode(_ data: JSON?) throws(HubError) -> Self {
        try decode(data, listing: Self.fields)
    }

    /// As `decode(_:)`, with the members `contract` lists: `Self.fields`, which a method's
    /// registration keeps so that a call does not look it up.
    public static func decode(_ data: JSON?, listing contract: [FieldContract]) throws(HubError) -> Self {
        try Self(try checkedFields(data, listing: contract))
    }

    /// `data`'s members, once every member `contract` (by default `Self.fields`) does not
    /// list was refused.
    public static func checkedFields(_ data: JSON?, listing contract: [FieldContract] = Self.fields) throws(HubError) -> RequestFields {
        let fields = try RequestFields(data)
        try fields.refuseUnknown(contract)
        return fields
    }
}

/// What one node tells the others on a replica topic (`Node.replicate`): read by its
/// reader like a request (the catalog lists what it records), written by `json`, which
/// writes the members the reader reads (`ReplicaPayloadTests` reads back what each writes).
/// Members it does not read are let through, so a newer node may add some.
public protocol ReplicaPayload: RequestContract {
    var json: JSON { get }
}

/// The members of each request type, recorded once from its reader and kept.
enum RecordedContracts {
    private static let recorded = Mutex<[ObjectIdentifier: [FieldContract]]>([:])

    static func fields<Request: RequestContract>(of type: Request.Type) -> [FieldContract] {
        if let fields = recorded.withLock({ $0[ObjectIdentifier(type)] }) { return fields }
        let fields = record(type)
        recorded.withLock { $0[ObjectIdentifier(type)] = fields }
        return fields
    }

    /// Runs the reader over a recorder. A check of values read (a time's format, two
    /// members together) may refuse the recorder's answers: that ends the reader, so a
    /// reader reads every member before it checks what they say together.
    static func record<Request: RequestContract>(_ type: Request.Type) -> [FieldContract] {
        let recorder = FieldRecorder()
        _ = try? Request(RequestFields(recordingInto: recorder))
        return recorder.fields
    }
}

/// The answer of an RPC method or a server API method: a named type holding what the
/// method answers, whose members the catalog lists and whose `json` the caller receives.
public protocol ResponseContract: Sendable {
    /// The answer's members, with their kinds and rules.
    static var fields: [FieldContract] { get }

    /// The answer as the caller receives it.
    var json: JSON { get }

    /// Whether `json` must hold exactly the declared members (false for free-form answers).
    static var declaresAllMembers: Bool { get }
}

extension ResponseContract {
    public static var declaresAllMembers: Bool { true }
}

extension ResponseContract {
    /// The answer checked against its declared members (debug builds, that is the tests): a
    /// member the type does not list, or a required one missing, stops the test run naming it.
    var checkedJSON: JSON {
        let json = self.json
        #if DEBUG
            if Self.declaresAllMembers, case let .object(members) = json {
                let keys = Set(members.map(\.key))
                let undeclared = keys.subtracting(Self.fields.map(\.name))
                let missing = Self.fields.filter { $0.required && !keys.contains($0.name) }.map(\.name)
                assert(
                    undeclared.isEmpty && missing.isEmpty,
                    "\(Self.self): undeclared \(undeclared.sorted()), missing \(missing) in \(json.text.prefix(300))")
            }
        #endif
        return json
    }
}

/// An answer built as JSON by the domain's writers (shared with what it publishes), named
/// and described by its type.
public protocol JSONAnswer: ResponseContract {
    init(json: JSON)
}

/// An answer without members: `{}`.
public struct EmptyAnswer: ResponseContract, AnswerObject {
    public static let members: [AnswerMember<Self>] = []
    public init() {}
}

/// A request without members (`trip.list`, `info`): any member is refused.
public struct NoFields: RequestContract {
    public init(_ fields: RequestFields) {}
}

/// Where a method is called.
public enum MethodSurface: String, Sendable, CaseIterable {
    /// The client protocol's `rpc` command.
    case rpc
    /// `POST /api/<method>` on the server API.
    case serverAPI = "server_api"
}

/// A method's contract as the catalog prints it: its name, where it is called, the members
/// of its request, and what it answers.
public struct MethodContract: Sendable {
    public let name: String
    public let surface: MethodSurface
    /// Who registered it: `the hub`, or a domain's name.
    public let owner: String
    public let fields: [FieldContract]
    /// The answer's members (its response type's).
    public let answerFields: [FieldContract]
    /// The answer's shape and the rules of the call, as the API pages print them.
    public let answer: String

    public init(name: String, surface: MethodSurface, owner: String, fields: [FieldContract], answerFields: [FieldContract] = [], answer: String) {
        self.name = name
        self.surface = surface
        self.owner = owner
        self.fields = fields
        self.answerFields = answerFields
        self.answer = answer
    }
}

/// The payload of a replica topic (what one node tells the others), as the catalog prints it.
public struct ReplicaContract: Sendable {
    public let topic: String
    public let owner: String
    public let fields: [FieldContract]
    /// What the other nodes do with it.
    public let effect: String
}

extension JSONFields where Failure == HubError {
    /// Throws 107 naming every member that `contract` does not list, here and in the
    /// objects whose members the contract lists.
    public func refuseUnknown(_ contract: [FieldContract]) throws(HubError) {
        var unknown: [String] = []
        collectUnknown(contract, into: &unknown)
        guard !unknown.isEmpty else { return }
        let names = unknown.map { "'\($0)'" }.joined(separator: ", ")
        throw .badRequest("unknown field\(unknown.count == 1 ? "" : "s") \(names)")
    }

    private func collectUnknown(_ contract: [FieldContract], into unknown: inout [String]) {
        for member in members where !member.value.isNull {
            guard let field = contract.first(where: { $0.name == member.key }) else {
                if !unknown.contains(path(of: member.key)) { unknown.append(path(of: member.key)) }
                continue
            }
            guard let nested = field.members else { continue }
            let value = self.value(member.key)
            switch value {
            case .object?: (try? JSONFields(value, path: path(of: member.key)))?.collectUnknown(nested, into: &unknown)
            case let .array(items)?:
                for (index, item) in items.enumerated() {
                    guard case .object = item else { continue }
                    (try? JSONFields(item, path: "\(path(of: member.key))[\(index)]"))?.collectUnknown(nested, into: &unknown)
                }
            default: continue
            }
        }
    }
}

/// Server API methods (`POST /api/<name>`) with their contracts: the hub's own and each
/// domain's administration. A method gets its body decoded as its request type.
public struct ServerAPIMethods: Sendable {
    /// A method: its contract and its implementation, which takes the body's JSON object.
    public struct Method: Sendable {
        public let name: String
        public let fields: [FieldContract]
        public let answerFields: [FieldContract]
        public let answer: String
        public let call: @Sendable (JSON) async throws(HubError) -> JSON
    }

    public private(set) var methods: [Method] = []

    public init() {}

    /// Adds `name`, whose body is decoded as `request` (unknown members refused with 107
    /// naming them) and whose `body` answers a `response`; `rules` describes the call for
    /// the catalog and the API pages.
    public mutating func register<Request: RequestContract, Response: ResponseContract>(
        _ name: String, _ request: Request.Type, _ response: Response.Type, rules: String,
        _ body: @escaping @Sendable (Request) async throws(HubError) -> Response
    ) {
        let fields = Request.fields
        methods.append(
            Method(name: name, fields: fields, answerFields: Response.fields, answer: rules) { json throws(HubError) in
                try await body(try Request.decode(json, listing: fields)).checkedJSON
            })
    }

    /// Adds `name`, whose `body` builds its `response` as JSON with the domain's writers.
    public mutating func register<Request: RequestContract, Response: JSONAnswer>(
        _ name: String, _ request: Request.Type, _ response: Response.Type, rules: String,
        _ body: @escaping @Sendable (Request) async throws(HubError) -> JSON
    ) {
        register(name, request, response, rules: rules) { (request) throws(HubError) in Response(json: try await body(request)) }
    }

    /// The names of the methods.
    public var names: [String] { methods.map(\.name) }

    /// The contracts, owned by `owner`.
    public func contracts(owner: String) -> [MethodContract] {
        methods.map {
            MethodContract(name: $0.name, surface: .serverAPI, owner: owner, fields: $0.fields, answerFields: $0.answerFields, answer: $0.answer)
        }
    }
}

/// `server.time`'s answer: the server's clock.
public struct ServerTime: ResponseContract, AnswerObject {
    public static let members: [AnswerMember<Self>] = [.integer("ts", "Unix milliseconds") { $0.milliseconds }]
    public let milliseconds: Int64
}
