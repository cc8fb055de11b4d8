import GondolaProtocol
import Synchronization
import Testing

@_spi(Engine) @testable import GondolaHub

/// `Node.install`: what a part of the server adds reaches the node only when none of its
/// names is claimed already.
@Suite struct NodeRegistrationsTests {
    /// A provider that lets anyone subscribe.
    struct OpenChannel: ChannelProvider {
        func subscribe(_ subscription: ProvidedSubscription, attach: (RawJSON?) throws(HubError) -> Void) throws(HubError) {
            try attach(nil)
        }

        func vacated(channel: ChannelName) {}
    }

    @Test func installedMethodsNamespacesAndReplicasServe() async throws {
        let node = try await makeNode()
        let replicated = Mutex<[JSON]>([])
        var registrations = NodeRegistrations()
        registrations.register("shop.list", NoFields.self, TestAnswer.self, rules: "") { _, _ in ["items": []] }
        registrations.provide(NamespaceOptions(name: "shop"), by: OpenChannel())
        registrations.onReplica(topic: "stock", TestReplica.self, effect: "") { replica in replicated.withLock { $0.append(replica.json) } }
        try node.install(registrations, by: "shop")
        #expect(node.rpc.methods == ["server.time", "shop.list"])
        #expect(try node.resolve("shop:window").1.name == "shop")
        node.receive(.domain(topic: "stock", origin: "another node", payload: ["n": 1]))
        #expect(replicated.withLock { $0 } == [["n": 1]])
    }

    /// What a second set claims again.
    enum Conflict: CaseIterable, Sendable {
        case method, hubMethod, namespace, replicaTopic, channelTwice

        func add(to registrations: inout NodeRegistrations) {
            switch self {
            case .method: registrations.register("shop.list", NoFields.self, TestAnswer.self, rules: "") { _, _ in nil }
            case .hubMethod: registrations.register("server.time", NoFields.self, TestAnswer.self, rules: "") { _, _ in nil }
            case .namespace: registrations.provide(NamespaceOptions(name: "shop"), by: OpenChannel())
            case .replicaTopic: registrations.onReplica(topic: "stock", TestReplica.self, effect: "") { _ in }
            case .channelTwice:
                for _ in 0..<2 { registrations.provide(channel: "news", NamespaceOptions(name: "news"), by: OpenChannel()) }
            }
        }

        var message: String {
            switch self {
            case .method: "RPC method 'shop.list' is claimed by both domain 'shop' and domain 'copy'"
            case .hubMethod: "RPC method 'server.time' is claimed by both the hub and domain 'copy'"
            case .namespace: "namespace 'shop' is claimed by both domain 'shop' and domain 'copy'"
            case .replicaTopic: "replica topic 'stock' is claimed by both domain 'shop' and domain 'copy'"
            case .channelTwice: "channel 'news' is claimed twice by domain 'copy'"
            }
        }
    }

    /// A second claim of any one name refuses the whole set: its other names are not added.
    @Test(arguments: Conflict.allCases)
    func aNameClaimedAgainAddsNothing(_ conflict: Conflict) async throws {
        let node = try await makeNode()
        var shop = NodeRegistrations()
        shop.register("shop.list", NoFields.self, TestAnswer.self, rules: "") { _, _ in ["items": []] }
        shop.provide(NamespaceOptions(name: "shop"), by: OpenChannel())
        shop.onReplica(topic: "stock", TestReplica.self, effect: "") { _ in }
        try node.install(shop, by: "shop")
        var copy = NodeRegistrations()
        copy.register("copy.only", NoFields.self, TestAnswer.self, rules: "") { _, _ in nil }
        copy.provide(NamespaceOptions(name: "copy"), by: OpenChannel())
        conflict.add(to: &copy)
        do {
            try node.install(copy, by: "copy")
            Issue.record("installed a name claimed again")
        } catch {
            #expect(error.description == conflict.message)
        }
        #expect(node.rpc.methods == ["server.time", "shop.list"])
        #expect(throws: HubError.self) { try node.resolve("copy:x") }
    }
}
