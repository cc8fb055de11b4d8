import AsyncHTTPClient
import Foundation
import GondolaDomain
import GondolaProtocol
import JWTKit
import NIOCore

/// A Google service account, as its JSON key file gives it: the project, the account's
/// address, its RSA key and where access tokens are had (`token_uri`).
struct FCMServiceAccount: Sendable {
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    let projectID: String
    let clientEmail: String
    let key: Insecure.RSA.PrivateKey
    let tokenURI: String

    /// Reads the key file's JSON; the error names the first missing or bad member.
    init(json text: String) throws(PushSetupError) {
        guard case let .object(members)? = try? JSONParser.parse(text) else { throw PushSetupError("not a JSON object") }
        func member(_ name: String) throws(PushSetupError) -> String {
            guard case let .string(value)? = members.first(where: { $0.key == name })?.value, !value.isEmpty else {
                throw PushSetupError("'\(name)' is missing")
            }
            return value
        }
        projectID = try member("project_id")
        clientEmail = try member("client_email")
        tokenURI = try member("token_uri")
        do {
            key = try Insecure.RSA.PrivateKey(pem: try member("private_key"))
        } catch let error as PushSetupError {
            throw error
        } catch {
            throw PushSetupError("'private_key' is not an RSA private key in PEM (\(error))")
        }
    }
}

