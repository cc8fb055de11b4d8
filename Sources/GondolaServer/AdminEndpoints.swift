import Crypto
import Foundation
import GondolaDomain
import GondolaHub
import GondolaProtocol
import Hummingbird
import Logging
import Synchronization

/// The admin page (`admin`), with Centrifugo's endpoints:
/// - `POST /admin/auth` with the password (a JSON `{"password": …}` or a form's `password`)
///   answers `{"token": …}`, a token signed with `admin_secret` that the page sends as
///   `Authorization: token …`; a wrong password answers 401, and more than `LoginThrottle`'s
///   attempts a minute 429.
/// - `POST /admin/api/<method>` is the server API (`ServerAPIEndpoint`) for a caller with that
///   token: the page never holds the API key.
/// - `GET /admin/watch?channel=…&token=…` streams the channel's publications as Server-Sent Events
///   (an EventSource cannot send headers, hence the token in the query): a unidirectional session
///   subscribed server-side, which takes no part in the channel's presence or join and leave.
/// - `GET /admin/settings` tells the page the server needs a password (`insecure: false`).
/// - The page's files from `admin_web_path` at `/admin/` (`/admin` redirects there).
struct AdminEndpoints: Sendable {
    let settings: AdminSettings
    let api: ServerAPI
    let node: Node
    let connections: OpenConnections
    let logger: Logger
    let tokens: AdminTokens
    let logins = LoginThrottle()

    init(settings: AdminSettings, api: ServerAPI, node: Node, connections: OpenConnections, logger: Logger) {
        self.settings = settings
        self.api = api
        self.node = node
        self.connections = connections
        self.logger = logger
        self.tokens = AdminTokens(secret: settings.secret)
    }

    /// Most bytes of a sign-in request.
    static let loginBodyLimit = 4096

    func addRoutes(to router: HTTPRouter) {
        // Wraps the routes added after it, and answers for the paths no route takes.
        router.add(middleware: FileMiddleware(settings.webPath, urlBasePath: "/admin", searchForIndexHtml: true))
        // The page's links are relative to its folder: `/admin` moves there. The router takes
        // `/admin/` for the same path; its 404 lets the files below answer with the page.
        router.get("/admin") { request, _ in
            guard !request.uri.path.hasSuffix("/") else { throw HTTPError(.notFound) }
            return Response(status: .permanentRedirect, headers: [.location: "/admin/"])
        }
        router.get("/admin/settings") { _, _ in JSONResponse.make(["edition": "gondola", "insecure": false]) }
        router.post("/admin/auth") { request, _ in await signIn(request) }
        ServerAPIEndpoint(api: api, prefix: "/admin/api", logger: logger) { [tokens] request in
            let words = (request.headers[.authorization] ?? "").split(separator: " ")
            guard words.count == 2, words[0].lowercased() == "token", tokens.verify(String(words[1]), now: Date()) else {
                return JSONResponse.error(.unauthorized, code: 101, "sign in to the admin page first (Authorization: token …)")
            }
            return nil
        }.addRoutes(to: router)
        router.get("/admin/watch") { request, context in watch(request, context) }
    }

    private func signIn(_ request: Request) async -> Response {
        guard logins.admit(now: .now) else {
            return JSONResponse.error(.tooManyRequests, code: 111, "too many sign-in attempts; at most \(LoginThrottle.perMinute) a minute")
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: Self.loginBodyLimit)
        } catch {
            return JSONResponse.error(.contentTooLarge, code: 107, "a sign-in is at most \(Self.loginBodyLimit) bytes")
        }
        var password: String?
        if request.headers[.contentType]?.hasPrefix("application/json") == true {
            if case let .string(given)? = (try? JSONParser.parse(body.readableBytesView))?["password"] { password = given }
        } else {
            password = (try? URLEncodedFormDecoder().decode(Login.self, from: String(buffer: body)))?.password
        }
        guard let password, !password.isEmpty else {
            return JSONResponse.error(.badRequest, code: 107, "the sign-in needs a password")
        }
        guard ConstantTime.equal(password, settings.password) else {
            logger.warning("admin sign-in refused: wrong password")
            return JSONResponse.error(.unauthorized, code: 101, "wrong password")
        }
        return JSONResponse.make(["token": .string(tokens.mint(now: Date()))])
    }

    private struct Login: Decodable {
        let password: String
    }

    private func watch(_ request: Request, _ context: HTTPRequestContext) -> Response {
        guard let token = request.uri.formParameter("token"), tokens.verify(token, now: Date()) else {
            return JSONResponse.error(.unauthorized, code: 101, "sign in to the admin page first (token=…)")
        }
        let channel = request.uri.formParameter("channel") ?? ""
        do throws(HubError) {
            _ = try node.resolve(channel)
        } catch {
            return JSONResponse.error(error)
        }
        let watcher = Credentials(
            user: "", subscriptions: [channel: SubscriptionGrant(overrides: NamespaceOverrides(presence: false, joinLeave: false))])
        let session = node.accept(encoding: .json, transport: .unidirectional)
        return HTTPTransports.stream(session, on: context, connections: connections, encoding: .json, framing: .events) { session in
            await session.connect(unidirectional: ConnectRequest(), as: watcher)
        }
    }
}

/// The admin page's tokens: `<expiry>.<HMAC-SHA256 of it>` (hex) with `admin_secret`,
/// valid for `lifetime`. Changing the secret ends every token.
struct AdminTokens: Sendable {
    let key: SymmetricKey
    /// How long a sign-in lasts.
    static let lifetime: TimeInterval = 24 * 3600

    init(secret: String) {
        key = SymmetricKey(data: Data(secret.utf8))
    }

    func mint(now: Date) -> String {
        let expiry = String(Int64(now.timeIntervalSince1970 + Self.lifetime))
        return expiry + "." + signature(of: expiry)
    }

    func verify(_ token: String, now: Date) -> Bool {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let expiry = Int64(parts[0]), ConstantTime.equal(String(parts[1]), signature(of: String(parts[0]))) else {
            return false
        }
        return Double(expiry) > now.timeIntervalSince1970
    }

    private func signature(of text: String) -> String {
        HMAC<SHA256>.authenticationCode(for: Data(("gondola-admin." + text).utf8), using: key).map { String(format: "%02x", $0) }.joined()
    }
}

/// At most `perMinute` sign-in attempts a minute on this node, right or wrong, with that many at
/// once: guessing the password takes years, and the admin signing in is not held up.
final class LoginThrottle: Sendable {
    static let perMinute = 10
    private let bucket = Mutex(TokenBucket(rate: Double(perMinute) / 60, burst: Double(perMinute), now: .now))

    func admit(now: ContinuousClock.Instant) -> Bool {
        bucket.withLock { $0.take(now: now) }
    }
}
