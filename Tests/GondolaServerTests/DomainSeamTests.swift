import Foundation
import GRDB
import GondolaDomain
import GondolaHub
import GondolaProtocol
import GondolaServer
import GondolaTravel
import Hummingbird
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The domain seam: `domains` picks which built-in domains are installed.
@Suite struct DomainSeamTests {
    /// With every domain left out their RPCs answer 104, its namespaces do not exist, its server API
    /// methods and routes are not found, and the rest of the hub still works.
    @Test func aDisabledDomainInstallsNothing() async throws {
        let server = try await startTravelServer { $0.domains = [] }
        #expect(server.server.service(TravelService.self) == nil)
        let alice = try await server.client("alice")
        for method in ["profile.get", "crash.list"] {
            do {
                _ = try await alice.rpc(method)
                Issue.record("\(method) answered")
            } catch let failure as RPCFailure {
                #expect(failure.code == 104 && failure.message == "method not found: \(method)")
            }
        }
        // The personal channel is the server's, whatever domains are installed.
        try await alice.subscribe("personal:#alice")
        for channel in ["nearby:#alice", "chat:x", "crash:x"] {
            do {
                try await alice.subscribe(channel)
                Issue.record("subscribed to \(channel)")
            } catch let failure as RPCFailure {
                #expect(failure.code == 102, "\(channel): \(failure)")
            }
        }
        let (status, answer) = try await server.post("/api/trip_create", body: #"{"name":"x","starts_at":0,"ends_at":1}"#)
        #expect(status == 404 && answer["error"]?["code"]?.doubleValue == 104)
        var webhook = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/api/telegram/webhook")!)
        webhook.httpMethod = "POST"
        webhook.httpBody = Data("{}".utf8)
        let (_, webhookResponse) = try await URLSession.shared.data(for: webhook)
        #expect((webhookResponse as? HTTPURLResponse)?.statusCode == 404)
        // The configured namespaces still serve.
        try await alice.subscribe("room:lobby")
        _ = try await server.api("publish", ["channel": "room:lobby", "data": ["n": 1]])
        #expect(try await alice.awaitPublications("room:lobby", count: 1) == [["n": 1]])
        await alice.close()
        try await server.stop()
    }

    /// The personal channel belongs to the layer every domain sees: with travel left
    /// out, a detected crash still reaches its user there.
    @Test func aDomainTellsItsUserOnThePersonalChannelWithoutTravel() async throws {
        let server = try await startTravelServer { $0.domains = ["crash"] }
        let alice = try await server.client("alice")
        try await alice.subscribe("personal:#alice")
        let crash = try await server.api("crash_detected", ["user": "alice", "lat": 47.49, "lon": 19.04])
        let told = try await alice.awaitPublications("personal:#alice", count: 1)
        #expect(told.first?["type"] == "crash.detected")
        #expect(told.first?["crash"]?["id"] == crash["id"])
        #expect(await alice.rpcErrorCode("profile.get") == 104, "travel is not installed")
        do {
            try await alice.subscribe("personal:#bob")
            Issue.record("subscribed to another user's personal channel")
        } catch let failure as RPCFailure {
            #expect(failure.code == 103)
        }
        await alice.close()
        try await server.stop()
    }

    /// Travel enabled by name behaves as with the default (every domain).
    @Test func anEnabledDomainIsInstalled() async throws {
        let server = try await startTravelServer { $0.domains = ["travel"] }
        #expect(server.server.service(TravelService.self) != nil)
        let alice = try await server.client("alice")
        try await alice.subscribe("personal:#alice")
        await alice.close()
        try await server.stop()
    }

    @Test(arguments: [
        (#"{"domains":["travel","payroll"]}"#, "'domains' unknown domain 'payroll' (known domains: travel, crash, rentals, forms, push)"),
        (#"{"domains":[1]}"#, "'domains' expected domain names, got number"),
        (#"{"domains":{"travel":true}}"#, "'domains' expected an array of domain names or a comma-separated list, got object"),
        (#"{"namespaces":[{"name":"personal"}]}"#, "namespaces[0].name 'personal' is built in and cannot be redefined"),
    ])
    func badDomainSettingsAreNamed(_ text: String, _ expected: String) throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-domains-\(UUID().uuidString).json").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        do {
            _ = try ConfigurationLoader.load(file: file, environment: [:], flags: [:])
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.description.contains(expected), "\(error.description)")
        }
    }

    /// A domain's own keys pass through the loader to the domain, which checks them when
    /// it is installed; a bad value stops the start naming the domain and the key.
    @Test func aDomainsSettingsReachItAndABadOneStopsTheStart() async throws {
        let loaded = try ConfigurationLoader.load(file: nil, environment: ["GONDOLA_SMS_WEBHOOK_URL": "http://127.0.0.1:9/sms"], flags: [:])
        #expect(loaded.domainSettings.values["sms_webhook_url"] == "http://127.0.0.1:9/sms")
        for (key, value, message) in [
            ("crash_link_template", "crashassistant://crash", "crash: 'crash_link_template' must contain {id}"),
            ("sms_webhook_url", "ftp://gateway", "crash: 'sms_webhook_url' expected an http(s) URL, got 'ftp://gateway'"),
        ] {
            var configuration = RunningServer.configuration()
            configuration.domainSettings.values[key] = .string(value)
            do {
                let server = try await RunningServer.start(configuration)
                try await server.stop()
                Issue.record("started with \(key) = \(value)")
            } catch let error as ConfigurationError {
                #expect(error.description == message + (key == "crash_link_template" ? ", got 'crashassistant://crash'" : ""))
            }
        }
    }

    @Test func domainsFromTheEnvironmentAreACommaSeparatedList() throws {
        #expect(try ConfigurationLoader.load(file: nil, environment: ["GONDOLA_DOMAINS": "travel"], flags: [:]).domains == ["travel"])
        #expect(try ConfigurationLoader.load(file: nil, environment: ["GONDOLA_DOMAINS": ""], flags: [:]).domains == [])
        #expect(try ConfigurationLoader.load(file: nil, environment: [:], flags: [:]).domains == nil)
    }
}

/// A name two domains claim stops the start naming both, instead of one silently
/// replacing the other's handler.
@Suite struct DomainNameClaimTests {
    /// A domain that installs the RPC methods, server API methods, namespaces, replica topics
    /// and `GET` routes it is given.
    struct ClaimingDomain: Domain {
        let name: String
        let rpcMethods: [String]
        var apiMethods: [String] = []
        var provided: [String] = []
        var replicaTopics: [String] = []
        var routes: [String] = []
        var namespaces: Set<String> { [] }

        /// Lets anyone subscribe.
        struct OpenChannel: ChannelProvider {
            func subscribe(_ subscription: ProvidedSubscription, attach: (RawJSON?) throws(HubError) -> Void) throws(HubError) {
                try attach(nil)
            }

            func vacated(channel: ChannelName) {}
        }

        func registerMigrations(in migrator: inout DatabaseMigrator) {}

        func install(in context: DomainContext) async throws -> InstalledDomain {
            var registrations = NodeRegistrations()
            for method in rpcMethods { registrations.register(method, NoFields.self, TestAnswer.self, rules: "") { _, _ in ["from": .string(name)] } }
            for namespace in provided { registrations.provide(NamespaceOptions(name: namespace), by: OpenChannel()) }
            for topic in replicaTopics { registrations.onReplica(topic: topic, TestReplica.self, effect: "") { _ in } }
            var serverMethods = ServerAPIMethods()
            for method in apiMethods {
                serverMethods.register(method, NoFields.self, TestAnswer.self, rules: "") { [name] _ throws(HubError) in ["from": .string(name)] }
            }
            return InstalledDomain(
                service: name, registrations: registrations, serverMethods: serverMethods,
                routes: { [routes, name] router in
                    for path in routes { router.get(RouterPath(path)) { _, _ in name } }
                })
        }
    }

    @Test(arguments: [
        ([ClaimingDomain(name: "clock", rpcMethods: ["server.time"])], "RPC method 'server.time' is claimed by both the hub and domain 'clock'"),
        (
            [ClaimingDomain(name: "profiles", rpcMethods: ["profile.get"])],
            "RPC method 'profile.get' is claimed by both domain 'travel' and domain 'profiles'"
        ),
        (
            [ClaimingDomain(name: "a", rpcMethods: ["shop.list"]), ClaimingDomain(name: "b", rpcMethods: ["shop.list"])],
            "RPC method 'shop.list' is claimed by both domain 'a' and domain 'b'"
        ),
        ([ClaimingDomain(name: "echo", rpcMethods: ["echo.say", "echo.say"])], "RPC method 'echo.say' is claimed twice by domain 'echo'"),
        (
            [ClaimingDomain(name: "mirror", rpcMethods: [], apiMethods: ["publish"])],
            "server API method 'publish' is claimed by both the hub and domain 'mirror'"
        ),
        (
            [ClaimingDomain(name: "trips", rpcMethods: [], apiMethods: ["trip_create"])],
            "server API method 'trip_create' is claimed by both domain 'travel' and domain 'trips'"
        ),
        (
            [ClaimingDomain(name: "inbox", rpcMethods: [], provided: ["personal"])],
            "namespace 'personal' is claimed by both the hub and domain 'inbox'"
        ),
        ([ClaimingDomain(name: "talk", rpcMethods: [], provided: ["chat"])], "namespace 'chat' is claimed by both domain 'travel' and domain 'talk'"),
        (
            [ClaimingDomain(name: "a", rpcMethods: [], provided: ["shop"]), ClaimingDomain(name: "b", rpcMethods: [], provided: ["shop"])],
            "namespace 'shop' is claimed by both domain 'a' and domain 'b'"
        ),
        (
            [ClaimingDomain(name: "rent", rpcMethods: [], replicaTopics: ["rentals.fleet"])],
            "replica topic 'rentals.fleet' is claimed by both domain 'rentals' and domain 'rent'"
        ),
        (
            [
                ClaimingDomain(name: "a", rpcMethods: [], replicaTopics: ["stock"]),
                ClaimingDomain(name: "b", rpcMethods: [], replicaTopics: ["stock"]),
            ],
            "replica topic 'stock' is claimed by both domain 'a' and domain 'b'"
        ),
        ([ClaimingDomain(name: "probe", rpcMethods: [], routes: ["/health"])], "route 'GET /health' is claimed by both the hub and domain 'probe'"),
        (
            [ClaimingDomain(name: "bot", rpcMethods: [], routes: ["/api/account/activate"])],
            "route 'GET /api/account/activate' is claimed by both domain 'rentals' and domain 'bot'"
        ),
        (
            [ClaimingDomain(name: "a", rpcMethods: [], routes: ["/shop"]), ClaimingDomain(name: "b", rpcMethods: [], routes: ["/shop"])],
            "route 'GET /shop' is claimed by both domain 'a' and domain 'b'"
        ),
    ])
    func aNameClaimedTwiceStopsTheStartNamingBoth(_ domains: [ClaimingDomain], _ expected: String) async throws {
        do {
            let server = try await GondolaServer(configuration: RunningServer.configuration(), additionalDomains: domains)
            _ = server
            Issue.record("started with \(domains.map(\.name))")
        } catch let error as ConfigurationError {
            #expect(error.description == expected)
        }
    }

    @Test func anAdditionalDomainsOwnNamesAreServed() async throws {
        let server = try await RunningServer.start(additionalDomains: [
            ClaimingDomain(name: "shop", rpcMethods: ["shop.list"], apiMethods: ["shop_stock"], provided: ["shop"], routes: ["/shop/window"])
        ])
        let alice = try await server.client("alice")
        #expect(try await alice.rpc("shop.list") == ["from": "shop"])
        try await alice.subscribe("shop:window")
        #expect(try await server.api("shop_stock", [:]) == ["from": "shop"])
        #expect(try await server.get("/shop/window") == (200, "shop"))
        await alice.close()
        try await server.stop()
    }
}