/// OAuth2 access tokens for a service account: an RS256-signed assertion (`iss` the account,
/// `scope` Firebase messaging, `aud` the token URI, an hour's validity) exchanged at the
/// token URI, kept until a minute before it expires. Concurrent senders share one exchange.
actor FCMAccessTokens {
    private struct Assertion: JWTPayload {
        let iss: IssuerClaim
        let scope: String
        let aud: AudienceClaim
        let iat: IssuedAtClaim
        let exp: ExpirationClaim
        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    /// An exchange's failure, with whether trying again later may help.
    struct Failure: Error {
        let retry: Bool
        let message: String
        let after: Int64?
    }

    private let account: FCMServiceAccount
    private let client: HTTPClient
    private let keys = JWTKeyCollection()
    private var current: (token: String, expiresAt: Date)?
    private var exchange: Task<(String, Date), any Error>?

    init(account: FCMServiceAccount, client: HTTPClient) async {
        self.account = account
        self.client = client
        await keys.add(rsa: account.key, digestAlgorithm: .sha256)
    }

    /// A valid access token; `renew` drops the kept one (FCM answered 401).
    func token(renew: Bool = false) async throws -> String {
        if renew { current = nil }
        if let current, current.expiresAt.timeIntervalSinceNow > 60 { return current.token }
        let running = exchange ?? Task { try await self.exchangeAssertion() }
        exchange = running
        defer { exchange = nil }
        let (token, expiresAt) = try await running.value
        current = (token, expiresAt)
        return token
    }

    private func exchangeAssertion() async throws -> (String, Date) {
        let now = Date()
        let assertion = try await keys.sign(
            Assertion(
                iss: IssuerClaim(value: account.clientEmail), scope: FCMServiceAccount.scope, aud: AudienceClaim(value: account.tokenURI),
                iat: IssuedAtClaim(value: now), exp: ExpirationClaim(value: now.addingTimeInterval(3600))))
        var request = HTTPClientRequest(url: account.tokenURI)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"))
        let answer: ServiceAnswer
        do {
            answer = try await ServiceAnswer.fetch(request, with: client)
        } catch {
            throw Failure(retry: true, message: "token exchange: \(error)", after: nil)
        }
        guard answer.status == 200, let token = answer.string("access_token"),
            case let .object(members)? = answer.body, case let .int(expiresIn)? = members.first(where: { $0.key == "expires_in" })?.value
        else {
            throw Failure(
                retry: answer.status == 429 || answer.status >= 500,
                message: "token exchange answered \(answer.status) \(answer.string("error") ?? "")", after: answer.retryAfter)
        }
        return (token, now.addingTimeInterval(Double(expiresIn)))
    }
}

/// Sends through FCM's HTTP v1 API: `POST <base>/v1/projects/<project>/messages:send` with
/// the access token, the notification, the app's data (all strings, as FCM requires), and
/// overrides for Android (collapse key, tag, TTL, no sound in quiet hours) and for iOS
/// devices behind FCM (the same `aps` as direct APNs).
struct FCMSender: PushSender {
    let connection: ServiceConnection
    let account: FCMServiceAccount
    let tokens: FCMAccessTokens

    func send(_ batch: [PushToSend], answered: @escaping @Sendable (Int, PushOutcome) -> Void) async {
        let accessToken: String
        do {
            accessToken = try await tokens.token()
        } catch let failure as FCMAccessTokens.Failure {
            let outcome: PushOutcome =
                failure.retry ? .retry(reason: "credentials", detail: failure.message, after: failure.after) : .rejected(failure.message)
            return batch.indices.forEach { answered($0, outcome) }
        } catch {
            return batch.indices.forEach { answered($0, .retry(reason: "credentials", detail: "\(error)", after: nil)) }
        }
        let path = "/v1/projects/\(account.projectID)/messages:send"
        let headers = [("authorization", "Bearer \(accessToken)")]
        let posts = batch.map { ServicePost(path: path, headers: headers, body: ByteBuffer(bytes: Self.message($0.queued, text: $0.text).bytes)) }
        await connection.send(posts, reading: Self.outcome, renew: { _ = try? await tokens.token(renew: true) }, answered: answered)
    }

    /// What an FCM answer means, and whether it says the access token expired (401).
    static func outcome(of answer: ServiceAnswer) -> (outcome: PushOutcome, credentialExpired: Bool) {
        if answer.status == 200 { return (.accepted, false) }
        let (status, code) = Self.error(answer.body)
        switch (answer.status, code) {
        case (_, "UNREGISTERED"): return (.unregistered("UNREGISTERED"), false)
        case (401, _): return (.retry(reason: "credentials", detail: "401 \(status)", after: nil), true)
        default: return (answer.generalFailure([status, code].filter { !$0.isEmpty }.joined(separator: " ")), false)
        }
    }

    var concurrentStreams: Int { connection.concurrentStreams }
    func shutdown() async { await connection.shutdown() }

    /// The v1 message for `queued`.
    static func message(_ queued: QueuedPush, text: RenderedText) -> JSON {
        let content = queued.push.content
        let ttlSeconds = max(0, (content.expiresAt - unixMilliseconds()) / 1000)
        var data = content.link
        data["count"] = String(content.count)
        data["category"] = content.category.rawValue
        var androidNotification: [(key: String, value: JSON)] = [("default_sound", .bool(!content.silent))]
        var android: [(key: String, value: JSON)] = [("ttl", .string("\(ttlSeconds)s")), ("priority", content.silent ? "normal" : "high")]
        var apnsHeaders: [(key: String, value: JSON)] = [
            ("apns-expiration", .string(String(content.expiresAt / 1000))),
            ("apns-priority", content.silent ? "5" : "10"),
        ]
        if let thread = content.collapseKey {
            android.append(("collapse_key", .string(thread)))
            androidNotification.append(("tag", .string(thread)))
            apnsHeaders.append(("apns-collapse-id", .string(thread)))
        }
        if content.count > 1 { androidNotification.append(("notification_count", .int(Int64(content.count)))) }
        android.append(("notification", .object(androidNotification)))
        let aps = APNsSender.payload(content, text: text)
        return [
            "message": [
                "token": .string(queued.push.token),
                "notification": ["title": .string(text.title), "body": .string(text.body)],
                "data": .object(data.sorted { $0.key < $1.key }.map { ($0.key, JSON.string($0.value)) }),
                "android": .object(android),
                "apns": ["headers": .object(apnsHeaders), "payload": ["aps": Self.member("aps", of: aps)]],
            ]
        ]
    }

    /// The `status` and the FCM `errorCode` of an error answer's body.
    static func error(_ body: JSON?) -> (status: String, code: String) {
        guard case let .object(top)? = body, case let .object(error)? = top.first(where: { $0.key == "error" })?.value else { return ("", "") }
        var status = ""
        if case let .string(value)? = error.first(where: { $0.key == "status" })?.value { status = value }
        var code = ""
        if case let .array(details)? = error.first(where: { $0.key == "details" })?.value {
            for case let .object(detail) in details {
                if case let .string(value)? = detail.first(where: { $0.key == "errorCode" })?.value { code = value }
            }
        }
        return (status, code)
    }

    private static func member(_ key: String, of json: JSON) -> JSON {
        guard case let .object(members) = json else { return .null }
        return members.first(where: { $0.key == key })?.value ?? .null
    }
}

/// A push service's setting that cannot be used; the message names it.
struct PushSetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
