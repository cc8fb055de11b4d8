import Crypto
import Foundation
import GondolaHub
import GondolaProtocol
import GondolaServer
import GondolaTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.serialized) struct EndToEndTests {
    @Test func healthAndMetrics() async throws {
        let server = try await RunningServer.start()
        let (status, body) = try await server.get("/health")
        #expect(status == 200 && body == #"{"status":"ok","engine":"memory"}"#)
        _ = try await converse(
            server.webSocketURL, [.text(command(1, .connect(ConnectRequest(token: try await server.token("alice"))))), .awaitMessages(1)])
        let (metricsStatus, metrics) = try await server.get("/metrics")
        #expect(metricsStatus == 200)
        for name in [
            "gondola_connections", "gondola_subscriptions", "gondola_queue_bytes", "gondola_messages_received_total", "gondola_connects_total",
            "gondola_rpc_duration_seconds",
            "gondola_sqlite_wal_frames", #"gondola_sqlite_checkpoints_total{kind="background"}"#, "gondola_sqlite_wal_restarts_total",
        ] {
            #expect(metrics.contains(name), "\(name) missing")
        }
        // SQLite allocates through the C allocator: its memory is part of the heap in use.
        func value(_ sample: String) -> Double? {
            metrics.split(separator: "\n").first { $0.hasPrefix(sample + " ") }.flatMap { Double($0.dropFirst(sample.count + 1)) }
        }
        let sqlite = try #require(value("gondola_sqlite_memory_bytes"))
        let heapInUse = try #require(value(#"gondola_heap_bytes{state="in_use"}"#))
        #expect(sqlite > 0 && sqlite <= heapInUse)
        #expect(try #require(value(#"gondola_heap_bytes{state="free"}"#)) >= 0)
        try await server.stop()
    }

    @Test func pubSubHistoryAndPresenceOverARealSocket() async throws {
        let server = try await RunningServer.start()
        let token = try await server.token("alice")
        let frame = [
            command(1, .connect(ConnectRequest(token: token))),
            command(2, .subscribe(SubscribeRequest(channel: "room:lobby", recoverable: true))),
            command(3, .publish(channel: "room:lobby", data: Payload(["text": "héllo", "n": 1]))),
            command(4, .history(HistoryRequest(channel: "room:lobby", limit: 10))),
            command(5, .presenceStats(channel: "room:lobby")),
            command(6, .rpc(method: "no.such.method", data: nil)),
        ].joined(separator: "\n")
        let conversation = try await converse(server.webSocketURL, [.text(frame), .awaitMessages(7)])
        #expect(conversation.replies.map(\.id) == [1, 2, 3, 4, 5, 6])
        #expect(
            conversation.pushes.first?.body
                == .publication(
                    Publication(
                        offset: 1, data: Payload(["text": "héllo", "n": 1]),
                        info: ClientInfo(user: "alice", client: clientID(conversation)))))
        guard case let .history(history) = conversation.replies[3].body else {
            Issue.record("no history")
            return
        }
        #expect(history.publications.map(\.offset) == [1])
        #expect(conversation.replies[4].body == .presenceStats(PresenceStats(numClients: 1, numUsers: 1)))
        #expect(conversation.replies[5].errorCode == 104)
        try await server.stop()
    }

    func clientID(_ conversation: Conversation) -> String {
        if case let .connect(result) = conversation.replies.first?.body { return result.client }
        return ""
    }

    @Test func badInputsCloseOnlyTheOffendingConnection() async throws {
        let server = try await RunningServer.start()
        let token = try await server.token("alice")
        let connect = command(1, .connect(ConnectRequest(token: token)))
        let cases: [([Step], Int, String)] = [
            ([.text("not json")], 3501, "invalid JSON"),
            ([.text(command(1, .subscribe(SubscribeRequest(channel: "room:x"))))], 3501, "first command must be connect"),
            ([.text(connect), .awaitMessages(1), .binary([1, 2, 3])], 3506, "binary frame"),
            ([.text(connect), .awaitMessages(1), .text(String(repeating: " ", count: 5000))], 3501, "exceeds max_frame_bytes 4096"),
            ([.text(command(1, .connect(ConnectRequest(token: "bad.token.here"))))], 3500, "invalid token"),
            ([.text(#"{"id":1,"connect":{"token":7}}"#)], 3501, "connect.token must be a string"),
            (
                [.text(connect), .awaitMessages(1), .text(#"{"id":2,"subscribe":{"channel":"room:x","delta":5}}"#)], 3501,
                "subscribe.delta must be a string"
            ),
        ]
        for (steps, code, reason) in cases {
            let conversation = try await converse(server.webSocketURL, steps + [.awaitClose])
            #expect(conversation.closeCode == code, "\(reason)")
            #expect(conversation.closeReason?.contains(reason) == true, "\(conversation.closeReason ?? "no reason")")
        }
        // An expired token is a reply error (109), not a close, so SDKs refresh.
        let expired = try await ConnectionTokens(secret: RunningServer.secret).mint(
            user: "alice", ttl: .seconds(1), now: Date().addingTimeInterval(-10))
        let expiredConversation = try await converse(
            server.webSocketURL, [.text(command(1, .connect(ConnectRequest(token: expired)))), .awaitMessages(1)])
        #expect(expiredConversation.replies.first?.errorCode == 109)
        // The server still serves a healthy client.
        let healthy = try await converse(server.webSocketURL, [.text(connect + "\n" + command(2, .ping)), .awaitMessages(2)])
        #expect(healthy.replies.map(\.id) == [1, 2])
        #expect(healthy.closeCode == nil || healthy.closeCode == 1000)
        try await server.stop()
    }

    @Test func shutdownClosesClientsWith3001() async throws {
        let server = try await RunningServer.start()
        let token = try await server.token("alice")
        async let conversation = converse(
            server.webSocketURL, [.text(command(1, .connect(ConnectRequest(token: token)))), .awaitMessages(1)], idle: .seconds(10))
        // Stop once alice is connected.
        try await eventually("alice connected") { server.server.node.stats.clients == 1 }
        try await server.stop()
        // Closed by the stop with 3001, not left to its 10 s idle end.
        #expect(try await conversation.closeCode == 3001)
    }

    @Test func durableStreamKeepsEpochAcrossRestartAndMemoryStreamDoesNot() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-restart-\(UUID().uuidString)").path
        let first = try await RunningServer.start(RunningServer.configuration(folder: folder))
        for n in 1...3 {
            _ = try await first.post("/api/publish", body: #"{"channel":"board:trip1","data":{"n":\#(n)}}"#)
            _ = try await first.post("/api/publish", body: #"{"channel":"room:r","data":{"n":\#(n)}}"#)
        }
        let (_, durableBefore) = try await first.post("/api/history", body: #"{"channel":"board:trip1","limit":10}"#)
        let (_, memoryBefore) = try await first.post("/api/history", body: #"{"channel":"room:r","limit":10}"#)
        try await first.stop()
        let second = try await RunningServer.start(RunningServer.configuration(folder: folder))
        let (_, durableAfter) = try await second.post("/api/history", body: #"{"channel":"board:trip1","limit":10}"#)
        let (_, memoryAfter) = try await second.post("/api/history", body: #"{"channel":"room:r","limit":10}"#)
        #expect(durableAfter == durableBefore)
        #expect(durableAfter["result"]?["offset"] == 3)
        #expect(memoryAfter["result"]?["epoch"] != memoryBefore["result"]?["epoch"])
        #expect(memoryAfter["result"]?["publications"] == nil)
        try await second.stop()
    }
}

@Suite(.serialized) struct ServerAPITests {
    @Test func refusesMissingKeyMalformedBodiesAndUnknownMethods() async throws {
        let server = try await RunningServer.start()
        #expect(try await server.post("/api/info", body: "{}", apiKey: nil).0 == 401)
        #expect(try await server.post("/api/info", body: "{}", apiKey: "wrong").0 == 401)
        let (status, body) = try await server.post("/api/publish", body: "{not json")
        #expect(status == 400)
        #expect(body["error"]?["code"] == 107)
        #expect(try await server.post("/api/publish", body: "[1]").0 == 400)
        #expect(try await server.post("/api/publish", body: "").0 == 400)
        #expect(try await server.post("/api/frobnicate", body: "{}").0 == 404)
        let (_, missing) = try await server.post("/api/publish", body: #"{"data":1}"#)
        #expect(missing["error"]?["code"] == 107)
        let (_, unknown) = try await server.post("/api/publish", body: #"{"channel":"nowhere:1","data":1}"#)
        #expect(unknown["error"]?["code"] == 102)
        let (_, noHistory) = try await server.post("/api/history", body: #"{"channel":"plain","limit":1}"#)
        #expect(noHistory["error"]?["code"] == 108)
        try await server.stop()
    }

    @Test func methodsAnswerCentrifugoShapes() async throws {
        let server = try await RunningServer.start()
        let (_, published) = try await server.post("/api/publish", body: #"{"channel":"room:a","data":{"x":1}}"#)
        #expect(published["result"]?["offset"] == 1)
        let (_, broadcast) = try await server.post("/api/broadcast", body: #"{"channels":["room:a","nowhere:b"],"data":2}"#)
        guard case let .array(responses)? = broadcast["result"]?["responses"] else {
            Issue.record("\(broadcast)")
            return
        }
        #expect(responses[0]["result"]?["offset"] == 2)
        #expect(responses[1]["error"]?["code"] == 102)
        let (_, history) = try await server.post("/api/history", body: #"{"channel":"room:a","limit":-1,"reverse":true}"#)
        guard case let .array(publications)? = history["result"]?["publications"] else {
            Issue.record("\(history)")
            return
        }
        #expect(publications.map { $0["offset"] } == [2, 1])
        let (_, removed) = try await server.post("/api/history_remove", body: #"{"channel":"room:a"}"#)
        #expect(removed == ["result": .object([])])
        let (_, info) = try await server.post("/api/info", body: "{}")
        #expect(info["result"]?["nodes"] != nil)
        let (_, channels) = try await server.post("/api/channels", body: #"{"pattern":"room:*"}"#)
        #expect(channels["result"]?["channels"] == .object([]))
        try await server.stop()
    }
}

@Suite(.serialized) struct AuthEndpointTests {
    static let botToken = "123456:TEST-bot-token"

    /// The Login Widget hash computed here from Telegram's description, independently of the server code.
    static func signed(_ fields: [(String, String)], botToken: String = botToken) -> String {
        let check = fields.sorted { $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" }.joined(separator: "\n")
        let key = SymmetricKey(data: SHA256.hash(data: Data(botToken.utf8)))
        let hash = HMAC<SHA256>.authenticationCode(for: Data(check.utf8), using: key).map { String(format: "%02x", $0) }.joined()
        let members = fields.map { key, value in
            key == "id" || key == "auth_date" ? "\"\(key)\":\(value)" : "\"\(key)\":\"\(value)\""
        }
        return "{" + (members + ["\"hash\":\"\(hash)\""]).joined(separator: ",") + "}"
    }

    @Test func telegramLoginIsVerifiedAndMapsToAStableUser() async throws {
        var configuration = RunningServer.configuration()
        configuration.telegramBotToken = Self.botToken
        let server = try await RunningServer.start(configuration)
        let now = Int(Date().timeIntervalSince1970)
        let fields = [("id", "987654"), ("first_name", "Ann"), ("last_name", "Lee"), ("username", "annlee"), ("auth_date", "\(now)")]
        let (status, body) = try await server.post("/api/auth/telegram", body: Self.signed(fields), apiKey: nil)
        #expect(status == 200)
        #expect(body["user"]?["name"] == "Ann Lee")
        guard case let .string(token)? = body["token"], case let .string(userID)? = body["user"]?["id"] else {
            Issue.record("\(body)")
            return
        }
        #expect(!userID.contains("987654"))
        let credentials = try await ConnectionTokens(secret: RunningServer.secret).verify(token)
        #expect(credentials.user == userID)
        let (_, again) = try await server.post("/api/auth/telegram", body: Self.signed(fields), apiKey: nil)
        #expect(again["user"]?["id"] == .string(userID))

        let tampered = Self.signed(fields).replacingOccurrences(of: "\"Ann\"", with: "\"Eve\"")
        #expect(try await server.post("/api/auth/telegram", body: tampered, apiKey: nil).0 == 401)
        let otherBot = Self.signed(fields, botToken: "999:other")
        #expect(try await server.post("/api/auth/telegram", body: otherBot, apiKey: nil).0 == 401)
        let old = [("id", "987654"), ("first_name", "Ann"), ("auth_date", "\(now - 25 * 3600)")]
        #expect(try await server.post("/api/auth/telegram", body: Self.signed(old), apiKey: nil).0 == 401)
        #expect(try await server.post("/api/auth/telegram", body: #"{"id":1}"#, apiKey: nil).0 == 400)
        #expect(try await server.post("/api/auth/telegram", body: "nope", apiKey: nil).0 == 400)
        try await server.stop()
    }

    @Test func telegramLoginWithoutBotTokenIsUnavailable() async throws {
        let server = try await RunningServer.start()
        #expect(try await server.post("/api/auth/telegram", body: "{}", apiKey: nil).0 == 503)
        try await server.stop()
    }

    @Test func devLoginExistsOnlyWhenEnabled() async throws {
        let off = try await RunningServer.start()
        #expect(try await off.post("/api/auth/dev", body: #"{"user":"alice"}"#, apiKey: nil).0 == 404)
        try await off.stop()
        var configuration = RunningServer.configuration()
        configuration.devLogin = true
        let on = try await RunningServer.start(configuration)
        let (status, body) = try await on.post("/api/auth/dev", body: #"{"user":"alice","name":"Alice"}"#, apiKey: nil)
        #expect(status == 200 && body["user"]?["name"] == "Alice")
        #expect(try await on.post("/api/auth/dev", body: #"{"user":"a#b"}"#, apiKey: nil).0 == 400)
        #expect(try await on.post("/api/auth/dev", body: #"{"user":""}"#, apiKey: nil).0 == 400)
        try await on.stop()
    }
}

@Suite struct ConfigurationTests {
    func write(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-config-\(UUID().uuidString).json").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func defaultsNeedNothing() throws {
        let configuration = try ConfigurationLoader.load(file: nil, environment: [:], flags: [:])
        #expect(configuration.listenHost == "127.0.0.1" && configuration.listenPort == 8000)
        #expect(configuration.database == "var/gondola.sqlite")
        // Secure by default: the default namespace closed, no other origin, no anonymous connection.
        #expect(configuration.hub.namespaces[""] == NamespaceOptions(name: ""))
        #expect(configuration.allowedOrigins == OriginCheck() && configuration.internalListen == nil)
        #expect(!configuration.hub.allowAnonymousConnectWithoutToken)
    }

    @Test func secureDefaultsKeysAreRead() throws {
        let file = try write(
            #"""
            {"internal_listen": "10.0.0.5:9000", "allowed_origins": ["https://App.example.com"], "client_connection_limit": 1000,
             "client_connection_rate_limit": 50, "client_user_connection_limit": 3, "user_personal_single_connection": true,
             "channel_max_length": 512, "allow_anonymous_connect_without_token": true, "token_user_id_claim": "uid",
             "token_hmac_secret_previous": "an-older-secret-of-at-least-32-bytes!", "token_hmac_secret_previous_until": "2026-12-31T00:00:00Z",
             "namespaces": [{"name": "lobby", "history_meta_ttl": "48h", "allow_subscribe_for_anonymous": true}]}
            """#)
        let configuration = try ConfigurationLoader.load(file: file, environment: [:], flags: [:])
        #expect(configuration.internalListen?.host == "10.0.0.5" && configuration.internalListen?.port == 9000)
        #expect(configuration.allowedOrigins.patterns == ["https://app.example.com"])
        #expect(configuration.clientConnectionLimit == 1000 && configuration.clientConnectionRateLimit == 50)
        #expect(configuration.hub.userConnectionLimit == 3 && configuration.hub.userPersonalSingleConnection)
        #expect(configuration.hub.channelMaxLength == 512 && configuration.hub.allowAnonymousConnectWithoutToken)
        #expect(configuration.tokenUserIDClaim == "uid")
        #expect(configuration.tokenHMACSecretPreviousUntil == Date(timeIntervalSince1970: 1_798_675_200))
        #expect(configuration.hub.namespaces["lobby"]?.historyMetaTTL == .seconds(48 * 3600))
        #expect(configuration.hub.namespaces["lobby"]?.allowSubscribeForAnonymous == true)
        // A previous secret without its end date stops the start.
        var unbounded = configuration
        unbounded.tokenHMACSecretPreviousUntil = nil
        #expect(throws: ConfigurationError.self) { try unbounded.tokenKeys() }
    }

    @Test func fileThenEnvironmentThenFlags() throws {
        let file = try write(
            #"{"listen":"127.0.0.1:9000","ping_interval":"10s","max_frame_bytes":1024,"command_rate":5000,"command_burst":6000,"websocket_compression":true,"websocket_compression_min_bytes":64,"websocket_compression_window_bits":12,"websocket_compression_memory_level":5,"namespaces":[{"name":"room","history_size":5,"history_ttl":"1m","presence":true,"allow_publish_for_client":true,"allowed_delta_types":["fossil"],"delta_publish":true}]}"#
        )
        let configuration = try ConfigurationLoader.load(
            file: file, environment: ["GONDOLA_PING_INTERVAL": "5s", "HOME": "/root", "GONDOLA_DEV_LOGIN": "true"],
            flags: ["ping_interval": "250ms"])
        #expect(configuration.listenPort == 9000)
        #expect(configuration.hub.pingInterval == .milliseconds(250))
        #expect(configuration.devLogin)
        #expect(configuration.maxFrameBytes == 1024)
        #expect(configuration.hub.commandRate == 5000 && configuration.hub.commandBurst == 6000)
        #expect(
            configuration.webSocketCompression && configuration.webSocketCompressionMinBytes == 64 && configuration.webSocketCompressionLevel == 1)
        #expect(configuration.webSocketCompressionWindowBits == 12 && configuration.webSocketCompressionMemoryLevel == 5)
        #expect(configuration.hub.namespaces["room"]?.historyTTL == .seconds(60))
        #expect(configuration.hub.namespaces["room"]?.presence == true)
        #expect(configuration.hub.namespaces["room"]?.allowPublishForClient == true)
        #expect(configuration.hub.namespaces["room"]?.allowedDeltaTypes == [.fossil])
        #expect(configuration.hub.namespaces[""]?.allowedDeltaTypes == [])
        #expect(configuration.hub.namespaces["room"]?.deltaPublish == true && configuration.hub.namespaces[""]?.deltaPublish == false)
    }

    @Test(arguments: [
        (#"{"listn":"x"}"#, "unknown key 'listn'"),
        (#"{"listen":"nowhere"}"#, "'listen' expected host:port"),
        (#"{"ping_interval":"soon"}"#, "'ping_interval' expected a duration"),
        (#"{"max_frame_bytes":-1}"#, "'max_frame_bytes' must be at least"),
        (#"{"command_rate":0}"#, "'command_rate' must be at least 1"),
        (#"{"dev_login":"maybe"}"#, "'dev_login' expected true or false"),
        (#"{"token_hmac_secret":"change-me"}"#, "'token_hmac_secret' must be at least 32 bytes"),
        (#"{"namespaces":[{"name":"room","histroy_size":1}]}"#, "unknown key 'namespaces[0].histroy_size'"),
        (#"{"namespaces":[{"history_size":1}]}"#, "namespaces[0].name is required"),
        (#"{"namespaces":[{"name":"room","allow_publish_for_client":"yes"}]}"#, "namespaces[0].allow_publish_for_client' expected true or false"),
        (#"{"websocket_compression":"maybe"}"#, "'websocket_compression' expected true or false"),
        (#"{"websocket_compression_level":10}"#, "'websocket_compression_level' must be at most 9, got 10"),
        (#"{"websocket_compression_min_bytes":-1}"#, "'websocket_compression_min_bytes' must be at least 0, got -1"),
        (#"{"websocket_compression_window_bits":8}"#, "'websocket_compression_window_bits' must be at least 9, got 8"),
        (#"{"websocket_compression_memory_level":0}"#, "'websocket_compression_memory_level' must be at least 1, got 0"),
        (
            #"{"namespaces":[{"name":"room","allowed_delta_types":["xdelta"]}]}"#,
            #"'namespaces[0].allowed_delta_types' has "xdelta", not a delta type (known: fossil)"#
        ),
        (
            #"{"namespaces":[{"name":"room","allowed_delta_types":"fossil"}]}"#,
            "'namespaces[0].allowed_delta_types' expected an array of delta types, got string"
        ),
        (#"{"proxy_teleport_endpoint":"http://127.0.0.1:9/x"}"#, "unknown key 'proxy_teleport_endpoint'"),
        (#"{"proxy_rpc_endpoint":"ftp://backend"}"#, "'proxy_rpc_endpoint' expected an http(s) URL, got 'ftp://backend'"),
        (#"{"proxies":[{"name":"a","endpoint":"ftp://x"}]}"#, "proxies[0].endpoint expected an http(s) URL"),
        (#"{"proxies":[{"name":"a","endpoint":"http://x","retries":1}]}"#, "unknown key 'proxies[0].retries'"),
        (#"{"proxies":[{"name":"a","endpoint":"http://x","binary_encoding":"yes"}]}"#, "'proxies[0].binary_encoding' expected true or false"),
        (#"{"proxy_rpc_binary_encoding":1}"#, "'proxy_rpc_binary_encoding' expected true or false"),
        (#"{"rpc_proxies":[{"prefix":"billing."}]}"#, "rpc_proxies[0].proxy is required"),
        (#"{"allowed_origins":["https://a b.example"]}"#, "'allowed_origins' 'https://a b.example' is not an origin pattern"),
        (#"{"internal_listen":"9000"}"#, "'internal_listen' expected host:port, got '9000'"),
        (#"{"client_connection_limit":-1}"#, "'client_connection_limit' must be at least 0, got -1"),
        (#"{"channel_max_length":0}"#, "'channel_max_length' must be at least 1, got 0"),
        (#"{"token_jwks_public_endpoint":"ftp://idp"}"#, "'token_jwks_public_endpoint' expected an http(s) URL, got 'ftp://idp'"),
        (#"{"token_hmac_secret_previous_until":"next week"}"#, "'token_hmac_secret_previous_until' expected an RFC 3339 date"),
        (#"{"namespaces":[{"name":"room","history_meta_ttl":"0s"}]}"#, "'namespaces[0].history_meta_ttl' must be greater than zero"),
        (#"{"namespaces":[{"name":"a b"}]}"#, "namespaces[0].name 'a b' is not a valid namespace name"),
        ("[1]", "must hold a JSON object"),
        ("{", "line 1 column 2: not valid JSON"),
    ])
    func fileErrorsNameTheKey(_ text: String, _ expected: String) throws {
        let file = try write(text)
        #expect(throws: ConfigurationError.self) { try ConfigurationLoader.load(file: file, environment: [:], flags: [:]) }
        do {
            _ = try ConfigurationLoader.load(file: file, environment: [:], flags: [:])
        } catch {
            #expect(error.description.contains(expected), "\(error.description)")
        }
    }

    @Test func unknownEnvironmentVariableAndBadFlagAreNamed() {
        do {
            _ = try ConfigurationLoader.load(file: nil, environment: ["GONDOLA_PORT": "1"], flags: [:])
            Issue.record("accepted GONDOLA_PORT")
        } catch {
            #expect(error.description.contains("environment variable GONDOLA_PORT: unknown key 'port'"))
        }
        do {
            _ = try ConfigurationLoader.load(file: nil, environment: [:], flags: ["pong_timeout": "0s"])
            Issue.record("accepted zero pong timeout")
        } catch {
            #expect(error.description.contains("flag --pong-timeout: 'pong_timeout' must be greater than zero"))
        }
        #expect(throws: ConfigurationError.self) { try ConfigurationLoader.load(file: "/nonexistent/gondola.json", environment: [:], flags: [:]) }
    }

    @Test func proxiesByNameAreReadAndTheNamesTheyAreGivenChecked() throws {
        let file = try write(
            #"""
            {"proxies": [{"name": "billing", "endpoint": "http://127.0.0.1:9/billing", "timeout": "2s", "binary_encoding": true}],
             "rpc_proxies": [{"prefix": "billing.", "proxy": "billing"}], "proxy_rpc_endpoint": "http://127.0.0.1:9/rpc",
             "proxy_rpc_timeout": "300ms", "proxy_http_headers": "Cookie, X-App", "proxy_sub_refresh_binary_encoding": true, "proxy_emulated_headers": ["X-App-Token"],
             "namespaces": [{"name": "shop", "subscribe_proxy_name": "billing", "proxy_publish": true}]}
            """#)
        let configuration = try ConfigurationLoader.load(file: file, environment: [:], flags: [:])
        #expect(
            configuration.namedProxies == ["billing": ProxyEndpoint(url: "http://127.0.0.1:9/billing", timeout: .seconds(2), binaryEncoding: true)])
        #expect(
            configuration.proxyEndpoints == [
                .rpc: ProxyEndpoint(url: "http://127.0.0.1:9/rpc", timeout: .milliseconds(300)),
                .subRefresh: ProxyEndpoint(url: "", binaryEncoding: true),
            ])
        #expect(configuration.hub.rpcProxies == [RPCProxyRoute(prefix: "billing.", proxy: "billing")])
        #expect(configuration.proxyHTTPHeaders == ["Cookie", "X-App"])
        #expect(configuration.hub.proxyEmulatedHeaders == ["x-app-token"])
        #expect(configuration.hub.namespaces["shop"]?.subscribeProxyName == "billing" && configuration.hub.namespaces["shop"]?.proxyPublish == true)
        try configuration.checkProxyNames()
        // A name `proxies` does not define stops the loading, as any bad value.
        let unknownName = try write(#"{"namespaces":[{"name":"shop","publish_proxy_name":"nope"}]}"#)
        do {
            _ = try ConfigurationLoader.load(file: unknownName, environment: [:], flags: [:])
            Issue.record("accepted a proxy name 'proxies' does not define")
        } catch {
            #expect(error.description == "namespace 'shop' publish_proxy_name names the proxy 'nope', which 'proxies' does not define")
        }
    }

    /// Key files are read when the server starts: one it cannot read, or that holds no key,
    /// stops the start naming the setting.
    @Test func tokenKeyFilesAreNamedWhenTheyCannotBeUsed() async throws {
        let loaded = try ConfigurationLoader.load(
            file: nil, environment: ["GONDOLA_TOKEN_AUDIENCE": "app", "GONDOLA_TOKEN_ISSUER": "https://auth"], flags: [:])
        #expect(loaded.tokenAudience == "app" && loaded.tokenIssuer == "https://auth")
        // A file that cannot be read stops the loading already.
        do {
            _ = try ConfigurationLoader.load(file: nil, environment: [:], flags: ["token_jwks_file": "/nonexistent/jwks.json"])
            Issue.record("accepted a key file that cannot be read")
        } catch {
            #expect(error.description.hasPrefix("'token_jwks_file' cannot read /nonexistent/jwks.json"))
        }
        let notAKey = try write("not a key")
        for (setting, expected) in [
            (\ServerConfiguration.tokenRSAPublicKeyFile, "token_rsa_public_key_file: not a PEM RSA public key"),
            (\.tokenECDSAPublicKeyFile, "token_ecdsa_public_key_file: not a PEM ECDSA public key"),
            (\.tokenJWKSFile, "token_jwks_file: not a JSON Web Key Set"),
        ] {
            var configuration = RunningServer.configuration()
            configuration[keyPath: setting] = notAKey
            do {
                let server = try await GondolaServer(configuration: configuration)
                _ = server
                Issue.record("started with \(expected)")
            } catch let error as ConfigurationError {
                #expect(error.description.hasPrefix(expected), "\(error)")
            }
        }
    }
}
