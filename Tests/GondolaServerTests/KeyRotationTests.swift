import Foundation
import GondolaHub
import GondolaProtocol
import GondolaServer
import GondolaTestSupport
import Hummingbird
import JWTKit
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Keys that rotate: a JWKS URL fetched again when a token names a new key (and kept while
/// the URL is down), a previous HMAC secret accepted until its date, and a user id read from
/// another claim, each through a real connection.
@Suite struct KeyRotationTests {
    /// The claims a test token carries.
    struct Claims: JWTPayload {
        var sub: String?
        var userID: String?
        var exp: ExpirationClaim

        enum CodingKeys: String, CodingKey {
            case sub, exp
            case userID = "user_id"
        }

        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    /// An identity provider's JWKS endpoint whose key set and availability the test changes.
    final class IdentityProvider: Sendable {
        let document = Mutex(#"{"keys":[]}"#)
        let down = Mutex(false)
        let requests = Atomic<Int>(0)

        func publish(_ keys: [(kid: String, key: ES256PrivateKey)]) {
            let entries = keys.map { entry in
                let parameters = entry.key.parameters!
                return #"{"kty":"EC","crv":"P-256","alg":"ES256","use":"sig","kid":"\#(entry.kid)","x":"\#(parameters.x)","y":"\#(parameters.y)"}"#
            }
            document.withLock { $0 = #"{"keys":[\#(entries.joined(separator: ","))]}"# }
        }

        func start() async throws -> (url: String, task: Task<Void, Error>) {
            let router = Router()
            router.get("/jwks") { [self] _, _ -> Response in
                requests.add(1, ordering: .relaxed)
                guard !down.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
                return Response(
                    status: .ok, headers: [.contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(string: document.withLock { $0 })))
            }
            let (port, task) = try await startStandIn(router, name: "identity provider")
            return ("http://127.0.0.1:\(port)/jwks", task)
        }
    }

    static func token(_ key: ES256PrivateKey, kid: String, user: String) async throws -> String {
        let keys = await JWTKeyCollection().add(ecdsa: key, kid: JWKIdentifier(string: kid))
        return try await keys.sign(Claims(sub: user, exp: ExpirationClaim(value: Date().addingTimeInterval(600))), kid: JWKIdentifier(string: kid))
    }

    /// The connect reply's error code, or nil when the connect succeeded; closes with the code when it closed.
    static func connectOutcome(_ server: RunningServer, token: String) async throws -> Int? {
        let client = try RawWebSocket(port: server.port)
        _ = try await client.responseHeaders()
        try client.sendText(Array(#"{"id":1,"connect":{"token":"\#(token)"}}"#.utf8))
        let frame = try await client.nextFrame()
        if frame.opcode == 0x8 { return Int(frame.payload[0]) << 8 | Int(frame.payload[1]) }
        let reply = try JSONParser.parse(frame.payload)
        if case let .int(code)? = reply["error"]?["code"] { return Int(code) }
        return nil
    }

    @Test func aRotatedKeyIsFetchedAgainAndTheLastGoodSetOutlivesAnOutage() async throws {
        let provider = IdentityProvider()
        let first = ES256PrivateKey()
        let second = ES256PrivateKey()
        provider.publish([("k1", first)])
        let (url, task) = try await provider.start()
        defer { task.cancel() }
        var configuration = RunningServer.configuration()
        configuration.tokenJWKSPublicEndpoint = url
        let server = try await RunningServer.start(configuration)
        // The set is fetched at start, in the background: a connect may come first and is told to retry.
        try await eventually("the first key verifies") {
            try await Self.connectOutcome(server, token: try await Self.token(first, kid: "k1", user: "u1")) == nil
        }
        // The provider rotates: the first connect with the new key answers a temporary 100
        // (the SDK retries) and starts a fetch; a retry gets in.
        provider.publish([("k1", first), ("k2", second)])
        let rotated = try await Self.token(second, kid: "k2", user: "u2")
        #expect(try await Self.connectOutcome(server, token: rotated) == 100)
        try await eventually("the rotated key verifies") { try await Self.connectOutcome(server, token: rotated) == nil }
        // An unknown key, asked again within the refetch interval, is refused for good.
        let stranger = try await Self.token(ES256PrivateKey(), kid: "k9", user: "u9")
        #expect(try await Self.connectOutcome(server, token: stranger) == 3500)
        // The provider goes down: the keys fetched before still verify.
        provider.down.withLock { $0 = true }
        #expect(try await Self.connectOutcome(server, token: rotated) == nil)
        let (_, metrics) = try await server.get("/metrics")
        #expect(metrics.contains(#"gondola_jwks_fetches_total{outcome="ok"}"#), "\(metrics)")
        try await server.stop()
    }

    @Test func thePreviousHMACSecretVerifiesUntilItsDate() async throws {
        let previous = "the-previous-secret-of-at-least-32-bytes"
        let oldToken = try await ConnectionTokens(secret: previous).mint(user: "rotating", ttl: .seconds(600))
        var configuration = RunningServer.configuration()
        configuration.tokenHMACSecretPrevious = previous
        configuration.tokenHMACSecretPreviousUntil = Date().addingTimeInterval(3600)
        let server = try await RunningServer.start(configuration)
        #expect(try await Self.connectOutcome(server, token: oldToken) == nil)
        #expect(try await Self.connectOutcome(server, token: try await server.token("current")) == nil)
        try await server.stop()

        configuration.tokenHMACSecretPreviousUntil = Date().addingTimeInterval(-1)
        let later = try await RunningServer.start(configuration)
        #expect(try await Self.connectOutcome(later, token: oldToken) == 3500)
        try await later.stop()
    }

    @Test func theUserIDComesFromTheConfiguredClaim() async throws {
        var configuration = RunningServer.configuration()
        configuration.tokenUserIDClaim = "user_id"
        let server = try await RunningServer.start(configuration)
        let keys = await JWTKeyCollection().add(hmac: HMACKey(from: RunningServer.secret), digestAlgorithm: .sha256)
        let token = try await keys.sign(Claims(sub: "not-this", userID: "dana", exp: ExpirationClaim(value: Date().addingTimeInterval(600))))
        let client = try await LiveClient.connect(server.webSocketURL, token: token)
        #expect(try await client.subscribe("room:#dana") == nil)
        await client.close()
        let withoutClaim = try await keys.sign(Claims(sub: "only-sub", exp: ExpirationClaim(value: Date().addingTimeInterval(600))))
        #expect(try await Self.connectOutcome(server, token: withoutClaim) == 3500)
        try await server.stop()
    }
}

/// `internal_listen`: the server API, metrics and health on their own listener, and
/// only client transports and pages on the public one.
@Suite struct InternalListenerTests {
    /// The HTTP status of a request to 127.0.0.1:`port`.
    static func status(_ port: Int, _ method: String, _ path: String) async throws -> Int {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        request.setValue(RunningServer.apiKey, forHTTPHeaderField: "X-API-Key")
        if method == "POST" { request.httpBody = Data("{}".utf8) }
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as! HTTPURLResponse).statusCode
    }

    @Test func operationalRoutesLiveOnTheInternalListenerOnly() async throws {
        var configuration = RunningServer.configuration()
        configuration.internalListen = ("127.0.0.1", 0)
        let ports = AsyncStream.makeStream(of: Int.self)
        let server = try await RunningServer.start(configuration, onInternalServerRunning: { ports.continuation.yield($0) })
        var iterator = ports.stream.makeAsyncIterator()
        guard let internalPort = await iterator.next() else { throw HarnessError("no internal listener") }
        for (method, path) in [("POST", "/api/info"), ("GET", "/metrics"), ("GET", "/health")] {
            #expect(try await Self.status(server.port, method, path) == 404, "\(path) on the public listener")
            #expect(try await Self.status(internalPort, method, path) == 200, "\(path) on the internal listener")
        }
        // Clients still connect on the public listener; the internal one has no client endpoint.
        let client = try await LiveClient.connect(server.webSocketURL, token: try await server.token("inside"))
        #expect(try await client.subscribe("room:x") == nil)
        await client.close()
        let upgrade = try RawWebSocket(port: internalPort)
        let status = try await upgrade.responseHeaders().first ?? ""
        #expect(!status.contains("101"), "\(status)")
        try await server.stop()
    }
}
