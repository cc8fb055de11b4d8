import Foundation
import GondolaProtocol
import Testing

@testable import GondolaServer

/// Host broadcasts on `trip:` and staff announcements on `announcements`: who may
/// send and subscribe, delivery online, and recovery of what an offline user missed.
@Suite struct BroadcastTests {
    static func recover(_ client: LiveClient, _ channel: String, after previous: SubscribeResult, offset: UInt64) async throws -> SubscribeResult {
        var request = SubscribeRequest(channel: channel)
        request.recover = true
        request.epoch = previous.epoch
        request.offset = offset
        return try await client.subscribe(request)
    }

    @Test(arguments: ProtocolEncoding.allCases)
    func hostBroadcastsReachOnlineTravellersAndOfflineOnesRecoverThem(_ encoding: ProtocolEncoding) async throws {
        let server = try await startTravelServer()
        let trip = try await server.createTrip(hosts: ["hana"], travellers: ["alice", "bob"])
        let hana = try await server.client("hana", encoding: encoding)
        let alice = try await server.client("alice", encoding: encoding)
        let bob = try await server.client("bob", encoding: encoding)
        try await alice.subscribe("trip:\(trip)")
        let bobFirst = try await bob.subscribe(SubscribeRequest(channel: "trip:\(trip)"))
        await bob.close()

        for text in ["Breakfast at 8", "Lifts close at 4"] {
            let sent = try await hana.rpc("broadcast.send", ["trip": .string(trip), "text": .string(text)])
            #expect(sent["channel"]?.stringValue == "trip:\(trip)")
        }
        let online = try await alice.awaitPublications("trip:\(trip)", count: 2)
        #expect(online.map { $0["text"]?.stringValue } == ["Breakfast at 8", "Lifts close at 4"])
        #expect(online.first?["type"]?.stringValue == "broadcast")
        #expect(online.first?["from"]?.stringValue == "hana")

        let bobAgain = try await server.client("bob", encoding: encoding)
        let recovered = try await Self.recover(bobAgain, "trip:\(trip)", after: bobFirst, offset: bobFirst.offset)
        #expect(recovered.recovered)
        #expect(recovered.publications.compactMap { $0.data.value["text"]?.stringValue } == ["Breakfast at 8", "Lifts close at 4"])
        for client in [hana, alice, bobAgain] { await client.close() }
        try await server.stop()
    }

    @Test(arguments: ProtocolEncoding.allCases)
    func announcementsAreForStaffToSendAndEveryoneToReceive(_ encoding: ProtocolEncoding) async throws {
        let server = try await startTravelServer()
        let carol = try await server.client("carol", encoding: encoding)
        let sam = try await server.client("sam", encoding: encoding)
        let before = try await carol.subscribe(SubscribeRequest(channel: "announcements"))
        await #expect(throws: RPCFailure.self) { try await sam.rpc("broadcast.send", ["scope": "all", "text": "Hello"]) }
        _ = try await server.api("user_set_staff", ["user": "sam", "staff": true])
        let sent = try await sam.rpc("broadcast.send", ["scope": "all", "text": "Snow tonight"])
        #expect(sent["channel"]?.stringValue == "announcements")
        let received = try await carol.awaitPublications("announcements", count: 1)
        #expect(received.first?["type"]?.stringValue == "announcement")
        #expect(received.first?["text"]?.stringValue == "Snow tonight")
        #expect(sent["offset"]?.doubleValue == Double(before.offset + 1))
        for client in [carol, sam] { await client.close() }
        try await server.stop()
    }

    @Test func othersAreRefused() async throws {
        let server = try await startTravelServer()
        let trip = try await server.createTrip(hosts: ["hana"], travellers: ["alice"])
        let alice = try await server.client("alice")
        let carol = try await server.client("carol")
        for (client, data, code) in [
            (alice, ["trip": JSON.string(trip), "text": "I am not a host"] as JSON, UInt32(103)),
            (carol, ["trip": .string(trip), "text": "Nor am I"], 103),
            (alice, ["trip": .string(trip), "scope": "all", "text": "both"], 107),
            (alice, ["text": "neither"], 107),
            (alice, ["scope": "some", "text": "x"], 107),
            (alice, ["trip": .string(trip), "text": "  "], 107),
            (alice, ["trip": .string(trip)], 107),
        ] {
            do {
                _ = try await client.rpc("broadcast.send", data)
                Issue.record("accepted \(data.text)")
            } catch let failure as RPCFailure {
                #expect(failure.code == code, "\(data.text): \(failure)")
            }
        }
        do {
            try await carol.subscribe("trip:\(trip)")
            Issue.record("an outsider subscribed to the trip's broadcasts")
        } catch let failure as RPCFailure {
            #expect(failure.code == 103)
        }
        #expect(!alice.isClosed && !carol.isClosed)
        let hana = try await server.client("hana")
        #expect(
            try await hana.rpc("broadcast.send", ["trip": .string(trip), "text": "Still on"])["offset"]?.doubleValue == 1,
            "the host is still served")
        for client in [alice, carol, hana] { await client.close() }
        try await server.stop()
    }
}
