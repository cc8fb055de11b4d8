import Foundation
import GondolaProtocol
import JWTKit
import NIOCore
import Synchronization

/// The APNs provider credentials: the `.p8` signing key with its key id, the team id, the
/// app's bundle id (`apns-topic`) and the service's address.
struct APNsCredentials: Sendable {
    static let production = "https://api.push.apple.com"
    static let sandbox = "https://api.sandbox.push.apple.com"

    let key: ES256PrivateKey
    let keyID: String
    let teamID: String
    let topic: String
    let baseURL: String
}

/// The ES256 provider token APNs takes as `authorization: bearer`: `iss` the team id, `iat`
/// the signing time, `kid` the key id. APNs refuses a token older than an hour and one
/// renewed more often than every 20 minutes (`TooManyProviderTokenUpdates`), so one token
/// serves every sender for `lifetime` (50 minutes): concurrent callers that find none share
/// one signing, and a token APNs rejected is renewed once, not once per rejection.
actor APNsProviderToken {
    static let lifetime: Int64 = 50 * 60

    private struct Claims: JWTPayload {
        let iss: IssuerClaim
        let iat: IssuedAtClaim
        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    private let keys = JWTKeyCollection()
    private let credentials: APNsCredentials
    private var current: (token: String, issuedAt: Int64)?
    private var signing: Task<(token: String, issuedAt: Int64), any Error>?
    /// Tokens signed so far.
    private(set) var signed = 0

    init(credentials: APNsCredentials) async {
        self.credentials = credentials
        await keys.add(ecdsa: credentials.key, kid: JWKIdentifier(string: credentials.keyID))
    }

    /// The current token, signed anew when it is older than `lifetime` or is `rejected`
    /// (the token APNs said expired or invalid; a newer one is kept).
    func token(now: Int64 = Int64(Date().timeIntervalSince1970), rejected: String? = nil) async throws -> String {
        if let current, now - current.issuedAt < Self.lifetime, current.token != rejected { return current.token }
        let running = signing ?? Task { try await self.sign(at: now) }
        signing = running
        defer { signing = nil }
        let fresh = try await running.value
        current = fresh
        return fresh.token
    }

    private func sign(at now: Int64) async throws -> (token: String, issuedAt: Int64) {
        let token = try await keys.sign(
            Claims(iss: IssuerClaim(value: credentials.teamID), iat: IssuedAtClaim(value: Date(timeIntervalSince1970: Double(now)))),
            kid: JWKIdentifier(string: credentials.keyID))
        signed += 1
        return (token, now)
    }
}

/// Sends through Apple's HTTP/2 provider API: `POST /3/device/<token>` with the provider
/// token, `apns-topic`, `apns-push-type: alert`, `apns-priority` (5 in quiet hours, else 10),
/// `apns-expiration`, `apns-collapse-id` for collapsed threads and `apns-id` (the outbox row's
/// id, so APNs and the log name the same notification).
struct APNsSender: PushSender {
    let connection: ServiceConnection
    let credentials: APNsCredentials
    let providerToken: APNsProviderToken

    func send(_ batch: [PushToSend], answered: @escaping @Sendable (Int, PushOutcome) -> Void) async {
        let bearer: String
        do {
            bearer = try await providerToken.token()
        } catch {
            return batch.indices.forEach { answered($0, .rejected("cannot sign the provider token: \(error)")) }
        }
        let authorization = "bearer \(bearer)"
        let posts = batch.map { item in
            ServicePost(
                path: "/3/device/\(item.queued.push.token)", headers: headers(of: item.queued, authorization: authorization),
                unindexed: Self.perRequestFields,
                body: ByteBuffer(bytes: Self.payload(item.queued.push.content, text: item.text).bytes))
        }
        await connection.send(posts, reading: Self.outcome, renew: { _ = try? await providerToken.token(rejected: bearer) }, answered: answered)
    }

    /// What an APNs answer means, and whether it says the provider token expired.
    static func outcome(of answer: ServiceAnswer) -> (outcome: PushOutcome, credentialExpired: Bool) {
        let reason = answer.string("reason") ?? ""
        switch (answer.status, reason) {
        case (200, _): return (.accepted, false)
        case (410, _), (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"):
            return (.unregistered(reason.isEmpty ? "Unregistered" : reason), false)
        case (403, "ExpiredProviderToken"), (403, "InvalidProviderToken"): return (.retry(reason: "credentials", detail: reason, after: nil), true)
        default: return (answer.generalFailure(reason), false)
        }
    }

    /// The request's fields: the provider token (`authorization`, the same for the whole batch),
    /// the app, the kind, priority and expiry of the notification, its id and thread.
    private func headers(of queued: QueuedPush, authorization: String) -> [(String, String)] {
        let content = queued.push.content
        var headers = [
            ("authorization", authorization), ("apns-topic", credentials.topic), ("apns-push-type", "alert"),
            ("apns-priority", content.silent ? "5" : "10"), ("apns-expiration", String(content.expiresAt / 1000)), ("apns-id", queued.id),
        ]
        if let collapse = content.collapseKey { headers.append(("apns-collapse-id", collapse)) }
        return headers
    }

    /// The fields that name one device or one notification, sent without HPACK indexing.
    static let perRequestFields: Set<String> = [":path", "apns-id"]

    var concurrentStreams: Int { connection.concurrentStreams }
    func shutdown() async { await connection.shutdown() }

    /// The JSON APNs shows: `aps` with the alert, sound (none in quiet hours, with a passive
    /// interruption level), thread id; beside it the app's `link`, `count` and `category`.
    static func payload(_ content: PushContent, text: RenderedText) -> JSON {
        var aps: [(key: String, value: JSON)] = [("alert", ["title": .string(text.title), "body": .string(text.body)])]
        if content.silent {
            aps.append(("interruption-level", "passive"))
        } else {
            aps.append(("sound", "default"))
        }
        if let thread = content.collapseKey { aps.append(("thread-id", .string(thread))) }
        return [
            "aps": .object(aps),
            "link": .object(content.link.sorted { $0.key < $1.key }.map { ($0.key, JSON.string($0.value)) }),
            "count": .int(Int64(content.count)),
            "category": .string(content.category.rawValue),
        ]
    }
}
