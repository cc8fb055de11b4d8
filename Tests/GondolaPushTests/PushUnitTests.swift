import Foundation
import GondolaDomain
import GondolaProtocol
import JWTKit
import Testing

@testable import GondolaPush

/// The pieces of push delivery that need no server: texts in each language, the per-user
/// rate, `Retry-After`, the services' payloads and error bodies, and the settings' filter.
@Suite struct PushUnitTests {
    @Test func textsAreRenderedInTheDevicesLanguageWithACountWhenCollapsed() {
        let values = ["sender": "Ann", "text": "On the lift"]
        #expect(PushTexts.render("chat.message", values: values, count: 1, locale: "en") == RenderedText(title: "Ann", body: "On the lift"))
        #expect(PushTexts.render("chat.message", values: values, count: 3, locale: "fr-CH").body == "3 nouveaux messages · On the lift")
        #expect(PushTexts.render("chat.message", values: values, count: 2, locale: "de").body == "2 neue Nachrichten · On the lift")
        // An unknown language falls back to English; a missing value leaves its place empty.
        #expect(
            PushTexts.render("event.invite", values: ["sender": "Bo"], count: 1, locale: "pt-BR") == RenderedText(title: "Bo invites you", body: ""))
        let long = PushTexts.render("announcement", values: ["text": String(repeating: "x", count: 500) + "\nline"], count: 1, locale: nil)
        #expect(long.body.count == PushTexts.maxBody && long.body.hasSuffix("…"))
        #expect(PushTexts.render("announcement", values: ["text": "a\nb"], count: 1, locale: nil).body == "a b")
        #expect(PushTexts.knows("crash.detected") && !PushTexts.knows("nothing.like.it"))
    }

    /// The cache gives what rendering gives, for repeats and for more distinct texts than it
    /// keeps (it empties and fills again).
    @Test func cachedTextsAreTheRenderedOnes() {
        let texts = RenderedTexts()
        let contents = (0..<(RenderedTexts.capacity + 50)).map { n in
            PushContent(
                category: .chat, textKey: "chat.message", values: ["sender": "Ann", "text": "message \(n)"], locale: ["en", "fr", "de", nil][n % 4],
                link: [:], collapseKey: nil, count: 1 + n % 3, silent: false, eventAt: 0, expiresAt: 1)
        }
        for content in contents + contents.prefix(100) + contents.suffix(100) {
            #expect(
                texts.text(of: content) == PushTexts.render(content.textKey, values: content.values, count: content.count, locale: content.locale))
        }
    }

    @Test func aUserOverTheRateWaitsForTheWindowsEnd() {
        let rate = UserPushRate(perMinute: 2)
        #expect(rate.take("ann", now: 1_000) == nil)
        #expect(rate.take("ann", now: 2_000) == nil)
        #expect(rate.take("ann", now: 3_000) == 61_000)
        #expect(rate.take("bob", now: 3_000) == nil)
        #expect(rate.take("ann", now: 61_000) == nil)
    }

    @Test func outboxIDsAreVersion7UUIDsInTheOrderOfTheirTime() {
        // One generator's ids span several draws of random bytes (16 ids each); a lone id draws its own.
        var generator = OutboxIDs(expected: 49)
        let ids = (0..<49).map { generator.next(now: 1_700_000_000_000 + Int64($0 / 10)) } + [PushOutbox.newID(now: 1_700_000_000_004)]
        for id in ids {
            #expect(UUID(uuidString: id) != nil && id.count == 36 && id == id.lowercased(), "\(id)")
            #expect(id.hasPrefix("018bcfe5-680"))  // 1_700_000_000_000 is 0x18bcfe56800
            let characters = Array(id)
            #expect(characters[14] == "7" && "89ab".contains(characters[19]), "\(id)")
        }
        // Ids of one millisecond differ in their random bits.
        #expect(Set(ids).count == ids.count)
        #expect(Set(ids.map { $0.suffix(12) }).count == ids.count)
        // Ids of later milliseconds sort after earlier ones.
        for (earlier, later) in zip(ids, ids.dropFirst(10)) { #expect(earlier < later) }
    }

    @Test func retryAfterIsReadAsSecondsOrADate() {
        #expect(ServiceAnswer.milliseconds("2") == 2_000)
        #expect(ServiceAnswer.milliseconds(" 30 ") == 30_000)
        #expect(ServiceAnswer.milliseconds("9999999") == 86_400_000)
        #expect(ServiceAnswer.milliseconds("soon") == nil)
        #expect(ServiceAnswer.milliseconds("-5") == nil)
        let format = DateFormatter()
        format.locale = Locale(identifier: "en_US_POSIX")
        format.timeZone = TimeZone(identifier: "GMT")
        format.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let later = try! #require(ServiceAnswer.milliseconds(format.string(from: Date().addingTimeInterval(120))))
        #expect((110_000...121_000).contains(later))
    }

    static func queued(silent: Bool, thread: String?, count: Int) -> QueuedPush {
        QueuedPush(
            id: "00000000-0000-0000-0000-000000000001",
            push: OutgoingPush(
                token: "tok", platform: .fcm, user: "ann",
                content: PushContent(
                    category: .chat, textKey: "chat.message", values: [:], locale: nil, link: ["screen": "chat", "chat": "d1"], collapseKey: thread,
                    count: count, silent: silent, eventAt: 0, expiresAt: unixMilliseconds() + 3_600_000)), attempts: 0)
    }

    @Test func quietHoursSendWithoutSoundAndThreadsCollapseOnBothServices() {
        let text = RenderedText(title: "Ann", body: "hi")
        let loud = APNsSender.payload(Self.queued(silent: false, thread: "chat:d1", count: 1).push.content, text: text)
        #expect(loud["aps"]?["sound"] == "default" && loud["aps"]?["thread-id"] == "chat:d1" && loud["aps"]?["interruption-level"] == nil)
        let quiet = APNsSender.payload(Self.queued(silent: true, thread: nil, count: 1).push.content, text: text)
        #expect(quiet["aps"]?["sound"] == nil && quiet["aps"]?["interruption-level"] == "passive")
        let message = FCMSender.message(Self.queued(silent: true, thread: "chat:d1", count: 4), text: text)["message"]
        #expect(message?["android"]?["collapse_key"] == "chat:d1" && message?["android"]?["priority"] == "normal")
        #expect(message?["android"]?["notification"]?["tag"] == "chat:d1" && message?["android"]?["notification"]?["default_sound"] == false)
        #expect(message?["android"]?["notification"]?["notification_count"] == 4)
        #expect(message?["data"] == ["category": "chat", "chat": "d1", "count": "4", "screen": "chat"])
        #expect(message?["apns"]?["headers"]?["apns-collapse-id"] == "chat:d1" && message?["apns"]?["payload"]?["aps"]?["sound"] == nil)
        if case let .string(ttl)? = message?["android"]?["ttl"] { #expect(ttl.hasSuffix("s") && Int(ttl.dropLast()) ?? 0 > 3_500) }
    }

    @Test func fcmErrorBodiesAreReadForTheirStatusAndCode() throws {
        let body = try JSONParser.parse(
            """
            {"error": {"code": 404, "status": "NOT_FOUND", "details": [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED"}]}}
            """)
        #expect(FCMSender.error(body) == ("NOT_FOUND", "UNREGISTERED"))
        #expect(FCMSender.error(try JSONParser.parse("{\"error\": {\"status\": \"INTERNAL\"}}")) == ("INTERNAL", ""))
        #expect(FCMSender.error(nil) == ("", ""))
    }

    @Test func settingsDecideWhichKindsAUserGets() {
        var settings = NotificationSettings()
        settings.chats = false
        settings.invites = false
        #expect(!settings.wants(.chat) && !settings.wants(.invite) && settings.wants(.broadcast) && settings.wants(.update))
    }

    @Test func aServiceAccountFileIsCheckedMemberByMember() {
        #expect(throws: PushSetupError.self) { try FCMServiceAccount(json: "[]") }
        do {
            _ = try FCMServiceAccount(json: #"{"project_id": "p", "client_email": "a@b", "token_uri": "https://x/token", "private_key": "nope"}"#)
            Issue.record("accepted a bad key")
        } catch {
            #expect(error.description.hasPrefix("'private_key' is not an RSA private key"))
        }
    }
}

/// The APNs provider token is one for every sender: APNs refuses providers that renew it
/// more often than every 20 minutes.
@Suite struct APNsProviderTokenTests {
    static func tokens() async -> APNsProviderToken {
        let credentials = APNsCredentials(
            key: ES256PrivateKey(), keyID: "KEY1234567", teamID: "TEAM123456", topic: "app.gondola",
            baseURL: APNsCredentials.sandbox)
        return await APNsProviderToken(credentials: credentials)
    }

    @Test func aBurstOfSendersRightAfterAStartSharesOneSigning() async throws {
        let provider = await Self.tokens()
        let issued = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<50 { group.addTask { try await provider.token(now: 1_000) } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(issued.count == 1)
        #expect(await provider.signed == 1)
        #expect(try await provider.token(now: 1_000 + APNsProviderToken.lifetime - 1) == issued.first, "kept for its lifetime")
        #expect(await provider.signed == 1)
        #expect(try await provider.token(now: 1_000 + APNsProviderToken.lifetime) != issued.first, "renewed after it")
    }

    @Test func aRejectedTokenIsRenewedOnceForAllTheRejections() async throws {
        let provider = await Self.tokens()
        let first = try await provider.token(now: 1_000)
        let renewed = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<20 { group.addTask { try await provider.token(now: 1_001, rejected: first) } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(renewed.count == 1 && !renewed.contains(first))
        #expect(await provider.signed == 2)
    }
}
