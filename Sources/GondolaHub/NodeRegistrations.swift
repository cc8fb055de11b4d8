import GondolaProtocol

/// Everything one part of the server adds to a node: RPC methods, namespaces and single
/// channels handed to providers, what applies the other nodes' replicated changes, what
/// reloads after a resynchronisation, and what runs when a client connects. A domain
/// builds one and returns it; the server checks that no name in it is claimed by another
/// domain or by the hub, then applies it with `Node.install`. Nothing here touches the
/// node until then.
public struct NodeRegistrations: Sendable {
    /// An RPC method: its contract (request members, answer) and its handler.
    public struct Method: Sendable {
        public let name: String
        public let fields: [FieldContract]
        public let answerFields: [FieldContract]
        public let answer: String
        let handler: RPCHandler
    }

    /// A namespace or single channel with its options and provider.
    public struct Provided: Sendable {
        public let provision: Node.Provision
        let options: NamespaceOptions
        let provider: any ChannelProvider
    }

    /// What applies the other nodes' changes of one topic, with the payload's contract.
    public struct ReplicaHandler: Sendable {
        public let topic: String
        public let fields: [FieldContract]
        public let effect: String
        let apply: @Sendable (JSON) throws(HubError) -> Void
    }

    public private(set) var methods: [Method] = []
    public private(set) var provided: [Provided] = []
    public private(set) var replicaHandlers: [ReplicaHandler] = []
    private(set) var resynchronizers: [@Sendable () async -> Void] = []
    private(set) var connectHooks: [@Sendable (Credentials) async -> Void] = []

    public init() {}

    /// Adds the RPC method `method` whose `handler` builds its `response` as JSON with the
    /// domain's writers; otherwise as `register(_:_:_:rules:_:)`.
    public mutating func register<Request: RequestContract, Response: JSONAnswer>(
        _ method: String, _ request: Request.Type, _ response: Response.Type, rules: String,
        _ handler: @escaping @Sendable (RPCContext, Request) async throws -> JSON
    ) {
        register(method, request, response, rules: rules) { context, request in Response(json: try await handler(context, request)) }
    }

    /// Adds the RPC method `method`: its `data` is decoded as `request` (unknown members
    /// refused with 107 naming them), `handler` answers a `response`, and `rules` describes
    /// the call for the catalog and the API pages.
    public mutating func register<Request: RequestContract, Response: ResponseContract>(
        _ method: String, _ request: Request.Type, _ response: Response.Type, rules: String,
        _ handler: @escaping @Sendable (RPCContext, Request) async throws -> Response
    ) {
        let fields = Request.fields
        methods.append(
            Method(name: method, fields: fields, answerFields: Response.fields, answer: rules) { context, data in
                let response = try await handler(context, try Request.decode(data, listing: fields))
                // An answer sent early (`RPCContext.answer`) is not written a second time.
                return context.answer?.wasSent == true ? .null : response.checkedJSON
            })
    }

    /// Hands the namespace `options.name` to `provider`, in place of any configured
    /// namespace of that name.
    public mutating func provide(_ options: NamespaceOptions, by provider: any ChannelProvider) {
        provided.append(Provided(provision: .namespace(options.name), options: options, provider: provider))
    }

    /// Hands the single channel `channel` (for example one of the default namespace) to
    /// `provider`, with its own options.
    public mutating func provide(channel: String, _ options: NamespaceOptions, by provider: any ChannelProvider) {
        provided.append(Provided(provision: .channel(channel), options: options, provider: provider))
    }

    /// What applies the other nodes' changes of `topic` (see `Node.replicate`), each read as
    /// `Payload` (one that cannot be is logged and dropped); `effect` says what applying it
    /// does, for the catalog.
    public mutating func onReplica<Payload: ReplicaPayload>(
        topic: String, _ payload: Payload.Type, effect: String, _ apply: @escaping @Sendable (Payload) -> Void
    ) {
        replicaHandlers.append(
            ReplicaHandler(topic: topic, fields: Payload.fields, effect: effect) { json throws(HubError) in apply(try Payload(RequestFields(json))) })
    }

    /// What reloads an in-memory view from the shared database each time the node
    /// (re)gains the cluster's bus, before its events are applied.
    public mutating func onResynchronize(_ reload: @escaping @Sendable () async -> Void) {
        resynchronizers.append(reload)
    }

    /// What runs when a client completes `connect`, before its reply is sent: a domain
    /// records there what a valid token tells (the user exists from then on). A hook
    /// handles its own failures; the connection is answered whatever it did.
    public mutating func onConnect(_ hook: @escaping @Sendable (Credentials) async -> Void) {
        connectHooks.append(hook)
    }
}

extension NodeRegistrations {
    /// Every name these registrations claim (RPC method 'x', namespace 'chat', channel
    /// 'announcements', replica topic 'fleet'), repeats kept.
    var claimedNames: [ClaimedName] {
        methods.map { ClaimedName("RPC method", $0.name) } + provided.map(\.provision.claimedName)
            + replicaHandlers.map { ClaimedName("replica topic", $0.topic) }
    }
}

extension Node.Provision: CustomStringConvertible {
    /// The name it claims: namespace 'chat', channel 'announcements'.
    var claimedName: ClaimedName {
        switch self {
        case let .namespace(name): ClaimedName("namespace", name)
        case let .channel(name): ClaimedName("channel", name)
        }
    }

    /// "namespace 'chat'", "channel 'announcements'".
    public var description: String { claimedName.description }
}
