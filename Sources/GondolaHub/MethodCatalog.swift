import GondolaProtocol

/// Every contract a node serves: its RPC methods (the hub's and the domains'), the
/// namespaces and single channels the domains provide, the replica topics, and the server
/// API methods the server adds. `gondola catalog --json` prints it and the method tables of
/// the API pages are generated from it.
public struct MethodCatalog: Sendable {
    /// A namespace or single channel a domain provides, with its options.
    public struct ProvidedNamespace: Sendable {
        public let provision: Node.Provision
        public let owner: String
        public let options: NamespaceOptions
    }

    public private(set) var methods: [MethodContract] = []
    public private(set) var namespaces: [ProvidedNamespace] = []
    public private(set) var replicaTopics: [ReplicaContract] = []

    public init() {}

    /// Adds what `owner` registered on a node.
    mutating func add(_ registrations: NodeRegistrations, by owner: String) {
        methods += registrations.methods.map {
            MethodContract(name: $0.name, surface: .rpc, owner: owner, fields: $0.fields, answerFields: $0.answerFields, answer: $0.answer)
        }
        namespaces += registrations.provided.map { ProvidedNamespace(provision: $0.provision, owner: owner, options: $0.options) }
        replicaTopics += registrations.replicaHandlers.map {
            ReplicaContract(topic: $0.topic, owner: owner, fields: $0.fields, effect: $0.effect)
        }
    }

    /// Adds a server API method.
    public mutating func add(_ method: MethodContract) {
        methods.append(method)
    }

    /// The contract of `name` called on `surface`.
    public func method(_ name: String, on surface: MethodSurface) -> MethodContract? {
        methods.first { $0.name == name && $0.surface == surface }
    }

    /// The catalog as JSON, everything sorted by name: `{"methods":[…],"namespaces":[…],"replica_topics":[…]}`.
    public var json: JSON {
        [
            "methods": .array(
                methods.sorted { ($0.surface.rawValue, $0.name) < ($1.surface.rawValue, $1.name) }.map { method in
                    [
                        "name": .string(method.name), "surface": .string(method.surface.rawValue), "owner": .string(method.owner),
                        "fields": Self.json(method.fields), "answer_fields": Self.json(method.answerFields), "answer": .string(method.answer),
                    ]
                }),
            "namespaces": .array(namespaces.sorted { $0.provision.description < $1.provision.description }.map(Self.json)),
            "replica_topics": .array(
                replicaTopics.sorted { $0.topic < $1.topic }.map { topic in
                    [
                        "topic": .string(topic.topic), "owner": .string(topic.owner), "fields": Self.json(topic.fields),
                        "effect": .string(topic.effect),
                    ]
                }),
        ]
    }

    static func json(_ fields: [FieldContract]) -> JSON {
        .array(
            fields.map { field in
                var json: JSON = [
                    "name": .string(field.name), "type": .string(field.kind.rawValue), "required": .bool(field.required),
                ]
                if field.required, field.nullable { json = json.adding("nullable", true) }
                if !field.rule.isEmpty { json = json.adding("rule", .string(field.rule)) }
                if let members = field.members { json = json.adding("members", Self.json(members)) }
                return json
            })
    }

    private static func json(_ namespace: ProvidedNamespace) -> JSON {
        let (kind, name): (String, String) =
            switch namespace.provision {
            case let .namespace(name): ("namespace", name)
            case let .channel(name): ("channel", name)
            }
        let options = namespace.options
        return [
            "name": .string(name), "kind": .string(kind), "owner": .string(namespace.owner),
            "history_size": .int(Int64(options.historySize)), "history_ttl_seconds": .int(options.historyTTL.components.seconds),
            "history_durable": .bool(options.historyDurable), "presence": .bool(options.presence), "join_leave": .bool(options.joinLeave),
            "allow_publish_for_subscriber": .bool(options.allowPublishForSubscriber),
            "allow_history_for_subscriber": .bool(options.allowHistoryForSubscriber),
        ]
    }
}
