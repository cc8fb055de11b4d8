import GondolaProtocol

/// Everything one part of the server adds to a node: RPC methods, namespaces and single
/// channels handed to providers, what applies the other nodes' replicated changes, what
/// reloads after a resynchronisation, and what runs when a client connects. A domain
/// builds one and returns it; the server checks that no name in it is claimed by another
/// domain or by the hub, then applies it with `Node.install`. Nothing here touches the
/// node until then.
public struct NodeRegistrations: Sendable {
    /// An RPC method and its handler.
    public struct Method: Sendable {
        public let name: String
        let handler: RPCHandler
    }

    /// A namespace or single channel with its options and provider.
    public struct Provided: Sendable {
        public let provision: Node.Provision
        let options: NamespaceOptions
        let provider: any ChannelProvider
    }

    /// What applies the other nodes' changes of one topic.
    public struct ReplicaHandler: Sendable {
        public let topic: String
        let apply: @Sendable (JSON) -> Void
    }

    public private(set) var methods: [Method] = []
    public private(set) var provided: [Provided] = []
    public private(set) var replicaHandlers: [ReplicaHandler] = []
    private(set) var resynchronizers: [@Sendable () async -> Void] = []
    private(set) var connectHooks: [@Sendable (Credentials) async -> Void] = []

    public init() {}

    /// Adds the RPC method `method` (the `rpc` command's name).
    public mutating func register(_ method: String, _ handler: @escaping RPCHandler) {
        methods.append(Method(name: method, handler: handler))
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

    /// What applies the other nodes' changes of `topic` (see `Node.replicate`).
    public mutating func onReplica(topic: String, _ apply: @escaping @Sendable (JSON) -> Void) {
        replicaHandlers.append(ReplicaHandler(topic: topic, apply: apply))
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
    /// Every name these registrations claim, as a start error names it ("RPC method 'x'",
    /// "namespace 'chat'", "channel 'announcements'", "replica topic 'fleet'"), repeats kept.
    var claimedNames: [String] {
        methods.map { "RPC method '\($0.name)'" } + provided.map(\.provision.description)
            + replicaHandlers.map { "replica topic '\($0.topic)'" }
    }
}

extension Node.Provision: CustomStringConvertible {
    /// "namespace 'chat'", "channel 'announcements'".
    public var description: String {
        switch self {
        case let .namespace(name): "namespace '\(name)'"
        case let .channel(name): "channel '\(name)'"
        }
    }
}
