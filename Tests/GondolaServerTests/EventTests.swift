import Foundation
import GondolaGeo
import GondolaProtocol
import GondolaServices
import GondolaStore
import GondolaTestSupport
import GondolaTravel
import Synchronization
import Testing

@testable import GondolaServer

/// Telegram messages the hub would send, recorded.
final class RecordingTelegram: TelegramNotifier {
    let invitations = Mutex<[(chat: Int64, invitation: TelegramMessage)]>([])
    let answers = Mutex<[(id: String, text: String)]>([])

    func send(_ invitation: TelegramMessage, to chatID: Int64) async throws {
        invitations.withLock { $0.append((chatID, invitation)) }
    }

    func answerCallback(id: String, text: String) async throws {
        answers.withLock { $0.append((id, text)) }
    }
}

/// Events through the real server: each audience kind (nearby against a
/// brute-force distance check), RSVP changes and their pushes, validation, and
/// RSVP from the Telegram webhook.
@Suite struct EventTests {
    static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    static func event(_ audience: JSON, title: String = "Fondue night", extra: JSON = [:]) -> JSON {
        var body: JSON = ["title": .string(title), "starts_at": .int(now() + 3_600_000), "ends_at": .int(now() + 7_200_000), "audience": audience]
        if case let .object(members) = extra { for member in members { body = body.adding(member.key, member.value) } }
        return body
    }

    static func invitees(_ answer: JSON) -> Set<String> { Set(answer["invitees"]?.arrayValue.compactMap { $0["user"]?.stringValue } ?? []) }

    @Test(arguments: ProtocolEncoding.allCases)
    func friendsSelectedAndTripAudiences(_ encoding: ProtocolEncoding) async throws {
        let server = try await startTravelServer()
        let trip = try await server.createTrip(hosts: ["hana"], travellers: ["alice", "bob"])
        let alice = try await server.client("alice", encoding: encoding)
        let dave = try await server.client("dave", encoding: encoding)
        let bob = try await server.client("bob", encoding: encoding)
        _ = try await dave.rpc("friend.add", ["user": "alice"])
        _ = try await alice.rpc("friend.add", ["user": "dave"])
        try await bob.subscribe("personal:#bob")

        let friends = try await alice.rpc("event.create", Self.event(["kind": "friends"]))
        #expect(Self.invitees(friends) == ["bob", "hana", "dave"])
        #expect(friends["audience"]?.stringValue == "friends")
        let invite = try await bob.awaitPublications("personal:#bob", count: 1).first
        #expect(invite?["type"]?.stringValue == "invite")
        #expect(invite?["event"]?["id"] == friends["id"])

        let selected = try await alice.rpc("event.create", Self.event(["kind": "selected", "users": ["bob", "alice"]]))
        #expect(Self.invitees(selected) == ["bob"])
        do {
            _ = try await alice.rpc("event.create", Self.event(["kind": "selected", "users": ["bob", "carol"]]))
            Issue.record("a stranger was selected")
        } catch let failure as RPCFailure {
            #expect(failure.code == 103 && failure.message.contains("audience.users[1]"), "\(failure)")
        }

        let forTrip = try await bob.rpc("event.create", Self.event(["kind": "trip"], extra: ["trip": .string(trip)]))
        #expect(Self.invitees(forTrip) == ["alice", "hana"])
        await #expect(throws: RPCFailure.self) { try await dave.rpc("event.create", Self.event(["kind": "trip"], extra: ["trip": .string(trip)])) }
        for client in [alice, dave, bob] { await client.close() }
        try await server.stop()
    }

