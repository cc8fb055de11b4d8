import Foundation
import GondolaHub
import GondolaProtocol
import GondolaServer
import GondolaTestSupport
import Testing

/// Who may open a connection and what a connection may do when nothing is configured:
/// the `Origin` check, the closed default namespace, the connection limits, anonymous
/// connections and channel names, each over real sockets.
@Suite struct SecureDefaultsTests {
    /// The status line and JSON body of an upgrade request with `headers`.
    static func upgrade(_ server: RunningServer, headers: [String]) async throws -> (status: String, body: JSON?) {
        let client = try RawWebSocket(port: server.port, headers: headers)
        let response = try await client.responseHeaders()
        let status = response.first ?? ""
        guard !status.contains("101") else { return (status, nil) }
        return (status, try JSONParser.parse(try await client.readToEnd()))
    }

    /// The harness's configuration with the default origin rule (no `allowed_origins`).
    static var sameOriginOnly: ServerConfiguration {
        var configuration = RunningServer.configuration()
        configuration.allowedOrigins = OriginCheck()
        return configuration
    }

    @Test func aPageOfAnotherOriginIsRefusedWith403NamingTheOrigin() async throws {
        let server = try await RunningServer.start(Self.sameOriginOnly)
        let (status, body) = try await Self.upgrade(server, headers: ["Origin: https://evil.example"])
        #expect(status.contains("403"), "\(status)")
        #expect(body?["error"]?["code"] == 103)
        #expect(body?["error"]?["message"]?.stringValue?.contains("https://evil.example") == true, "\(String(describing: body))")
        // No Origin (an app, an SDK) and the server's own origin (the host page) pass.
        #expect(try await Self.upgrade(server, headers: []).status.contains("101"))
        #expect(try await Self.upgrade(server, headers: ["Origin: http://127.0.0.1"]).status.contains("101"))
        // The refused upgrade changed nothing: a client still connects and works.
        let client = try await WebSocketLayerTests.connected(server, user: "after")
        try client.sendText(Array(#"{"id":2,"subscribe":{"channel":"room:after"}}"#.utf8))
        #expect(try JSONParser.parse(try await client.nextFrame().payload)["subscribe"] != nil)
        try await server.stop()
    }

    @Test func allowedOriginsPatternsOpenTheOriginsTheyMatch() async throws {
        var configuration = RunningServer.configuration()
        configuration.allowedOrigins = try OriginCheck(allowed: ["https://app.example.com", "https://*.trips.example"])
        let server = try await RunningServer.start(configuration)
        #expect(try await Self.upgrade(server, headers: ["Origin: https://app.example.com"]).status.contains("101"))
        #expect(try await Self.upgrade(server, headers: ["Origin: HTTPS://Ski.Trips.Example"]).status.contains("101"))
        #expect(try await Self.upgrade(server, headers: ["Origin: https://trips.example.evil.com"]).status.contains("403"))
        // With patterns set, the same-host rule no longer opens the server's own origin.
        #expect(try await Self.upgrade(server, headers: ["Origin: http://127.0.0.1"]).status.contains("403"))
        try await server.stop()
    }

    @Test func originPatterns() throws {
        let check = try OriginCheck(allowed: ["https://*.example.com", "http://localhost:?000"])
        #expect(check.refusal(origin: "https://a.b.example.com", host: "x") == nil)
        #expect(check.refusal(origin: "https://example.com", host: "x") != nil)
        #expect(check.refusal(origin: "http://localhost:3000", host: "x") == nil)
        #expect(check.refusal(origin: "http://localhost:30000", host: "x") != nil)
        #expect(check.refusal(origin: nil, host: "x") == nil)
        #expect(try OriginCheck(allowed: ["*"]).refusal(origin: "https://anything.example", host: "x") == nil)
        #expect(OriginCheck().refusal(origin: "http://127.0.0.1:8000", host: "127.0.0.1:8000") == nil)
        #expect(OriginCheck().refusal(origin: "http://127.0.0.1:8001", host: "127.0.0.1:8000") != nil)
        #expect(throws: OriginPatternError.self) { try OriginCheck(allowed: ["https://a b"]) }
    }

    @Test func channelsWithoutANamespaceAreClosedUntilTheDefaultNamespaceIsConfigured() async throws {
        let server = try await RunningServer.start()
        let client = try await LiveClient.connect(server.webSocketURL, token: try await server.token("reader"))
        #expect(try await client.call(.subscribe(SubscribeRequest(channel: "news"))).errorCode == 103)
        #expect(try await client.call(.publish(channel: "news", data: Payload(.string("injected")))).errorCode == 103)
        // The server API can always publish there.
        let (status, answer) = try await server.post("/api/publish", body: #"{"channel":"news","data":{"from":"backend"}}"#)
        #expect(status == 200 && answer["result"] != nil, "\(answer)")
        await client.close()
        try await server.stop()

        var configuration = RunningServer.configuration()
        var open = NamespaceOptions(name: "")
        open.allowSubscribeForClient = true
        open.allowPublishForSubscriber = true
        configuration.hub.namespaces[""] = open
        let opened = try await RunningServer.start(configuration)
        let member = try await LiveClient.connect(opened.webSocketURL, token: try await opened.token("reader"))
        #expect(try await member.subscribe("news") == nil)
        #expect(try await member.call(.publish(channel: "news", data: Payload(.string("hello")))).errorCode == nil)
        await member.close()
        try await opened.stop()
    }

    @Test func channelNamesTakePrintableASCIIUpToChannelMaxLength() async throws {
        var configuration = RunningServer.configuration()
        configuration.hub.channelMaxLength = 300
        let server = try await RunningServer.start(configuration)
        let client = try await LiveClient.connect(server.webSocketURL, token: try await server.token("auth0|abc"))
        #expect(try await client.subscribe("room:#auth0|abc") == nil)
        #expect(try await client.subscribe("room:price$eur") == nil)
        #expect(try await client.subscribe("room:" + String(repeating: "x", count: 295)) == nil)
        #expect(try await client.call(.subscribe(SubscribeRequest(channel: "room:" + String(repeating: "y", count: 296)))).errorCode == 107)
        #expect(try await client.call(.subscribe(SubscribeRequest(channel: "room:a b"))).errorCode == 107)
        await client.close()
        try await server.stop()
    }

    @Test func personalChannelsWithoutANamespace() async throws {
        var configuration = ServerConfiguration()
        configuration = try ConfigurationLoader.load(
            file: nil, environment: [:],
            flags: [
                "user_personal_channel_namespace": "", "user_subscribe_to_personal": "true",
            ])
        var base = RunningServer.configuration()
        base.hub.userPersonalChannelNamespace = configuration.hub.userPersonalChannelNamespace
        base.hub.userSubscribeToPersonal = configuration.hub.userSubscribeToPersonal
        let server = try await RunningServer.start(base)
        let client = try RawWebSocket(port: server.port)
        _ = try await client.responseHeaders()
        try client.sendText(Array(#"{"id":1,"connect":{"token":"\#(try await server.token("42"))"}}"#.utf8))
        let reply = try JSONParser.parse(try await client.nextFrame().payload)
        #expect(reply["connect"]?["subs"]?["#42"] != nil, "\(reply)")
        _ = try await server.post("/api/publish", body: ##"{"channel":"#42","data":{"to":"you"}}"##)
        let push = try JSONParser.parse(try await client.nextFrame().payload)
        #expect(push["push"]?["channel"] == "#42" && push["push"]?["pub"]?["data"]?["to"] == "you", "\(push)")
        try await server.stop()
    }
}

/// The node's connection limits: per node and per second at the upgrade (503), per user
/// and single-connection mode after `connect` (3504).
@Suite struct ConnectionLimitTests {
    @Test func theNodeLimitRefusesTheUpgradeWith503() async throws {
        var configuration = RunningServer.configuration()
        configuration.clientConnectionLimit = 2
        let server = try await RunningServer.start(configuration)
        let first = try await LiveClient.connect(server.webSocketURL, token: try await server.token("a"))
        let second = try await LiveClient.connect(server.webSocketURL, token: try await server.token("b"))
        let (status, body) = try await SecureDefaultsTests.upgrade(server, headers: [])
        #expect(status.contains("503"), "\(status)")
        #expect(body?["error"]?["message"]?.stringValue?.contains("client_connection_limit") == true, "\(String(describing: body))")
        // The connected clients are served as before.
        #expect(try await first.subscribe("room:still") == nil)
        await second.close()
        try await eventually("the closed connection is gone") { server.server.openConnections < 2 }
        #expect(try await SecureDefaultsTests.upgrade(server, headers: []).status.contains("101"))
        await first.close()
        let (_, metrics) = try await server.get("/metrics")
        #expect(metrics.contains(#"gondola_limit_reached_total{limit="client_connection_limit"} 1"#), "\(metrics)")
        try await server.stop()
    }

    @Test func theConnectRateLimitRefusesTheUpgradesOverIt() async throws {
        var configuration = RunningServer.configuration()
        configuration.clientConnectionRateLimit = 1
        let server = try await RunningServer.start(configuration)
        var statuses: [String] = []
        for _ in 0..<6 { statuses.append(try await SecureDefaultsTests.upgrade(server, headers: []).status) }
        #expect(statuses.first?.contains("101") == true, "\(statuses)")
        #expect(statuses.contains { $0.contains("503") }, "\(statuses)")
        try await server.stop()
    }

    @Test func aUserOverItsConnectionLimitIsClosedWith3504() async throws {
        var configuration = RunningServer.configuration()
        configuration.hub.userConnectionLimit = 1
        let server = try await RunningServer.start(configuration)
        let first = try await LiveClient.connect(server.webSocketURL, token: try await server.token("alice"))
        let second = try RawWebSocket(port: server.port)
        _ = try await second.responseHeaders()
        try second.sendText(Array(#"{"id":1,"connect":{"token":"\#(try await server.token("alice"))"}}"#.utf8))
        #expect(try await second.closeCode() == 3504)
        // Another user is not limited by alice's connections, and alice's first one goes on.
        let bob = try await LiveClient.connect(server.webSocketURL, token: try await server.token("bob"))
        #expect(try await first.subscribe("room:alice") == nil)
        await bob.close()
        await first.close()
        try await server.stop()
    }

    @Test func singleConnectionModeClosesTheUsersOlderConnection() async throws {
        var configuration = RunningServer.configuration()
        configuration.hub.userPersonalSingleConnection = true
        let server = try await RunningServer.start(configuration)
        let older = try RawWebSocket(port: server.port)
        _ = try await older.responseHeaders()
        try older.sendText(Array(#"{"id":1,"connect":{"token":"\#(try await server.token("carol"))"}}"#.utf8))
        _ = try await older.nextFrame()
        let newer = try await LiveClient.connect(server.webSocketURL, token: try await server.token("carol"))
        #expect(try await older.closeCode() == 3504)
        #expect(try await newer.subscribe("room:carol") == nil)
        await newer.close()
        try await server.stop()
    }
}

/// Connections without a token: refused unless `allow_anonymous_connect_without_token`,
/// and then limited to what each namespace opens to anonymous connections.
@Suite struct AnonymousConnectionTests {
    static func connectWithoutToken(_ server: RunningServer) async throws -> RawWebSocket {
        let client = try RawWebSocket(port: server.port)
        _ = try await client.responseHeaders()
        try client.sendText(Array(#"{"id":1,"connect":{}}"#.utf8))
        return client
    }

    @Test func aConnectWithoutATokenIsRefusedByDefault() async throws {
        let server = try await RunningServer.start()
        // As centrifuge closes it: 3501, "client credentials not found".
        #expect(try await Self.connectWithoutToken(server).closeCode() == 3501)
        try await server.stop()
    }

    @Test func anonymousConnectionsGetOnlyWhatNamespacesOpenToThem() async throws {
        var configuration = RunningServer.configuration()
        configuration.hub.allowAnonymousConnectWithoutToken = true
        var lobby = NamespaceOptions(name: "lobby")
        lobby.allowSubscribeForClient = true
        lobby.allowSubscribeForAnonymous = true
        lobby.allowPublishForSubscriber = true
        configuration.hub.namespaces["lobby"] = lobby
        let server = try await RunningServer.start(configuration)
        let client = try await Self.connectWithoutToken(server)
        let reply = try JSONParser.parse(try await client.nextFrame().payload)
        #expect(reply["connect"]?["client"] != nil, "\(reply)")
        func answer(_ id: Int, _ command: String) async throws -> JSON {
            try client.sendText(Array(#"{"id":\#(id),\#(command)}"#.utf8))
            return try JSONParser.parse(try await client.nextFrame().payload)
        }
        #expect(try await answer(2, #""subscribe":{"channel":"lobby:main"}"#)["subscribe"] != nil)
        // `room` opens subscribing to clients, not to anonymous ones.
        #expect(try await answer(3, #""subscribe":{"channel":"room:main"}"#)["error"]?["code"] == 103)
        // Publishing needs allow_publish_for_anonymous too.
        #expect(try await answer(4, #""publish":{"channel":"lobby:main","data":{}}"#)["error"]?["code"] == 103)
        #expect(try await answer(5, #""rpc":{"method":"server.time"}"#)["error"]?["code"] == 103)
        try await server.stop()
    }
}
