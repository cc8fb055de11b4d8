import Foundation
import GondolaProtocol
import GondolaTestSupport
import Synchronization
import Testing

@_spi(Engine) @testable import GondolaHub

/// The hub's side of the proxy, with a transport that answers what each test sets: the
/// request bodies, and how each kind of answer reaches the client.
@Suite(.timeLimit(.minutes(1))) struct BackendProxyTests {
    /// Answers each kind with what `answers` holds for it (else `answer`) and keeps the bodies it was given.
    final class CannedBackend: ProxyTransport {
        let answer: Mutex<JSON>
        let answers: Mutex<[ProxyKind: JSON]>
        let bodies = Mutex<[(ProxyKind, JSON)]>([])
        /// The named proxy of each request, nil for a kind's own endpoint.
        let names = Mutex<[String?]>([])
        /// Whether every endpoint takes `binary_encoding`.
        let binary: Bool
        /// The headers each request went with, as `name: value`.
        let sentHeaders = Mutex<[[String]]>([])

        init(_ answer: JSON, _ answers: [ProxyKind: JSON] = [:], binary: Bool = false) {
            self.answer = Mutex(answer)
            self.answers = Mutex(answers)
            self.binary = binary
        }

        func handles(_ route: ProxyRoute) -> Bool { true }

        func binaryEncoding(_ route: ProxyRoute) -> Bool { binary }

        func post(_ route: ProxyRoute, body: JSON, headers: [(name: String, value: String)]) async throws(HubError) -> JSON {
            bodies.withLock { $0.append((route.kind, body)) }
            sentHeaders.withLock { $0.append(headers.map { "\($0.name): \($0.value)" }) }
            names.withLock { $0.append(route.name) }
            return answers.withLock { $0[route.kind] } ?? answer.withLock { $0 }
        }

        func asked(_ kind: ProxyKind) -> Int { bodies.withLock { $0.filter { $0.0 == kind }.count } }
    }

    static func node(_ backend: CannedBackend) async throws -> Node {
        Node(configuration: testConfiguration(), tokens: try await ConnectionTokens(secret: testSecret), proxy: backend)
    }

    @Test(
        arguments: [
            (["result": ["data": ["ok": true]]], nil),
            (["error": ["code": 1002, "message": "no"]], 1002),
            (["error": ["code": 5, "message": "out of range"]], 100),
            (["result": "not an object"], 100),
            (["disconnect": ["code": 99]], 100),
        ] as [(JSON, UInt32?)])
    func anRPCAnswerReachesTheClientAsCentrifugoWould(_ answer: JSON, _ code: UInt32?) async throws {
        let backend = CannedBackend(answer)
        var alice = try await TestClient.connected(try await Self.node(backend), user: "alice")
        let reply = try await alice.call(.rpc(method: "app.thing", data: ["n": 1]))
        #expect(reply.errorCode == code)
        if code == nil { #expect(reply.body == .rpc(data: RawJSON(["ok": true]))) }
        let (kind, body) = try #require(backend.bodies.withLock { $0.last })
        #expect(kind == .rpc && body["method"] == "app.thing" && body["user"] == "alice" && body["data"] == ["n": 1])
        #expect(try await alice.call(.ping).body == .ping, "the connection goes on")
    }

    /// `encoding` names the proxy's mode, not the client's: `json` with `data` as the client
    /// wrote it (Protobuf clients included), or, with `binary_encoding`, `binary` with every
    /// payload as `b64data`; `protocol` names the client's encoding.
    @Test(arguments: [false, true])
    func theEncodingIsTheProxysAndPayloadsFollowIt(binary: Bool) async throws {
        let backend = CannedBackend(["result": [:]], binary: binary)
        let node = try await Self.node(backend)
        for encoding in [ProtocolEncoding.json, .protobuf] {
            var client = try await TestClient.connected(node, user: "alice", encoding: encoding)
            _ = try await client.call(.rpc(method: "app.thing", data: ["n": 1]))
            let (_, body) = try #require(backend.bodies.withLock { $0.last })
            #expect(body["encoding"] == (binary ? "binary" : "json"))
            #expect(body["protocol"] == (encoding == .json ? "json" : "protobuf"))
            if binary {
                #expect(body["data"] == nil && body["b64data"] == .string(Data(#"{"n":1}"#.utf8).base64EncodedString()), "\(body.text)")
            } else {
                #expect(body["data"] == ["n": 1] && body["b64data"] == nil, "\(body.text)")
            }
        }
    }

    /// A browser's SDK sends its headers in `connect` (it cannot set a WebSocket's): those
    /// `proxy_emulated_headers` names go with every proxy request of the connection, the
    /// upgrade's own forwarded header wins over an emulated one, and the rest are dropped.
    @Test func emulatedHeadersReachTheBackendOnlyWhenListed() async throws {
        let backend = CannedBackend(["result": ["user": "bob"]], [.rpc: ["result": [:]]])
        let configuration = testConfiguration { $0.proxyEmulatedHeaders = ["x-app-token", "authorization"] }
        let node = Node(configuration: configuration, tokens: try await ConnectionTokens(secret: testSecret), proxy: backend)
        let session = node.accept(forwardedHeaders: [(name: "Authorization", value: "Bearer from-upgrade")])
        var client = TestClient(node: node, session: session)
        let headers = ["X-App-Token": "signed-by-app", "Authorization": "Bearer forged", "X-Trusted": "forged"]
        guard case .connect = try await client.call(.connect(ConnectRequest(headers: headers))).body else {
            Issue.record("connect failed")
            return
        }
        _ = try await client.call(.rpc(method: "app.thing", data: nil))
        let expected = ["X-App-Token: signed-by-app", "Authorization: Bearer from-upgrade"]
        #expect(backend.sentHeaders.withLock { $0 } == [expected, expected], "the connect and the RPC request")
    }

    @Test func aDisconnectAnswerClosesWithItsCode() async throws {
        let backend = CannedBackend(["disconnect": ["code": 4501, "reason": "banned"]])
        var alice = try await TestClient.connected(try await Self.node(backend), user: "alice")
        _ = await alice.send(.rpc(method: "app.thing", data: nil))
        #expect(try await alice.closeCode() == DisconnectCode(code: 4501, reason: "banned"))
    }

    @Test func aConnectWithoutATokenIsAnsweredByTheBackend() async throws {
        let backend = CannedBackend([
            "result": [
                "user": "bob", "expire_at": .int(Int64(Date().timeIntervalSince1970) + 600),
                "info": ["n": 1], "meta": ["plan": "gold"], "data": ["hi": "bob"],
            ]
        ])
        let node = try await Self.node(backend)
        var client = TestClient(node: node)
        let reply = try await client.call(.connect(ConnectRequest(data: RawJSON(["device": "phone"]))))
        guard case let .connect(result) = reply.body else {
            Issue.record("\(reply)")
            return
        }
        #expect(result.data == RawJSON(["hi": "bob"]) && !result.expires, "the refresh proxy, not the client, prolongs it")
        #expect(client.session.user == "bob")
        let (_, body) = try #require(backend.bodies.withLock { $0.first })
        #expect(body["user"] == nil && body["data"] == ["device": "phone"] && body["transport"] == "websocket")
        // meta stays on the server and goes with the next proxy request.
        backend.answer.withLock { $0 = ["result": [:]] }
        _ = try await client.call(.rpc(method: "app.thing", data: nil))
        #expect(backend.bodies.withLock { $0.last?.1["meta"] } == ["plan": "gold"])
    }

    @Test func aConnectAnswerWithoutAUserIsTheBackendsFault() async throws {
        let node = try await Self.node(CannedBackend(["result": ["info": [:]]]))
        var client = TestClient(node: node)
        #expect(try await client.call(.connect(ConnectRequest())).errorCode == 100)
        #expect(client.session.user == nil && node.stats.clients == 0)
    }

    /// The refresh proxy prolongs a connection the connect proxy made when its end comes; an
    /// `expired` answer closes it with 3005. The client is not told a ttl: the server refreshes.
    @Test func theRefreshProxyProlongsOrEndsAConnection() async throws {
        let now = Int64(Date().timeIntervalSince1970)  // this test's own reading: the suite may have started long before
        let backend = CannedBackend(
            ["result": [:]],
            [
                .connect: ["result": ["user": "bob", "expire_at": .int(now + 1)]],
                .refresh: ["result": ["expire_at": .int(now + 3600)]],
            ])
        let node = try await Self.node(backend)
        var client = TestClient(node: node)
        guard case let .connect(result) = try await client.call(.connect(ConnectRequest())).body else {
            Issue.record("no connect")
            return
        }
        #expect(!result.expires, "the server refreshes this connection itself")
        client.session.tick(now: .now, date: Date(timeIntervalSince1970: Double(now + 2)))
        try await eventually("the proxy refreshes") { backend.asked(.refresh) == 1 && client.session.proxyRefreshesUnderWay == 0 }
        // Past the old end and its grace the connection stands, prolonged.
        client.session.tick(now: .now, date: Date(timeIntervalSince1970: Double(now + 60)))
        #expect(try await client.call(.ping).body == .ping)
        backend.answers.withLock { $0[.refresh] = ["result": ["expired": true]] }
        client.session.tick(now: .now, date: Date(timeIntervalSince1970: Double(now + 4000)))
        #expect(try await client.closeCode().code == 3005)
    }

    /// A token's connection and its subscriptions are the token's to prolong, not the proxy's:
    /// a tick asks the backend nothing, however many subscriptions the connection holds.
    @Test func aTokenConnectionWithSubscriptionsAsksTheProxyNoRefresh() async throws {
        let backend = CannedBackend(["result": [:]])
        let node = try await Self.node(backend)
        var alice = try await TestClient.connected(node, user: "alice")
        let tokens = try await ConnectionTokens(secret: testSecret)
        for channel in ["locked:1", "locked:2"] {
            var request = SubscribeRequest(channel: channel)
            request.token = try await tokens.mintSubscription(user: "alice", channel: channel, ttl: .seconds(7200))
            #expect(try await alice.call(.subscribe(request)).errorCode == nil)
        }
        #expect(try await alice.call(.subscribe(SubscribeRequest(channel: "room:1"))).errorCode == nil)
        alice.session.tick(now: .now, date: Date().addingTimeInterval(3600))
        #expect(alice.session.proxyRefreshesUnderWay == 0)
        #expect(try await alice.call(.ping).body == .ping)
        #expect(backend.asked(.refresh) == 0 && backend.asked(.subRefresh) == 0)
    }

    /// The sub_refresh proxy does the same for a subscription the subscribe proxy granted.
    @Test func theSubRefreshProxyEndsAnExpiredSubscription() async throws {
        let now = Int64(Date().timeIntervalSince1970)  // this test's own reading: the suite may have started long before
        let backend = CannedBackend(
            ["result": [:]],
            [
                .subscribe: ["result": ["expire_at": .int(now + 1)]],
                .subRefresh: ["result": ["expired": true]],
            ])
        let node = Node(
            configuration: testConfiguration { configuration in
                var gated = NamespaceOptions(name: "gated")
                gated.proxySubscribe = true
                configuration.namespaces["gated"] = gated
            }, tokens: try await ConnectionTokens(secret: testSecret), proxy: backend)
        var alice = try await TestClient.connected(node, user: "alice")
        guard case let .subscribe(result) = try await alice.call(.subscribe(SubscribeRequest(channel: "gated:a"))).body else {
            Issue.record("not subscribed")
            return
        }
        #expect(!result.expires)
        alice.session.tick(now: .now, date: Date(timeIntervalSince1970: Double(now + 2)))
        var unsubscribed: Push?
        while unsubscribed == nil {
            if case let .push(push) = try await alice.next(), case .unsubscribe = push.body { unsubscribed = push }
        }
        #expect(unsubscribed == Push(channel: "gated:a", .unsubscribe(code: 2501, reason: "subscription expired")))
        let (kind, body) = try #require(backend.bodies.withLock { $0.last })
        #expect(kind == .subRefresh && body["channel"] == "gated:a" && body["user"] == "alice")
    }

    /// A method prefix and a namespace choose their named proxies; the rest go to the kind's endpoint.
    @Test func namedProxiesAreChosenByMethodPrefixAndNamespace() async throws {
        let backend = CannedBackend(["result": [:]])
        let node = Node(
            configuration: testConfiguration { configuration in
                configuration.rpcProxies = [
                    RPCProxyRoute(prefix: "billing.", proxy: "billing"), RPCProxyRoute(prefix: "billing.refunds.", proxy: "refunds"),
                ]
                var shop = NamespaceOptions(name: "shop")
                shop.subscribeProxyName = "catalog"
                configuration.namespaces["shop"] = shop
            }, tokens: try await ConnectionTokens(secret: testSecret), proxy: backend)
        var alice = try await TestClient.connected(node, user: "alice")
        for method in ["billing.charge", "billing.refunds.open", "other.thing"] {
            #expect(try await alice.call(.rpc(method: method, data: nil)).errorCode == nil)
        }
        #expect(try await alice.call(.subscribe(SubscribeRequest(channel: "shop:window"))).errorCode == nil)
        #expect(backend.names.withLock { $0 } == ["billing", "refunds", nil, "catalog"])
    }
}
