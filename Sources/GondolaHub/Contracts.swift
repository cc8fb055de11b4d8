import GondolaProtocol

/// One member of a request (an RPC's `data`, a server API body, a replica payload): its
/// name, the JSON it takes, whether it must be there, and the rule its value follows.
/// A request type lists its members so that the catalog prints them and the decoder
/// refuses any other member (107 naming it).
public struct FieldContract: Sendable, Equatable {
    /// The JSON a member takes.
    public enum Kind: String, Sendable, Equatable {
        case string, integer, number, boolean, object
        case stringArray = "array of strings"
        case objectArray = "array of objects"
        case numberArray = "array of numbers"
        /// Any JSON value, passed on as it arrived (a publication's `data`).
        case any = "any JSON"
    }

    public let name: String
    public let kind: Kind
    public let required: Bool
    /// Whether the value may be null: a member that may be left out may be null too; a
    /// required one only when it says so (`nullable`).
    public let nullable: Bool
    /// What the value must be beyond its kind ("at most 80 characters"), empty when nothing.
    public let rule: String
    /// The members of an object (or of each object of an array), refused when not listed;
    /// nil when the object's members are free (a caller's own metadata).
    public let members: [FieldContract]?

    /// A member that must be there, not null.
    public static func required(_ name: String, _ kind: Kind, _ rule: String = "", members: [FieldContract]? = nil) -> FieldContract {
        FieldContract(name: name, kind: kind, required: true, nullable: false, rule: rule, members: members)
    }

    /// A member that must be there, null when it has no value.
    public static func nullable(_ name: String, _ kind: Kind, _ rule: String = "", members: [FieldContract]? = nil) -> FieldContract {
        FieldContract(name: name, kind: kind, required: true, nullable: true, rule: rule, members: members)
    }

    /// A member that may be left out (or null).
    public static func optional(_ name: String, _ kind: Kind, _ rule: String = "", members: [FieldContract]? = nil) -> FieldContract {
        FieldContract(name: name, kind: kind, required: false, nullable: true, rule: rule, members: members)
    }
}

/// The decoded request of an RPC method or a server API method: a named type read from the
/// call's JSON with `RequestFields` after every member it does not list was refused.
public protocol RequestContract: Sendable {
    /// The members it reads, with their kinds and rules.
    static var fields: [FieldContract] { get }

    /// Reads the members (a wrong one throws `HubError.badRequest` naming it).
    init(_ fields: RequestFields) throws(HubError)
}

extension RequestContract {
    /// Reads `data` (an absent one reads as `{}`): unknown members are refused first, at
    /// every level the contract describes, then the type reads the rest.
    public static func decode(_ data: JSON?) throws(HubError) -> Self {
        try Self(try checkedFields(data))
    }

    /// `data`'s members, once every member the contract does not list was refused.
    public static func checkedFields(_ data: JSON?) throws(HubError) -> RequestFields {
        let fields = try RequestFields(data)
        try fields.refuseUnknown(Self.fields)
        return fields
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
public struct EmptyAnswer: ResponseContract {
    public static let fields: [FieldContract] = []
    public init() {}
    public var json: JSON { [:] }
}

/// A request without members (`trip.list`, `info`): any member is refused.
public struct NoFields: RequestContract {
    public static let fields: [FieldContract] = []
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
        methods.append(
            Method(name: name, fields: Request.fields, answerFields: Response.fields, answer: rules) { json throws(HubError) in
                try await body(try Request.decode(json)).checkedJSON
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
public struct ServerTime: ResponseContract {
    public static let fields: [FieldContract] = [.required("ts", .integer, "Unix milliseconds")]
    public let milliseconds: Int64
    public var json: JSON { ["ts": .int(milliseconds)] }
}
