import Crypto
import CryptoExtras
import Foundation
import GondolaProtocol
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// A local stand-in for APNs and FCM, for tests and benchmarks: an HTTP/2 server over TLS
/// (a certificate made when it starts) that checks each request the way the services
/// document them — the APNs provider token (ES256, `kid`, `iss`, `iat` under an hour), the
/// `apns-*` headers and the payload; the FCM OAuth2 assertion (RS256, `iss`, `scope`, `aud`,
/// an hour at most), the access token and the v1 message — and answers success, or what
/// `script` asked for a token: unregistered (APNs 410 `Unregistered`, FCM 404 `UNREGISTERED`),
/// 429 with `Retry-After`, or 500. What it accepted, and every request it refused as
/// malformed, is recorded.
public final class PushStandIn: Sendable {
    /// What the stand-in answers one request for a token.
    public enum Answer: Sendable, Equatable {
        case accept
        case unregistered
        case tooManyRequests(retryAfterSeconds: Int)
        case serverError
        /// Takes the request and never answers it (a service that stalls).
        case hang
        /// Says the request's credential expired (APNs 403 `ExpiredProviderToken`, FCM 401
        /// `UNAUTHENTICATED`), as a service does when the sender must renew it.
        case expiredCredentials
        /// Accepts, then sends a graceful GOAWAY on the connection, as a service does
        /// before it closes one: open streams are answered, later requests need a new connection.
        case acceptAndGoAway
    }

    /// A notification the stand-in accepted.
    public struct Accepted: Sendable {
        public let service: String
        public let token: String
        public let headers: [String: String]
        public let body: JSON
        /// When it was accepted, in milliseconds since 1970.
        public let at: Int64
    }

    /// The credentials the stand-in checks against.
    public let credentials: StandInCredentials
    /// The certificate a client trusts, in PEM.
    public let certificatePEM: String
    public let port: Int
    /// How long FCM access tokens last (seconds).
    public let accessTokenLifetime: Int
    private let channel: any Channel
    private let state = Mutex(State())
    private let opened: Connections

    private struct State {
        var scripts: [String: [Answer]] = [:]
        var accepted: [Accepted] = []
        var refused: [String] = []
        var answered: [String: Int] = [:]
        var accessTokens: [String: Int64] = [:]
        var tokenExchanges = 0
        /// Provider tokens whose signature was checked (at most `maxVerifiedTokens`), as
        /// a service keeps them: a client sends one token for up to an hour.
        var verifiedProviderTokens: [String: SignedToken] = [:]
        var log: FileHandle?
    }

    static let maxVerifiedTokens = 16
    /// Streams a client may open at once (`SETTINGS_MAX_CONCURRENT_STREAMS`): 100, as FCM
    /// announces (APNs raises its limit up to 1,000 once a connection is trusted).
    public static let maxConcurrentStreams = 100
    static let settings =
        nioDefaultSettings.filter { $0.parameter != .maxConcurrentStreams }
        + [HTTP2Setting(parameter: .maxConcurrentStreams, value: maxConcurrentStreams)]