    @Test func nearbyAudienceMatchesBruteForceAndVisibility() async throws {
        let server = try await startTravelServer()
        let origin = GeoPoint(lat: 45.3, lon: 6.58)
        var random = SeededRandom(seed: 7)
        let alice = try await server.client("alice")
        await #expect(throws: RPCFailure.self, "no position yet: 108") {
            try await alice.rpc("event.create", Self.event(["kind": "nearby", "radius": 400]))
        }
        _ = try await alice.rpc("location.update", ["lat": .double(origin.lat), "lon": .double(origin.lon)])
        var expected: Set<String> = []
        for index in 0..<40 {
            let user = "n\(index)"
            let point = origin.offset(north: .random(in: -700...700, using: &random), east: .random(in: -700...700, using: &random))
            let client = try await server.client(user)
            _ = try await client.rpc("location.update", ["lat": .double(point.lat), "lon": .double(point.lon)])
            let hidden = index % 5 == 0
            if hidden { _ = try await client.rpc("location.visibility", ["mode": "nobody"]) }
            if Geodesy.distance(origin, point) <= 400, !hidden { expected.insert(user) }
            await client.close()
        }
        let created = try await alice.rpc("event.create", Self.event(["kind": "nearby", "radius": 400]))
        #expect(!expected.isEmpty)
        #expect(Self.invitees(created) == expected)
        await alice.close()
        try await server.stop()
    }

    @Test(arguments: ProtocolEncoding.allCases)
    func responsesAreChangeableCountedAndPushed(_ encoding: ProtocolEncoding) async throws {
        let server = try await startTravelServer()
        _ = try await server.createTrip(hosts: ["hana"], travellers: ["alice", "bob", "cleo"])
        let alice = try await server.client("alice", encoding: encoding)
        let bob = try await server.client("bob", encoding: encoding)
        let carol = try await server.client("carol", encoding: encoding)
        let event = try await alice.rpc("event.create", Self.event(["kind": "friends"]))
        let id = try #require(event["id"]?.stringValue)
        try await alice.subscribe("event:\(id)")
        try await alice.subscribe("personal:#alice")
        #expect(
            try await bob.rpc("event.rsvp", ["event": .string(id), "response": "going"])["counts"] == [
                "going": 1, "maybe": 0, "declined": 0, "pending": 2,
            ])
        #expect(
            try await bob.rpc("event.rsvp", ["event": .string(id), "response": "declined"])["counts"] == [
                "going": 0, "maybe": 0, "declined": 1, "pending": 2,
            ])
        let changes = try await alice.awaitPublications("event:\(id)", count: 2)
        #expect(changes.map { $0["response"]?.stringValue } == ["going", "declined"])
        #expect(try await alice.awaitPublications("personal:#alice", count: 2).last?["type"]?.stringValue == "rsvp")

        let got = try await bob.rpc("event.get", ["event": .string(id)])
        #expect(got["responses"]?.arrayValue.first { $0["user"]?.stringValue == "bob" }?["response"]?.stringValue == "declined")
        #expect(try await bob.rpc("event.list")["events"]?.arrayValue.first?["my_response"]?.stringValue == "declined")
        #expect(try await alice.rpc("event.list")["events"]?.arrayValue.first?["role"]?.stringValue == "creator")
        for (client, method, data) in [
            (carol, "event.rsvp", ["event": JSON.string(id), "response": "going"] as JSON), (carol, "event.get", ["event": .string(id)]),
            (alice, "event.rsvp", ["event": .string(id), "response": "going"]), (bob, "event.rsvp", ["event": "nope", "response": "going"]),
        ] {
            do {
                _ = try await client.rpc(method, data)
                Issue.record("\(method) \(data.text) succeeded")
            } catch let failure as RPCFailure {
                #expect(failure.code == 103, "\(failure)")
            }
        }
        await #expect(throws: RPCFailure.self) { try await carol.subscribe("event:\(id)") }
        for client in [alice, bob, carol] { await client.close() }
        try await server.stop()
    }

    @Test(arguments: [
        (["starts_at": .int(now() + 3_600_000), "audience": ["kind": "friends"]] as JSON, "title"),
        (["title": "  ", "starts_at": .int(now() + 3_600_000), "audience": ["kind": "friends"]] as JSON, "title"),
        (
            ["title": .string(String(repeating: "t", count: 121)), "starts_at": .int(now() + 3_600_000), "audience": ["kind": "friends"]] as JSON,
            "title"
        ),
        (["title": "x", "audience": ["kind": "friends"]] as JSON, "starts_at"),
        (["title": "x", "starts_at": .int(now() - 86_400_000), "audience": ["kind": "friends"]] as JSON, "starts_at"),
        (["title": "x", "starts_at": .int(now() + 3_600_000), "ends_at": .int(now()), "audience": ["kind": "friends"]] as JSON, "ends_at"),
        (["title": "x", "starts_at": "soon", "audience": ["kind": "friends"]] as JSON, "starts_at"),
        (
            ["title": "x", "starts_at": .int(now() + 3_600_000), "place": ["lat": 91, "lon": 0], "audience": ["kind": "friends"]] as JSON, "place.lat"
        ),
        (
            ["title": "x", "starts_at": .int(now() + 3_600_000), "place": ["lat": 45, "lon": "Infinity"], "audience": ["kind": "friends"]] as JSON,
            "place.lon"
        ),
        (["title": "x", "starts_at": .int(now() + 3_600_000)] as JSON, "audience"),
        (["title": "x", "starts_at": .int(now() + 3_600_000), "audience": ["kind": "everyone"]] as JSON, "audience.kind"),
        (["title": "x", "starts_at": .int(now() + 3_600_000), "audience": ["kind": "nearby", "radius": 5001]] as JSON, "audience.radius"),
        (
            [
                "title": "x", "starts_at": .int(now() + 3_600_000),
                "audience": ["kind": "selected", "users": .array((0...500).map { .string("u\($0)") })],
            ] as JSON, "audience.users"
        ),
        (["title": "x", "starts_at": .int(now() + 3_600_000), "audience": ["kind": "trip"]] as JSON, "trip"),
    ])
    func badEventsAnswer107NamingTheField(data: JSON, field: String) async throws {
        let server = try await startTravelServer()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        do {
            _ = try await alice.rpc("event.create", data)
            Issue.record("accepted \(data.text.prefix(200))")
        } catch let failure as RPCFailure {
            #expect(failure.code == 107 && failure.message.contains(field), "\(failure)")
        }
        #expect(try await alice.rpc("event.list")["events"]?.arrayValue.isEmpty == true, "nothing stored")
        #expect(try await bob.rpc("event.list")["events"] != nil, "another client is still served")
        await alice.close()
        await bob.close()
        try await server.stop()
    }

    @Test func telegramButtonsAnswerLikeRSVPAndEverythingElseChangesNothing() async throws {
        let telegram = RecordingTelegram()
        let server = try await startTravelServer(telegram: telegram) { $0.domainSettings.values["telegram_webhook_secret"] = "hook-secret" }
        let linked = try await try #require(server.server.users).user(
            forTelegram: TelegramAccount(telegramID: 5_550_001, username: "tg_tom", displayName: "Tom", photoURL: nil))
        let trip = try await server.createTrip(hosts: ["hana"], travellers: ["alice", linked.id])
        let alice = try await server.client("alice")
        let event = try await alice.rpc("event.create", Self.event(["kind": "trip"], extra: ["trip": .string(trip)]))
        let id = try #require(event["id"]?.stringValue)
        try await eventually("the Telegram invitation") { telegram.invitations.withLock { !$0.isEmpty } }
        let sent = telegram.invitations.withLock { $0 }
        #expect(sent.map(\.chat) == [5_550_001], "only the Telegram-linked invitee")
        #expect(sent.first?.invitation.buttons.map(\.data) == ["rsvp:\(id):going", "rsvp:\(id):maybe", "rsvp:\(id):declined"])

        func hook(_ update: JSON, secret: String? = "hook-secret") async throws -> Int {
            try await server.post(
                "/api/telegram/webhook", body: update.text, apiKey: nil,
                headers: secret.map { ["X-Telegram-Bot-Api-Secret-Token": $0] } ?? [:]
            ).0
        }
        func press(_ data: String, from telegramID: Int64) -> JSON {
            ["update_id": 1, "callback_query": ["id": "cb1", "from": ["id": .int(telegramID)], "data": .string(data)]]
        }
        func response() async throws -> String? {
            try await alice.rpc("event.get", ["event": .string(id)])["responses"]?.arrayValue.first { $0["user"]?.stringValue == linked.id }?[
                "response"]?.stringValue
        }
        #expect(try await hook(press("rsvp:\(id):maybe", from: 5_550_001), secret: "wrong") == 401)
        #expect(try await hook(press("rsvp:\(id):maybe", from: 5_550_001), secret: nil) == 401)
        #expect(try await response() == nil)
        for ignored in [
            press("rsvp:\(id):perhaps", from: 5_550_001), press("rsvp:\(id)", from: 5_550_001), press("vote:\(id):going", from: 5_550_001),
            press("rsvp:\(id):going", from: 999), press("rsvp:e-unknown:going", from: 5_550_001),
            ["update_id": 2, "message": ["text": "hello"]], ["update_id": 3, "callback_query": ["id": "cb2", "data": .string("rsvp:\(id):going")]],
        ] as [JSON] {
            #expect(try await hook(ignored) == 200, "\(ignored.text)")
        }
        #expect(
            try await server.post("/api/telegram/webhook", body: "not json", apiKey: nil, headers: ["X-Telegram-Bot-Api-Secret-Token": "hook-secret"])
                .0 == 200)
        #expect(try await response() == nil, "nothing changed")
        #expect(try await hook(press("rsvp:\(id):maybe", from: 5_550_001)) == 200)
        #expect(try await response() == "maybe")
        try await eventually("the button's answer") { telegram.answers.withLock { $0.last?.id } == "cb1" }
        await alice.close()
        try await server.stop()
    }

    @Test func aBotAPIThatDoesNotAnswerDelaysNoWebhookAndNoInvitation() async throws {
        let telegram = HangingTelegram()
        let server = try await startTravelServer(telegram: telegram) { $0.domainSettings.values["telegram_webhook_secret"] = "hook-secret" }
        let linked = try await try #require(server.server.users).user(
            forTelegram: TelegramAccount(telegramID: 5_550_002, username: "tg_tia", displayName: "Tia", photoURL: nil))
        let trip = try await server.createTrip(hosts: ["hana"], travellers: ["alice", linked.id])
        let alice = try await server.client("alice")
        // The Bot API holds every call until the end of the test: no answer below can have waited for it.
        let event = try await alice.rpc("event.create", Self.event(["kind": "trip"], extra: ["trip": .string(trip)]))
        let id = try #require(event["id"]?.stringValue)
        try await eventually("the invitation held at the Bot API") { telegram.held.count == 1 }
        let press: JSON = ["update_id": 7, "callback_query": ["id": "cb7", "from": ["id": 5_550_002], "data": .string("rsvp:\(id):going")]]
        let (status, _) = try await server.post(
            "/api/telegram/webhook", body: press.text, apiKey: nil, headers: ["X-Telegram-Bot-Api-Secret-Token": "hook-secret"])
        #expect(status == 200)
        let responses = try await alice.rpc("event.get", ["event": .string(id)])["responses"]?.arrayValue ?? []
        #expect(responses.first { $0["user"]?.stringValue == linked.id }?["response"] == "going", "recorded before the webhook answered")
        try await eventually("the button's answer held at the Bot API") { telegram.held.count == 2 }
        telegram.held.release()
        await alice.close()
        try await server.stop()
    }
}

/// A Telegram Bot API that takes every call and answers none until released.
final class HangingTelegram: TelegramNotifier {
    let held = HeldRequests()

    func send(_ invitation: TelegramMessage, to chatID: Int64) async throws { await held.hold() }

    func answerCallback(id: String, text: String) async throws { await held.hold() }
}
