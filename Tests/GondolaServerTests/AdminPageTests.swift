import Foundation
import Testing

@testable import GondolaServer

/// The admin page's settings and tokens: the page never runs without a password and a secret,
/// Centrifugo's `admin_insecure` is refused, and a token is good only until it expires and only
/// with the secret that signed it. The page itself is driven in Chromium by
/// `conformance/test_admin_page.py`.
@Suite struct AdminPageTests {
    static let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../web/admin").standardized.path
    static let secret = "a-secret-of-at-least-thirty-two-bytes"

    static func check(_ environment: [String: String]) -> [String] {
        ConfigurationLoader.check(file: nil, environment: environment, flags: [:]).problems.map(\.description)
    }

    @Test func thePageIsReadWithItsSettings() throws {
        let configuration = try ConfigurationLoader.load(
            file: nil,
            environment: [
                "GONDOLA_ADMIN": "true", "GONDOLA_ADMIN_PASSWORD": "pw", "GONDOLA_ADMIN_SECRET": Self.secret,
                "GONDOLA_ADMIN_WEB_PATH": Self.page, "GONDOLA_ADMIN_EXTERNAL": "true",
            ], flags: [:])
        #expect(configuration.admin.enabled && configuration.admin.external && configuration.admin.password == "pw")
    }

    @Test func thePageNeedsAPasswordALongSecretAndItsFiles() {
        #expect(
            Self.check(["GONDOLA_ADMIN": "true", "GONDOLA_ADMIN_SECRET": Self.secret, "GONDOLA_ADMIN_WEB_PATH": Self.page]).contains {
                $0.contains("'admin' needs both 'admin_password' and 'admin_secret'")
            })
        #expect(
            Self.check(["GONDOLA_ADMIN": "true", "GONDOLA_ADMIN_PASSWORD": "pw", "GONDOLA_ADMIN_SECRET": "short"]).contains {
                $0.contains("'admin_secret' must be at least 32 bytes long")
            })
        #expect(
            Self.check([
                "GONDOLA_ADMIN": "true", "GONDOLA_ADMIN_PASSWORD": "pw", "GONDOLA_ADMIN_SECRET": Self.secret, "GONDOLA_ADMIN_WEB_PATH": "/nowhere",
            ])
            .contains { $0.contains("/nowhere/index.html cannot be read") })
        #expect(Self.check(["GONDOLA_ADMIN_INSECURE": "true"]).contains { $0.contains("the admin page always needs 'admin_password'") })
        #expect(Self.check(["GONDOLA_ADMIN_INSECURE": "false"]).isEmpty)
        #expect(Self.check(["GONDOLA_ADMIN_PASSWORD": "pw"]).isEmpty, "settings of a page that is off are not checked")
    }

    @Test func aTokenHoldsUntilItExpiresAndOnlyWithItsSecret() {
        let tokens = AdminTokens(secret: Self.secret)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let token = tokens.mint(now: now)
        #expect(tokens.verify(token, now: now.addingTimeInterval(AdminTokens.lifetime - 1)))
        #expect(!tokens.verify(token, now: now.addingTimeInterval(AdminTokens.lifetime + 1)))
        #expect(!AdminTokens(secret: Self.secret + "!").verify(token, now: now))
        let expiry = token.split(separator: ".")[0]
        let signature = token.split(separator: ".")[1]
        #expect(!tokens.verify("\(Int64(expiry)! + 3600).\(signature)", now: now), "a later expiry needs its own signature")
        for malformed in ["", ".", "\(expiry)", "\(expiry).", "x.\(signature)", "\(token).extra"] {
            #expect(!tokens.verify(malformed, now: now), "\(malformed)")
        }
    }

    static func withAdmin(_ adjust: (inout ServerConfiguration) -> Void = { _ in }) -> ServerConfiguration {
        var configuration = RunningServer.configuration()
        configuration.admin.enabled = true
        configuration.admin.password = "pw"
        configuration.admin.secret = secret
        configuration.admin.webPath = page
        adjust(&configuration)
        return configuration
    }

    /// Without an internal listener the page is on the public one; `admin_external` keeps it there
    /// when an internal listener exists.
    @Test(arguments: [false, true])
    func thePageIsOnThePublicListenerWhenThereIsNoInternalOneOrWhenAsked(withInternalListener: Bool) async throws {
        let server = try await RunningServer.start(
            Self.withAdmin {
                if withInternalListener { $0.internalListen = ("127.0.0.1", 0) }
                $0.admin.external = withInternalListener
            })
        let (status, page) = try await server.get("/admin/")
        #expect(status == 200 && page.contains("Gondola — admin"))
        let (signIn, answer) = try await server.post("/admin/auth", body: #"{"password":"pw"}"#, apiKey: nil)
        guard case let .string(token)? = answer["token"] else {
            Issue.record("no token: \(signIn) \(answer.text)")
            return
        }
        let (called, info) = try await server.post("/admin/api/info", body: "{}", apiKey: nil, headers: ["Authorization": "token \(token)"])
        #expect(called == 200 && info["result"]?["nodes"] != nil, "\(info.text)")
        try await server.stop()
    }

    /// Each bad request gets its status and error, and the page goes on serving.
    @Test func badRequestsAreRefusedPreciselyAndTheServerGoesOn() async throws {
        let server = try await RunningServer.start(Self.withAdmin())
        let noPassword = try await server.post("/admin/auth", body: #"{"name":"x"}"#, apiKey: nil)
        #expect(noPassword.0 == 400 && noPassword.1["error"]?["code"] == .int(107), "\(noPassword.1.text)")
        let tooLarge = try await server.post("/admin/auth", body: String(repeating: "p", count: 5000), apiKey: nil)
        #expect(tooLarge.0 == 413, "\(tooLarge.1.text)")
        let (_, signedIn) = try await server.post("/admin/auth", body: #"{"password":"pw"}"#, apiKey: nil)
        guard case let .string(token)? = signedIn["token"] else {
            Issue.record("no token: \(signedIn.text)")
            return
        }
        let authorization = ["Authorization": "token \(token)"]
        let notJSON = try await server.post("/admin/api/publish", body: "{not json", apiKey: nil, headers: authorization)
        #expect(notJSON.0 == 400 && notJSON.1["error"]?["code"] == .int(107), "\(notJSON.1.text)")
        let unknown = try await server.post("/admin/api/nope", body: "{}", apiKey: nil, headers: authorization)
        #expect(unknown.0 == 404 && unknown.1["error"]?["code"] == .int(104), "\(unknown.1.text)")
        let (watchStatus, watchAnswer) = try await server.get("/admin/watch?channel=nowhere:x&token=\(token)")
        #expect(watchStatus == 404 && watchAnswer.contains(#""code":102"#), "\(watchAnswer)")
        let (status, info) = try await server.post("/admin/api/info", body: "{}", apiKey: nil, headers: authorization)
        #expect(status == 200 && info["result"]?["nodes"] != nil, "the page goes on after each refusal: \(info.text)")
        try await server.stop()
    }

    @Test func signInsAreThrottled() {
        let throttle = LoginThrottle()
        let now = ContinuousClock.now
        #expect((0..<LoginThrottle.perMinute).allSatisfy { _ in throttle.admit(now: now) })
        #expect(!throttle.admit(now: now))
        #expect(throttle.admit(now: now + .seconds(60 / LoginThrottle.perMinute)), "one more after its share of a minute")
    }
}