    /// Starts on 127.0.0.1 and `port` (0: any free port). With `log`, each accepted
    /// notification is also appended to that file as a JSON line.
    public init(credentials: StandInCredentials, port: Int = 0, accessTokenLifetime: Int = 3599, log: String? = nil) async throws {
        let certificate = try StandInCertificate()
        let context = try NIOSSLContext(configuration: certificate.tls)
        self.credentials = credentials
        self.certificatePEM = certificate.pem
        self.accessTokenLifetime = accessTokenLifetime
        let handlerState = Box()
        let opened = Connections()
        self.opened = opened
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                opened.count.wrappingAdd(1, ordering: .relaxed)
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                }.flatMap {
                    channel.configureHTTP2Pipeline(mode: .server, initialLocalSettings: Self.settings) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandlers([
                                HTTP2FramePayloadToHTTP1ServerCodec(), StreamHandler(standIn: handlerState),
                            ])
                        }
                    }.map { _ in () }
                }
            }
        channel = try await bootstrap.bind(host: "127.0.0.1", port: port).get()
        self.port = channel.localAddress?.port ?? port
        if let log {
            FileManager.default.createFile(atPath: log, contents: nil)
            state.withLock { $0.log = FileHandle(forWritingAtPath: log) }
        }
        handlerState.standIn.withLock { $0 = self }
    }

    /// The APNs base URL (`apns_environment`) and the FCM base URL (`fcm_base_url`).
    public var baseURL: String { "https://127.0.0.1:\(port)" }

    /// Answers the next requests for `token` with `answers`, in order; then accepts.
    public func script(_ token: String, _ answers: [Answer]) {
        state.withLock { $0.scripts[token, default: []] += answers }
    }

    public var accepted: [Accepted] { state.withLock { $0.accepted } }
    /// Requests refused because they broke the services' rules, each with the reason.
    public var refused: [String] { state.withLock { $0.refused } }
    /// How many requests for `token` were answered in all (accepted or not).
    public func answered(_ token: String) -> Int { state.withLock { $0.answered[token] ?? 0 } }
    /// OAuth2 assertions exchanged for access tokens.
    public var tokenExchanges: Int { state.withLock { $0.tokenExchanges } }
    /// Connections clients opened so far.
    public var connectionsOpened: Int { opened.count.load(ordering: .relaxed) }

    public func stop() async throws {
        try await channel.close()
        state.withLock { try? $0.log?.close() }
    }

    // MARK: Requests

    struct Reply {
        var status: HTTPResponseStatus
        var headers: [(String, String)] = []
        var body: JSON?
        /// The stream is left without an answer.
        var unanswered = false
        /// GOAWAY follows the answer on its connection.
        var goAway = false

        static let none = Reply(status: .ok, unanswered: true)
    }

    func handle(method: HTTPMethod, path: String, headers: HTTPHeaders, body: [UInt8]) -> Reply {
        if method == .POST, path == "/token" { return exchange(headers: headers, body: body) }
        if method == .POST, path.hasPrefix("/3/device/") {
            return apns(token: String(path.dropFirst("/3/device/".count)), headers: headers, body: body)
        }
        let fcmPath = "/v1/projects/\(credentials.fcmProjectID)/messages:send"
        if method == .POST, path == fcmPath { return fcm(headers: headers, body: body) }
        return refuse(Reply(status: .notFound, body: ["error": "no such endpoint"]), "\(method) \(path): no such endpoint")
    }

    private func apns(token: String, headers: HTTPHeaders, body: [UInt8]) -> Reply {
        func bad(_ reason: String, _ detail: String, status: HTTPResponseStatus = .badRequest) -> Reply {
            refuse(Reply(status: status, body: ["reason": .string(reason)]), "APNs \(reason): \(detail)")
        }
        guard token.utf8.count == 64 || token.utf8.count == 200 || (token.utf8.count > 64 && token.utf8.count < 200),
            token.allSatisfy(\.isHexDigit)
        else { return bad("BadDeviceToken", token) }
        guard let authorization = headers.first(name: "authorization"), authorization.hasPrefix("bearer ") else {
            return bad("MissingProviderToken", "no bearer token", status: .forbidden)
        }
        do {
            let jwt = try providerToken(String(authorization.dropFirst("bearer ".count)))
            guard jwt.header["kid"] == .string(credentials.apnsKeyID) else {
                return bad("InvalidProviderToken", "kid \(jwt.header["kid"]?.text ?? "-")", status: .forbidden)
            }
            guard jwt.string("iss") == credentials.apnsTeamID else { return bad("InvalidProviderToken", "iss", status: .forbidden) }
            guard let iat = jwt.integer("iat"), iat <= Self.now() + 60 else { return bad("InvalidProviderToken", "iat", status: .forbidden) }
            guard Self.now() - iat < 3600 else { return bad("ExpiredProviderToken", "iat \(iat)", status: .forbidden) }
        } catch {
            return bad("InvalidProviderToken", "\(error)", status: .forbidden)
        }
        guard let topic = headers.first(name: "apns-topic") else { return bad("MissingTopic", "no apns-topic") }
        guard topic == credentials.apnsTopic else { return bad("TopicDisallowed", topic) }
        guard ["alert", "background"].contains(headers.first(name: "apns-push-type") ?? "") else { return bad("InvalidPushType", "apns-push-type") }
        if let priority = headers.first(name: "apns-priority"), !["5", "10", "1"].contains(priority) { return bad("BadPriority", priority) }
        if let expiration = headers.first(name: "apns-expiration"), Int64(expiration) == nil { return bad("BadExpirationDate", expiration) }
        if let collapse = headers.first(name: "apns-collapse-id"), collapse.utf8.count > 64 { return bad("BadCollapseId", collapse) }
        if let id = headers.first(name: "apns-id"), UUID(uuidString: id) == nil { return bad("BadMessageId", id) }
        guard body.count <= 4096 else { return bad("PayloadTooLarge", "\(body.count) bytes", status: .payloadTooLarge) }
        guard case let .object(members)? = try? JSONParser.parse(body), case .object? = members.first(where: { $0.key == "aps" })?.value else {
            return bad("PayloadEmpty", "no aps object")
        }
        let answer = next(for: token)
        switch answer {
        case .accept, .acceptAndGoAway:
            let id = headers.first(name: "apns-id") ?? UUID().uuidString
            record(Accepted(service: "apns", token: token, headers: Self.dictionary(headers), body: .object(members), at: Self.milliseconds()))
            return Reply(status: .ok, headers: [("apns-id", id)], goAway: answer == .acceptAndGoAway)
        case .unregistered:
            return Reply(status: .gone, body: ["reason": "Unregistered", "timestamp": .int(Self.milliseconds())])
        case let .tooManyRequests(seconds):
            return Reply(status: .tooManyRequests, headers: [("retry-after", String(seconds))], body: ["reason": "TooManyRequests"])
        case .serverError:
            return Reply(status: .internalServerError, body: ["reason": "InternalServerError"])
        case .hang:
            return .none
        case .expiredCredentials:
            return Reply(status: .forbidden, body: ["reason": "ExpiredProviderToken"])
        }
    }

    /// `bearer` taken apart, its ES256 signature checked once while it stays among the kept ones.
    private func providerToken(_ bearer: String) throws -> SignedToken {
        if let known = state.withLock({ $0.verifiedProviderTokens[bearer] }) { return known }
        let token = try SignedToken(bearer, verifiedWith: .es256(credentials.apnsPublicKey))
        state.withLock { state in
            if state.verifiedProviderTokens.count >= Self.maxVerifiedTokens { state.verifiedProviderTokens.removeAll() }
            state.verifiedProviderTokens[bearer] = token
        }
        return token
    }

    private func exchange(headers: HTTPHeaders, body: [UInt8]) -> Reply {
        func bad(_ detail: String) -> Reply {
            refuse(Reply(status: .badRequest, body: ["error": "invalid_grant", "error_description": .string(detail)]), "OAuth2: \(detail)")
        }
        guard headers.first(name: "content-type")?.hasPrefix("application/x-www-form-urlencoded") == true else { return bad("content type") }
        var form: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
            if parts.count == 2 { form[parts[0]] = parts[1] }
        }
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else { return bad("grant_type \(form["grant_type"] ?? "-")") }
        do {
            let jwt = try SignedToken(form["assertion"] ?? "", verifiedWith: .rs256(credentials.fcmPublicKey))
            guard jwt.string("iss") == credentials.fcmClientEmail else { return bad("iss") }
            guard jwt.string("aud") == "\(baseURL)/token" else { return bad("aud \(jwt.string("aud") ?? "-")") }
            guard jwt.string("scope")?.split(separator: " ").contains("https://www.googleapis.com/auth/firebase.messaging") == true else {
                return bad("scope")
            }
            guard let iat = jwt.integer("iat"), let exp = jwt.integer("exp"), exp > Self.now(), exp - iat <= 3600 else { return bad("iat/exp") }
        } catch {
            return bad("\(error)")
        }
        let token = "ya29.standin-" + UUID().uuidString
        let lifetime = accessTokenLifetime
        state.withLock {
            $0.accessTokens[token] = Self.now() + Int64(lifetime)
            $0.tokenExchanges += 1
        }
        return Reply(status: .ok, body: ["access_token": .string(token), "expires_in": .int(Int64(lifetime)), "token_type": "Bearer"])
    }

    private func fcm(headers: HTTPHeaders, body: [UInt8]) -> Reply {
        func bad(_ detail: String) -> Reply {
            refuse(Self.fcmError(400, "INVALID_ARGUMENT", code: "INVALID_ARGUMENT", detail), "FCM: \(detail)")
        }
        let bearer = headers.first(name: "authorization").flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil } ?? ""
        guard let expiry = state.withLock({ $0.accessTokens[bearer] }), expiry > Self.now() else {
            return refuse(
                Self.fcmError(401, "UNAUTHENTICATED", code: nil, "Request had invalid authentication credentials."), "FCM: bad access token")
        }
        guard case let .object(top)? = try? JSONParser.parse(body), case let .object(message)? = top.first(where: { $0.key == "message" })?.value
        else { return bad("no message object") }
        let fields = Dictionary(message.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
        guard case let .string(token)? = fields["token"], !token.isEmpty, fields["topic"] == nil, fields["condition"] == nil else {
            return bad("message.token is required (and alone)")
        }
        if case let .object(data)? = fields["data"] {
            for (key, value) in data { guard case .string = value else { return bad("message.data.\(key) is not a string") } }
        }
        if case let .object(notification)? = fields["notification"] {
            for (key, value) in notification { guard case .string = value else { return bad("message.notification.\(key) is not a string") } }
        }
        if case let .object(android)? = fields["android"], let ttl = android.first(where: { $0.key == "ttl" })?.value {
            guard case let .string(text) = ttl, text.hasSuffix("s"), Double(text.dropLast()) != nil else { return bad("message.android.ttl") }
        }
        let answer = next(for: token)
        switch answer {
        case .accept, .acceptAndGoAway:
            record(Accepted(service: "fcm", token: token, headers: Self.dictionary(headers), body: .object(top), at: Self.milliseconds()))
            return Reply(
                status: .ok, body: ["name": .string("projects/\(credentials.fcmProjectID)/messages/\(UUID().uuidString)")],
                goAway: answer == .acceptAndGoAway)
        case .unregistered:
            return Self.fcmError(404, "NOT_FOUND", code: "UNREGISTERED", "Requested entity was not found.")
        case let .tooManyRequests(seconds):
            var reply = Self.fcmError(429, "RESOURCE_EXHAUSTED", code: "QUOTA_EXCEEDED", "Quota exceeded.")
            reply.headers.append(("retry-after", String(seconds)))
            return reply
        case .serverError:
            return Self.fcmError(500, "INTERNAL", code: "INTERNAL", "Internal error.")
        case .hang:
            return .none
        case .expiredCredentials:
            return Self.fcmError(401, "UNAUTHENTICATED", code: nil, "Request had invalid authentication credentials.")
        }
    }

    private static func fcmError(_ status: Int, _ name: String, code: String?, _ message: String) -> Reply {
        var error: [(key: String, value: JSON)] = [("code", .int(Int64(status))), ("message", .string(message)), ("status", .string(name))]
        if let code {
            error.append(("details", [["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": .string(code)]]))
        }
        return Reply(status: HTTPResponseStatus(statusCode: status), body: ["error": .object(error)])
    }

    private func next(for token: String) -> Answer {
        state.withLock { state in
            state.answered[token, default: 0] += 1
            guard var answers = state.scripts[token], !answers.isEmpty else { return .accept }
            let answer = answers.removeFirst()
            state.scripts[token] = answers
            return answer
        }
    }

    private func record(_ accepted: Accepted) {
        state.withLock { state in
            state.accepted.append(accepted)
            if let log = state.log {
                let line: JSON = [
                    "service": .string(accepted.service), "token": .string(accepted.token), "at": .int(accepted.at),
                    "apns_id": accepted.headers["apns-id"].map(JSON.string) ?? .null, "body": accepted.body,
                ]
                log.write(Data((line.text + "\n").utf8))
            }
        }
    }

    private func refuse(_ reply: Reply, _ why: String) -> Reply {
        state.withLock { $0.refused.append(why) }
        return reply
    }

    private static func dictionary(_ headers: HTTPHeaders) -> [String: String] {
        Dictionary(headers.map { ($0.name.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }
    static func milliseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// How many connections were opened.
    final class Connections: Sendable {
        let count = Atomic<Int>(0)
    }

    /// Lets stream handlers, made before the stand-in is, reach it.
    final class Box: Sendable {
        let standIn = Mutex<PushStandIn?>(nil)
    }
}

/// One HTTP/2 stream: the request gathered, handed to the stand-in, the reply written.
private final class StreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let standIn: PushStandIn.Box
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(standIn: PushStandIn.Box) { self.standIn = standIn }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case let .head(head):
            self.head = head
            body = []
        case var .body(buffer):
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
            if body.count > 1 << 20 { context.close(promise: nil) }
        case .end:
            guard let head, let standIn = standIn.standIn.withLock({ $0 }) else { return context.close(promise: nil) }
            let reply = standIn.handle(method: head.method, path: head.uri, headers: head.headers, body: body)
            guard !reply.unanswered else { return }
            var headers = HTTPHeaders(reply.headers)
            let bytes = reply.body.map { Array($0.text.utf8) } ?? []
            if !bytes.isEmpty { headers.add(name: "content-type", value: "application/json") }
            headers.add(name: "content-length", value: String(bytes.count))
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http2, status: reply.status, headers: headers))), promise: nil)
            if !bytes.isEmpty { context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: bytes)))), promise: nil) }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            if reply.goAway, let connection = context.channel.parent {
                // A graceful GOAWAY (RFC 9113 6.8): the streams already open are answered, no new one is taken.
                connection.writeAndFlush(
                    HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: .maxID, errorCode: .noError, opaqueData: nil)),
                    promise: nil)
            }
        }
    }
}
