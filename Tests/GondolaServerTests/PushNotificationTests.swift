import Foundation
import GondolaProtocol
import GondolaPushStandIn
import GondolaServer
import GondolaTestSupport
import Testing

@testable import GondolaPush
@testable import GondolaRentals

/// Push notifications end to end: a real hub with APNs and FCM credentials pointed at the
/// local stand-in (HTTP/2 over TLS, checking tokens, headers and bodies as the services do),
/// real WebSocket clients, and each domain's news reaching the devices of users who are not
/// watching — and only them.
@Suite(.serialized) struct PushNotificationTests {
    static func apnsToken(_ n: Int) -> String { String(format: "%064x", n) }
    static func fcmToken(_ n: Int) -> String { "fcm\(n):APA91b" + String(repeating: "Tk-_", count: 30) }

    /// A stand-in, and a travel hub configured with its credentials.
    static func start(_ adjust: (inout ServerConfigurationSettings) -> Void = { _ in }) async throws -> (PushStandIn, RunningServer) {
        let standIn = try await PushStandIn(credentials: try StandInCredentials())
        return (standIn, try await start(with: standIn, adjust))
    }

    /// A travel hub configured with `standIn`'s credentials, on `database` when given.
    static func start(
        with standIn: PushStandIn, database: String? = nil,
        _ adjust: (inout ServerConfigurationSettings) -> Void = { _ in }
    ) async throws -> RunningServer {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-push-\(UUID().uuidString)").path
        var settings = try standIn.credentials.write(to: folder, standIn: standIn)
        adjust(&settings)
        return try await startTravelServer { configuration in
            if let database { configuration.database = database }
            for (key, value) in settings { configuration.domainSettings.values[key] = .string(value) }
        }
    }

    typealias ServerConfigurationSettings = [String: String]

    static func register(_ client: LiveClient, apns: Int? = nil, fcm: Int? = nil, locale: String? = nil) async throws {
        if let apns {
            var data: JSON = ["platform": "apns", "token": .string(apnsToken(apns))]
            if let locale { data = data.adding("locale", .string(locale)) }
            _ = try await client.rpc("device.register", data)
        }
        if let fcm { _ = try await client.rpc("device.register", ["platform": "fcm", "token": .string(fcmToken(fcm))]) }
    }

    static func member(_ json: JSON, _ path: String...) -> JSON? {
        path.reduce(json as JSON?) { $0?[$1] }
    }

    @Test func aBroadcastReachesTheDevicesOfOfflineMembersAndNotTheConnectedOnes() async throws {
        let (standIn, server) = try await Self.start()
        let trip = try await server.createTrip(hosts: ["hana"], travellers: ["alice", "bob", "carl"])
        let hana = try await server.client("hana")
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let carl = try await server.client("carl")
        try await Self.register(alice, apns: 1)
        try await Self.register(bob, fcm: 2)
        try await Self.register(carl, apns: 3, locale: "fr-CH")
        try await Self.register(hana, apns: 4)
        await bob.close()
        await carl.close()
        try await alice.subscribe("trip:\(trip)")
        _ = try await hana.rpc("broadcast.send", ["trip": .string(trip), "text": "Lifts close at 4"])
        // The broadcast's notifications are queued together: once two were sent and none waits,
        // every device it reached has been answered.
        let push = try #require(server.server.service(PushService.self))
        try await eventually("two notifications, the outbox drained") {
            guard standIn.accepted.count >= 2 else { return false }
            return try await push.pendingCount() == 0
        }
        let accepted = standIn.accepted
        #expect(Set(accepted.map(\.token)) == [Self.fcmToken(2), Self.apnsToken(3)])
        #expect(standIn.answered(Self.apnsToken(1)) == 0 && standIn.answered(Self.apnsToken(4)) == 0)
        #expect(standIn.refused.isEmpty, "\(standIn.refused)")

        let apns = try #require(accepted.first { $0.service == "apns" })
        #expect(apns.headers["apns-topic"] == standIn.credentials.apnsTopic)
        #expect(apns.headers["apns-push-type"] == "alert")
        #expect(apns.headers["apns-priority"] == "10")
        #expect(Int64(apns.headers["apns-expiration"] ?? "") ?? 0 > Int64(Date().timeIntervalSince1970))
        #expect(Self.member(apns.body, "aps", "alert", "title") == "Trip")
        #expect(Self.member(apns.body, "aps", "alert", "body") == "hana : Lifts close at 4")  // French, as carl's device asked
        #expect(Self.member(apns.body, "aps", "sound") == "default")
        #expect(Self.member(apns.body, "link", "screen") == "broadcast")
        #expect(Self.member(apns.body, "link", "channel") == .string("trip:\(trip)"))

        let fcm = try #require(accepted.first { $0.service == "fcm" })
        #expect(Self.member(fcm.body, "message", "token") == .string(Self.fcmToken(2)))
        #expect(Self.member(fcm.body, "message", "notification", "body") == "hana: Lifts close at 4")
        #expect(Self.member(fcm.body, "message", "data", "category") == "broadcast")
        #expect(standIn.tokenExchanges == 1)
        for client in [hana, alice] { await client.close() }
        try await server.stop()
        try await standIn.stop()
    }

    @Test func aFenceEventReachesTheOfflineHostsPhoneAndNotTheWatchingHosts() async throws {
        let (standIn, server) = try await Self.start()
        let trip = try await server.createTrip(hosts: ["hana", "hugo"], travellers: ["alice"])
        let hana = try await server.client("hana")
        let hugo = try await server.client("hugo")
        let alice = try await server.client("alice")
        try await Self.register(hana, apns: 1)
        try await Self.register(hugo, apns: 2, locale: "de-AT")
        try await hana.subscribe("fences:\(trip)")
        await hugo.close()
        _ = try await hana.rpc(
            "fence.create", ["trip": .string(trip), "name": "Meeting point", "circle": ["lat": 45.3, "lon": 6.58, "radius": 200]])
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        _ = try await alice.rpc("location.update", ["lat": 45.31, "lon": 6.58, "ts": .int(now)])
        _ = try await alice.rpc("location.update", ["lat": 45.3, "lon": 6.58, "ts": .int(now + 1000)])
        let push = try #require(server.server.service(PushService.self))
        try await eventually("the offline host's notification, the outbox drained") {
            guard standIn.accepted.count >= 1 else { return false }
            return try await push.pendingCount() == 0
        }
        #expect(standIn.accepted.map(\.token) == [Self.apnsToken(2)], "hana watches fences:\(trip) live")
        let apns = try #require(standIn.accepted.first)
        #expect(Self.member(apns.body, "aps", "alert", "title") == "Meeting point")
        #expect(Self.member(apns.body, "aps", "alert", "body") == "alice hat Meeting point betreten")  // German, as hugo's device asked
        #expect(Self.member(apns.body, "link", "screen") == "fences")
        for client in [hana, alice] { await client.close() }
        try await server.stop()
        try await standIn.stop()
    }

    @Test func aServicesNotificationsShareOneConnectionWithinItsStreamLimitUntilItSaysGoAway() async throws {
        let (standIn, server) = try await Self.start()
        let travellers = (0..<12).map { "traveller\($0)" }
        let trip = try await server.createTrip(hosts: ["hana"], travellers: travellers)
        let hana = try await server.client("hana")
        for (n, name) in travellers.enumerated() {
            let traveller = try await server.client(name)
            try await Self.register(traveller, apns: 100 + n)
            await traveller.close()
        }
        let push = try #require(server.server.service(PushService.self))
        func broadcast(_ text: String, reaching total: Int) async throws {
            _ = try await hana.rpc("broadcast.send", ["trip": .string(trip), "text": .string(text)])
            try await eventually("\(total) notifications, the outbox drained") {
                guard standIn.accepted.count >= total else { return false }
                return try await push.pendingCount() == 0
            }
        }
        try await broadcast("First", reaching: 12)
        #expect(standIn.connectionsOpened == 1)
        // The lane's window is what the service's SETTINGS allow.
        #expect(push.outbox.senders[.apns]?.concurrentStreams == PushStandIn.maxConcurrentStreams)
        // The service answers everything open on the connection, then takes nothing more on it.
        standIn.script(Self.apnsToken(100), [.acceptAndGoAway])
        try await broadcast("Second", reaching: 24)
        try await broadcast("Third", reaching: 36)
        #expect(standIn.connectionsOpened == 2)
        #expect(
            Dictionary(grouping: standIn.accepted, by: \.token).mapValues(\.count)
                == Dictionary(uniqueKeysWithValues: (0..<12).map { (Self.apnsToken(100 + $0), 3) }))
        #expect(standIn.refused.isEmpty, "\(standIn.refused)")
        await hana.close()
        try await server.stop()
        try await standIn.stop()
    }

    @Test func aServiceThatDoesNotAnswerHoldsBackNeitherTheOtherServiceNorOtherDevices() async throws {
        let (standIn, server) = try await Self.start()
        let trip = try await server.createTrip(hosts: ["hana"], travellers: ["alice", "bob", "carl"])
        let hana = try await server.client("hana")
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let carl = try await server.client("carl")
        try await Self.register(alice, apns: 21)
        try await Self.register(bob, apns: 22)
        try await Self.register(carl, fcm: 23)
        for client in [alice, bob, carl] { await client.close() }
        // alice's phone never gets an answer: APNs holds her request past the test's end.
        standIn.script(Self.apnsToken(21), [.hang])
        standIn.script(Self.apnsToken(22), [.hang])
        _ = try await hana.rpc("broadcast.send", ["trip": .string(trip), "text": "First"])
        try await eventually("both APNs requests held") { standIn.answered(Self.apnsToken(21)) == 1 && standIn.answered(Self.apnsToken(22)) == 1 }
        try await eventually("carl's first notification") { standIn.accepted.contains { $0.token == Self.fcmToken(23) } }
        // News queued while the APNs requests hang reaches FCM and the next APNs request at once.
        _ = try await hana.rpc("broadcast.send", ["trip": .string(trip), "text": "Second"])
        try await eventually("both services' second notifications") {
            let accepted = standIn.accepted
            return accepted.filter { $0.token == Self.fcmToken(23) }.count == 2 && accepted.contains { $0.token == Self.apnsToken(22) }
        }
        #expect(
            !standIn.accepted.contains {
                $0.token == Self.apnsToken(21) && Self.member($0.body, "aps", "alert", "body")?.stringValue?.hasSuffix("First") == true
            })
        await hana.close()
        try await server.stop()
        try await standIn.stop()
    }

    /// A single node keeps its claims in memory: the notification it had in flight when it
    /// stopped is not held back by a claim in the next run, which sends it.
    @Test func aNotificationInFlightWhenTheHubStopsIsSentByTheNextRun() async throws {
        let standIn = try await PushStandIn(credentials: try StandInCredentials())
        let database = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-push-restart-\(UUID().uuidString)/gondola.sqlite").path
        let first = try await Self.start(with: standIn, database: database)
        let trip = try await first.createTrip(hosts: ["hana"], travellers: ["alice"])
        let hana = try await first.client("hana")
        let alice = try await first.client("alice")
        try await Self.register(alice, apns: 31)
        await alice.close()
        // The first request is held unanswered; the service answers later ones.
        standIn.script(Self.apnsToken(31), [.hang])
        _ = try await hana.rpc("broadcast.send", ["trip": .string(trip), "text": "Lifts close at four"])
        try await eventually("the request held by the service") { standIn.answered(Self.apnsToken(31)) == 1 }
        await hana.close()
        try await first.stop()
        #expect(standIn.accepted.isEmpty)

        let second = try await Self.start(with: standIn, database: database)
        try await eventually("the notification sent by the next run") {
            standIn.accepted.contains {
                $0.token == Self.apnsToken(31) && Self.member($0.body, "aps", "alert", "body")?.stringValue == "hana: Lifts close at four"
            }
        }
        let push = try #require(second.server.service(PushService.self))
        try await eventually("the outbox drained") { try await push.pendingCount() == 0 }
        try await second.stop()
        try await standIn.stop()
    }

    @Test func anInvitationReachesTheInviteeAndTheAnswerTheCreator() async throws {
        let (standIn, server) = try await Self.start()
        _ = try await server.createTrip(hosts: ["hana"], travellers: ["alice", "bob"])
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        try await Self.register(alice, apns: 10)
        try await Self.register(bob, fcm: 11)
        let created = try await alice.rpc(
            "event.create",
            [
                "title": "Fondue night", "starts_at": .int(Int64(Date().timeIntervalSince1970 * 1000) + 3_600_000),
                "audience": ["kind": "selected", "users": ["bob"]],
            ])
        let event = try #require(created["id"]?.stringValue)
        await bob.close()
        // alice is connected but not subscribed to her personal channel: her app is in the background.
        try await eventually("the invitation") { standIn.accepted.contains { $0.token == Self.fcmToken(11) } }
        let invitation = try #require(standIn.accepted.first { $0.token == Self.fcmToken(11) })
        #expect(Self.member(invitation.body, "message", "notification", "title") == "alice invites you")
        #expect(Self.member(invitation.body, "message", "data", "event") == .string(event))
        let bobAgain = try await server.client("bob")
        _ = try await bobAgain.rpc("event.rsvp", ["event": .string(event), "response": "going"])
        try await eventually("the answer") { standIn.accepted.contains { $0.token == Self.apnsToken(10) } }
        let answer = try #require(standIn.accepted.first { $0.token == Self.apnsToken(10) })
        #expect(Self.member(answer.body, "aps", "alert", "body") == "bob is going")
        #expect(standIn.refused.isEmpty, "\(standIn.refused)")
        for client in [alice, bobAgain] { await client.close() }
        try await server.stop()
        try await standIn.stop()
    }

    @Test func aChatBurstCollapsesIntoOneNotificationWithACountAfterA429() async throws {
        let (standIn, server) = try await Self.start()
        _ = try await server.createTrip(hosts: ["hana"], travellers: ["anna", "ben"])
        let anna = try await server.client("anna")
        let ben = try await server.client("ben")
        try await Self.register(ben, apns: 20)
        let chat = try #require(try await anna.rpc("chat.create", ["members": ["ben"]])["chat"]?["id"]?.stringValue)
        await ben.close()
        standIn.script(Self.apnsToken(20), [.tooManyRequests(retryAfterSeconds: 2)])
        let first = Date()
        _ = try await anna.rpc("chat.send", ["chat": .string(chat), "text": "first", "client_message_id": "m0"])
        // Once counted, the failure is recorded: the notification waits, unclaimed, for the next messages to fold in.
        try await eventually("the 429 recorded") {
            try await server.get("/metrics").1.contains("gondola_push_failed_total{platform=\"apns\",reason=\"rate_limited\"} 1")
        }
        for n in 1...4 {
            _ = try await anna.rpc("chat.send", ["chat": .string(chat), "text": .string("message \(n)"), "client_message_id": .string("m\(n)")])
        }
        let outbox = try #require(server.server.service(PushService.self))
        try await eventually("the collapsed notification, the outbox drained") {
            guard !standIn.accepted.isEmpty else { return false }
            return try await outbox.pendingCount() == 0
        }
        let accepted = standIn.accepted
        #expect(accepted.count == 1)
        let push = try #require(accepted.first)
        #expect(Date().timeIntervalSince(first) >= 2, "Retry-After: 2 was honoured")
        #expect(push.headers["apns-collapse-id"] == "chat:\(chat)")
        #expect(Self.member(push.body, "count") == 5)
        #expect(Self.member(push.body, "aps", "alert", "body") == "5 new messages · message 4")
        #expect(Self.member(push.body, "aps", "thread-id") == .string("chat:\(chat)"))
        #expect(standIn.refused.isEmpty, "\(standIn.refused)")
        await anna.close()
        try await server.stop()
        try await standIn.stop()
    }

    @Test func unregisteredTokensAreRemovedAndServerErrorsRetried() async throws {
        let (standIn, server) = try await Self.start()
        let trip = try await server.createTrip(hosts: ["hana"], travellers: ["dora", "emil", "finn"])
        let hana = try await server.client("hana")
        for (user, apns, fcm) in [("dora", 30, nil), ("emil", nil, 31), ("finn", 32, nil)] as [(String, Int?, Int?)] {
            let client = try await server.client(user)
            try await Self.register(client, apns: apns, fcm: fcm)
            await client.close()
        }
        standIn.script(Self.apnsToken(30), [.unregistered])
        standIn.script(Self.fcmToken(31), [.unregistered])
        standIn.script(Self.apnsToken(32), [.serverError, .serverError])
        _ = try await hana.rpc("broadcast.send", ["trip": .string(trip), "text": "Storm warning"])
        let devices = try #require(server.server.service(PushService.self)).devices
        try await eventually("unregistered devices removed") {
            let dora = try await devices.devices(of: "dora")
            let emil = try await devices.devices(of: "emil")
            return dora.isEmpty && emil.isEmpty
        }
        try await eventually("the retried notification") { standIn.accepted.contains { $0.token == Self.apnsToken(32) } }
        #expect(standIn.answered(Self.apnsToken(32)) == 3)
        #expect(try await devices.devices(of: "finn").count == 1)
        #expect(standIn.answered(Self.apnsToken(30)) == 1 && standIn.answered(Self.fcmToken(31)) == 1)
        // The service's answer is recorded just after the stand-in counts it.
        let push = try #require(server.server.service(PushService.self))
        try await eventually("the outbox drained") { try await push.pendingCount() == 0 }
        let metrics = try await server.get("/metrics").1
        #expect(metrics.contains("gondola_push_failed_total{platform=\"apns\",reason=\"unregistered\"} 1"), "\(metrics)")
        #expect(metrics.contains("gondola_push_failed_total{platform=\"apns\",reason=\"server_error\"} 2"))
        #expect(metrics.contains("gondola_push_sent_total{platform=\"apns\"} 1"))
        await hana.close()
        try await server.stop()
        try await standIn.stop()
    }

    /// A service that says the credential expired gets the notifications again with a renewed
    /// one: APNs a newly signed provider token, FCM a new access token, exchanged once for all
    /// the requests of a batch it refused, not once per refusal.
    @Test func expiredCredentialsAreRenewedOncePerBatchAndTheNotificationsRetried() async throws {
        let (standIn, server) = try await Self.start()
        let trip = try await server.createTrip(hosts: ["hana"], travellers: ["ida", "jon", "kai"])
        let hana = try await server.client("hana")
        for (user, apns, fcm) in [("ida", 40, nil), ("jon", nil, 41), ("kai", nil, 42)] as [(String, Int?, Int?)] {
            let client = try await server.client(user)
            try await Self.register(client, apns: apns, fcm: fcm)
            await client.close()
        }
        let tokens = [Self.apnsToken(40), Self.fcmToken(41), Self.fcmToken(42)]
        for token in tokens { standIn.script(token, [.expiredCredentials]) }
        _ = try await hana.rpc("broadcast.send", ["trip": .string(trip), "text": "Night skiing tonight"])
        try await eventually("the retried notifications") { tokens.allSatisfy { token in standIn.accepted.contains { $0.token == token } } }
        #expect(tokens.map { standIn.answered($0) } == [2, 2, 2])
        // One exchange for the first batch, one renewal for both of its refusals.
        #expect(standIn.tokenExchanges == 2)
        let push = try #require(server.server.service(PushService.self))
        try await eventually("the outbox drained") { try await push.pendingCount() == 0 }
        let metrics = try await server.get("/metrics").1
        #expect(metrics.contains("gondola_push_failed_total{platform=\"apns\",reason=\"credentials\"} 1"), "\(metrics)")
        #expect(metrics.contains("gondola_push_failed_total{platform=\"fcm\",reason=\"credentials\"} 2"))
        #expect(standIn.refused.isEmpty, "\(standIn.refused)")
        await hana.close()
        try await server.stop()
        try await standIn.stop()
    }

    @Test func usersWhoTurnedAKindOffGetNoneOfIt() async throws {
        let (standIn, server) = try await Self.start()
        let trip = try await server.createTrip(hosts: ["hana"], travellers: ["gina", "hugo"])
        let hana = try await server.client("hana")
        let gina = try await server.client("gina")
        let hugo = try await server.client("hugo")
        try await Self.register(gina, apns: 40)
        try await Self.register(hugo, apns: 41)
        _ = try await gina.rpc("notifications.settings", ["broadcasts": false])
        await gina.close()
        await hugo.close()
        _ = try await hana.rpc("broadcast.send", ["trip": .string(trip), "text": "Dinner at 7"])
        // gina's and hugo's notifications would be queued together: once hugo's was sent and none waits, gina has none.
        let push = try #require(server.server.service(PushService.self))
        try await eventually("hugo's notification, the outbox drained") {
            guard standIn.accepted.contains(where: { $0.token == Self.apnsToken(41) }) else { return false }
            return try await push.pendingCount() == 0
        }
        #expect(standIn.answered(Self.apnsToken(40)) == 0)
        await hana.close()
        try await server.stop()
        try await standIn.stop()
    }

    @Test func quietHoursDeliverWithoutSound() async throws {
        let (standIn, server) = try await Self.start()
        let trip = try await server.createTrip(hosts: ["hana"], travellers: ["jon"])
        let hana = try await server.client("hana")
        let jon = try await server.client("jon")
        try await Self.register(jon, apns: 45)
        let minutes = Int(Date().timeIntervalSince1970 / 60) % 1440
        let clock = { (m: Int) in String(format: "%02d:%02d", ((m % 1440) + 1440) % 1440 / 60, ((m % 1440) + 1440) % 1440 % 60) }
        _ = try await jon.rpc(
            "notifications.settings", ["quiet_hours": ["start": .string(clock(minutes - 60)), "end": .string(clock(minutes + 60))]])
        await jon.close()
        _ = try await hana.rpc("broadcast.send", ["trip": .string(trip), "text": "Night skiing tonight"])
        try await eventually("jon's notification") { !standIn.accepted.isEmpty }
        let push = try #require(standIn.accepted.first)
        #expect(push.headers["apns-priority"] == "5")
        #expect(Self.member(push.body, "aps", "sound") == nil && Self.member(push.body, "aps", "interruption-level") == "passive")
        await hana.close()
        try await server.stop()
        try await standIn.stop()
    }

    @Test func eachDomainsNewsForOneUserReachesTheirPhone() async throws {
        let (standIn, server) = try await Self.start()
        let olga = try await server.client("olga")
        try await Self.register(olga, fcm: 60)
        _ = try await server.api(
            "car_upsert",
            [
                "id": "zoe", "make": "Renault", "model": "Zoe", "year": 2023, "seats": 5, "price_per_day_cents": 4_000,
                "lat": 47.265, "lon": 11.395,
            ])
        let startsAt = Int64(Date().timeIntervalSince1970 * 1000) + 10 * 60_000
        let rental = try #require(try await olga.rpc("rental.plan", ["car": "zoe", "starts_at": .int(startsAt)])["rental"]?["id"]?.stringValue)
        await olga.close()
        let crash = try #require(
            try await server.api(
                "crash_detected",
                [
                    "user": "olga", "lat": 47.26, "lon": 11.39,
                    "ts": .int(Int64(Date().timeIntervalSince1970 * 1000)),
                ])["id"]?.stringValue)
        _ = try await server.api("assessment_assign", ["user": "olga", "assessment": "wellbeing"])
        let rentals = try #require(server.server.service(RentalService.self))
        #expect(await rentals.remindStarting() == 1)
        #expect(await rentals.remindStarting() == 0, "once per rental")
        try await eventually("three notifications") { standIn.accepted.count == 3 }
        let data = standIn.accepted.map { Self.member($0.body, "message", "data") ?? .null }
        #expect(data.allSatisfy { $0["category"] == "update" })
        #expect(Set(data.compactMap { $0["screen"]?.stringValue }) == ["crash", "assessment", "rental"])
        #expect(data.contains { $0["crash"] == .string(crash) } && data.contains { $0["rental"] == .string(rental) })
        #expect(data.contains { $0["assessment"] == "wellbeing" })
        let reminder = try #require(standIn.accepted.first { Self.member($0.body, "message", "data", "screen") == "rental" })
        #expect(Self.member(reminder.body, "message", "notification", "body")?.stringValue?.hasPrefix("Renault Zoe is yours from ") == true)
        #expect(standIn.refused.isEmpty, "\(standIn.refused)")
        try await server.stop()
        try await standIn.stop()
    }

    @Test func withoutCredentialsNothingIsQueued() async throws {
        let server = try await startTravelServer()
        let trip = try await server.createTrip(hosts: ["hana"], travellers: ["ivy"])
        let hana = try await server.client("hana")
        let ivy = try await server.client("ivy")
        try await Self.register(ivy, apns: 50)
        await ivy.close()
        _ = try await hana.rpc("broadcast.send", ["trip": .string(trip), "text": "Hello"])
        // The broadcast posts its notice before it answers; nothing takes it, so nothing can be queued later.
        let metrics = try await server.get("/metrics").1
        #expect(metrics.contains("gondola_push_notices_total 0"), "\(metrics)")
        let push = try #require(server.server.service(PushService.self))
        #expect(try await push.pendingCount() == 0)
        await hana.close()
        try await server.stop()
    }

    @Test func badCredentialSettingsStopTheStartNamingTheSetting() async throws {
        let standIn = try await PushStandIn(credentials: try StandInCredentials())
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-push-\(UUID().uuidString)").path
        let good = try standIn.credentials.write(to: folder, standIn: standIn)
        try Data("{\"project_id\": \"p\"}".utf8).write(to: URL(fileURLWithPath: folder + "/broken.json"))
        let cases: [([String: String], String)] = [
            (["apns_key_file": folder + "/missing.p8"], "'apns_key_file': cannot read"),
            (["apns_key_file": good["fcm_service_account_file"]!], "'apns_key_file'"),
            (good.filter { $0.key != "apns_team_id" }, "'apns_team_id' is required"),
            (
                good.merging(["apns_environment": "staging"]) { $1 },
                "'apns_environment' expected production, sandbox or an https:// address, got 'staging'"
            ),
            (good.merging(["fcm_service_account_file": folder + "/broken.json"]) { $1 }, "'client_email' is missing"),
            (good.merging(["push_per_user_per_minute": "0"]) { $1 }, "'push_per_user_per_minute' expected a whole number from 1 to 600"),
            (good.merging(["push_ca_file": folder + "/no-such.pem"]) { $1 }, "'push_ca_file': cannot read"),
            (good.merging(["fcm_base_url": "ftp://fcm"]) { $1 }, "'fcm_base_url' expected an https:// address, got 'ftp://fcm'"),
        ]
        for (settings, expected) in cases {
            do {
                let server = try await startTravelServer { configuration in
                    for (key, value) in settings { configuration.domainSettings.values[key] = .string(value) }
                }
                try await server.stop()
                Issue.record("started with \(settings)")
            } catch {
                #expect("\(error)".contains(expected), "\(error)")
            }
        }
        try await standIn.stop()
    }
}
