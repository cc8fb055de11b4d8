import Crypto
import Foundation
import GondolaProtocol
import GondolaTestSupport
import Hummingbird
import NIOCore
import Synchronization
import Testing

@testable import GondolaServer

/// Trip fences end to end: hosts define them (RPC and server API), members' positions
/// cross them, and the events reach the hosts' `fences:` channel, the member's personal
/// channel and the trip's webhook; bad definitions are refused naming what is wrong.
@Suite struct FenceTests {
    static let center = (lat: 45.30, lon: 6.58)
    /// Degrees of latitude per metre.
    static let degree = 1 / 111_195.0

    static func update(_ client: LiveClient, northOfCenter metres: Double, at ts: Int64) async throws {
        _ = try await client.rpc(
            "location.update", ["lat": .double(center.lat + metres * degree), "lon": .double(center.lon), "ts": .int(ts)])
    }

    static func circle(_ trip: String, name: String = "Meeting point", radius: Double = 200) -> JSON {
        [
            "trip": .string(trip), "name": .string(name),
            "circle": ["lat": .double(center.lat), "lon": .double(center.lon), "radius": .double(radius)],
        ]
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    @Test(arguments: ProtocolEncoding.allCases)
    func aCrossingIsReportedOnceToHostsAndTravellerDespiteJitter(_ encoding: ProtocolEncoding) async throws {
        let server = try await startTravelServer()
        let trip = try await server.createTrip(hosts: ["hana"], travellers: ["alice"])
        let hana = try await server.client("hana", encoding: encoding)
        let alice = try await server.client("alice", encoding: encoding)
        let created = try await hana.rpc("fence.create", Self.circle(trip))
        let fence = try #require(created["fence"]?["id"]?.stringValue)
        try await hana.subscribe("fences:\(trip)")
        try await alice.subscribe("personal:#alice")

        let start = Self.now()
        // Outside, inside, 17 m outside (within the 25 m margin: no exit), inside, far outside.
        for (step, metres) in [450.0, 110, 217, 120, 560].enumerated() {
            try await Self.update(alice, northOfCenter: metres, at: start + Int64(step) * 1000)
        }
        let events = try await hana.awaitPublications("fences:\(trip)", count: 2)
        #expect(events.map { $0["event"]?.stringValue } == ["enter", "exit"])
        #expect(events.allSatisfy { $0["fence"]?.stringValue == fence && $0["user"]?.stringValue == "alice" })
        #expect(events.first?["ts"] == .int(start + 1000))
        #expect(events.first?["fence_name"]?.stringValue == "Meeting point")
        func told() -> [JSON] { alice.publications("personal:#alice").filter { $0["type"]?.stringValue == "fence" } }
        try await eventually("alice told of both") { told().count >= 2 }
        let told = told()
        #expect(told.map { $0["id"] } == events.map { $0["id"] })

        // A position older than the latest changes nothing; the next crossing is reported once.
        try await Self.update(alice, northOfCenter: 100, at: start + 2500)
        try await Self.update(alice, northOfCenter: 50, at: start + 6000)
        let more = try await hana.awaitPublications("fences:\(trip)", count: 3)
        #expect(more.map { $0["event"]?.stringValue } == ["enter", "exit", "enter"])
        #expect(more.last?["ts"] == .int(start + 6000))
        for client in [hana, alice] { await client.close() }
        try await server.stop()
    }

    @Test func aRoamingFenceAroundTheGuideReportsTravellersWhoStrayAndLeavesHostsOut() async throws {
        let server = try await startTravelServer()
        let trip = try await server.createTrip(hosts: ["guide", "hana"], travellers: ["alice", "bob"])
        let guide = try await server.client("guide")
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let hana = try await server.client("hana")
        _ = try await guide.rpc(
            "fence.create", ["trip": .string(trip), "name": "With the guide", "roaming": ["user": "guide", "radius": 2000], "detect": ["exit"]])
        try await guide.subscribe("fences:\(trip)")
        let start = Self.now()
        try await Self.update(guide, northOfCenter: 0, at: start)
        for client in [alice, bob, hana] { try await Self.update(client, northOfCenter: 500, at: start) }
        // Alice walks away; hana (a host) too, but the fence is for travellers.
        try await Self.update(alice, northOfCenter: 2600, at: start + 1000)
        try await Self.update(hana, northOfCenter: 2600, at: start + 1000)
        // The guide walks away from bob.
        try await Self.update(guide, northOfCenter: -2000, at: start + 2000)
        let events = try await guide.awaitPublications("fences:\(trip)", count: 2)
        #expect(Set(events.compactMap { $0["user"]?.stringValue }) == ["alice", "bob"])
        #expect(events.allSatisfy { $0["event"]?.stringValue == "exit" })
        for client in [guide, alice, bob, hana] { await client.close() }
        try await server.stop()
    }

    @Test func badDefinitionsAreRefusedNamingTheProblemAndTheServerKeepsServing() async throws {
        let server = try await startTravelServer()
        let trip = try await server.createTrip(hosts: ["hana"], travellers: ["alice"])
        let hana = try await server.client("hana")
        let alice = try await server.client("alice")
        func polygon(_ ring: [[Double]]) -> JSON {
            [
                "trip": .string(trip), "name": "Zone",
                "geometry": ["type": "Polygon", "coordinates": .array([.array(ring.map { .array($0.map(JSON.double)) })])],
            ]
        }
        let cases: [(LiveClient, JSON, UInt32, String)] = [
            (alice, Self.circle(trip), 103, "only hosts"),
            (hana, polygon([[6.58, 45.3], [6.59, 45.31], [6.59, 45.3], [6.58, 45.31], [6.58, 45.3]]), 107, "crosses itself"),
            (hana, polygon([[6.58, 45.3], [6.59, 45.3], [6.59, 45.31], [6.58, 45.31]]), 107, "not closed"),
            (hana, polygon([[6.58, 45.3], [6.58, 45.31], [6.59, 45.31], [6.59, 45.3], [6.58, 45.3]]), 107, "clockwise"),
            (hana, polygon([[6.58, 95.3], [6.59, 45.3], [6.59, 45.31], [6.58, 95.3]]), 107, "out of range"),
            (
                hana,
                ["trip": .string(trip), "name": "Both", "circle": ["lat": 45, "lon": 6, "radius": 10], "roaming": ["user": "hana", "radius": 10]],
                107, "not circle and roaming"
            ),
            (hana, ["trip": .string(trip), "name": "Stranger", "roaming": ["user": "zoe", "radius": 100]], 107, "not a member"),
            (hana, Self.circle(trip).adding("detect", ["arrive"]), 107, "'arrive'"),
            (hana, Self.circle(trip, radius: 60_000), 107, "radius"),
        ]
        for (client, data, code, words) in cases {
            do {
                _ = try await client.rpc("fence.create", data)
                Issue.record("accepted \(data.text)")
            } catch let failure as RPCFailure {
                #expect(failure.code == code, "\(data.text): \(failure)")
                #expect(failure.message.contains(words), "\(failure.message) should say \(words)")
            }
        }
        #expect(await alice.rpcErrorCode("fence.list", ["trip": .string(trip)]) == 103)
        await #expect(throws: RPCFailure.self) { try await alice.subscribe("fences:\(trip)") }

        // The server API refuses alike, and a webhook needs an http(s) URL and a secret of 16 characters.
        let apiCases: [(String, JSON, String)] = [
            ("fence_create", Self.circle("t-nowhere"), "unknown trip"),
            ("fence_create", Self.circle(trip).adding("users", ["alice", "zoe"]), "'zoe' is not a member"),
            ("fence_list", ["trip": "t-nowhere"], "unknown trip"),
            ("fence_webhook_set", ["trip": .string(trip), "url": "ftp://example.org/hook", "secret": "sixteen-chars-ok"], "not an http(s) URL"),
            ("fence_webhook_set", ["trip": .string(trip), "url": "https://example.org/hook", "secret": "short"], "at least 16 characters"),
            ("fence_webhook_set", ["trip": .string(trip), "url": "https://example.org/hook"], "secret is required"),
        ]
        for (method, body, words) in apiCases {
            do {
                _ = try await server.api(method, body)
                Issue.record("\(method) accepted \(body.text)")
            } catch let failure as RPCFailure {
                #expect(failure.code == 107 && failure.message.contains(words), "\(method) \(body.text): \(failure)")
            }
        }

        // The limit: 100 fences per trip, through the server API.
        for index in 0..<100 { _ = try await server.api("fence_create", Self.circle(trip, name: "Fence \(index)")) }
        do {
            _ = try await server.api("fence_create", Self.circle(trip, name: "One too many"))
            Issue.record("a 101st fence was accepted")
        } catch let failure as RPCFailure {
            #expect(failure.code == 107 && failure.message.contains("100 fences"))
        }
        let listed = try await hana.rpc("fence.list", ["trip": .string(trip)])["fences"]?.arrayValue ?? []
        #expect(listed.count == 100)
        let first = try #require(listed.first?["id"]?.stringValue)
        _ = try await server.api("fence_delete", ["trip": .string(trip), "fence": .string(first)])
        #expect(try await server.api("fence_list", ["trip": .string(trip)])["fences"]?.arrayValue.count == 99)
        #expect(await hana.rpcErrorCode("fence.delete", ["trip": .string(trip), "fence": .string(first)]) == 107)
        #expect(!alice.isClosed && !hana.isClosed)
        for client in [hana, alice] { await client.close() }
        try await server.stop()
    }

    /// What a webhook stand-in received: each event's id, body and signature header.
    final class Received: Sendable {
        let calls = Mutex<[(id: String, body: [UInt8], signature: String)]>([])
        let attempts = Mutex(0)
    }

    /// A receiver that answers 503 to its first `failures` calls, holds every call while
    /// `held` is not released, then answers 200.
    static func receiver(_ received: Received, failures: Int, held: HeldRequests?) async throws -> (port: Int, task: Task<Void, Error>) {
        let router = Router()
        router.post("/hook") { request, _ -> Response in
            let body = Array(try await request.body.collect(upTo: 65_536).readableBytesView)
            if let held { await held.hold() }
            let refuse = received.attempts.withLock { count in
                defer { count += 1 }
                return count < failures
            }
            if refuse { return Response(status: .serviceUnavailable) }
            received.calls.withLock {
                $0.append((request.headers[.init("X-Gondola-Event")!] ?? "", body, request.headers[.init("X-Gondola-Signature")!] ?? ""))
            }
            return Response(status: .ok)
        }
        return try await startStandIn(router, name: "fence webhook")
    }

    static func verify(_ call: (id: String, body: [UInt8], signature: String), secret: String) -> Bool {
        let parts = Dictionary(
            uniqueKeysWithValues: call.signature.split(separator: ",").compactMap { part -> (String, String)? in
                let pair = part.split(separator: "=", maxSplits: 1)
                return pair.count == 2 ? (String(pair[0]), String(pair[1])) : nil
            })
        guard let time = parts["t"], let given = parts["v1"] else { return false }
        let mac = HMAC<SHA256>.authenticationCode(for: Array("\(time).".utf8) + call.body, using: SymmetricKey(data: Array(secret.utf8)))
        return mac.map { String(format: "%02x", $0) }.joined() == given
    }

    @Test func webhooksAreSignedAndRetriedWhenTheReceiverIsDownOrSlow() async throws {
        let secret = "a-secret-of-the-trip"
        let down = Received()
        let (downPort, downTask) = try await Self.receiver(down, failures: 2, held: nil)
        let slow = Received()
        let held = HeldRequests()
        let (slowPort, slowTask) = try await Self.receiver(slow, failures: 0, held: held)
        let server = try await startTravelServer { configuration in
            configuration.domainSettings.values["fence_webhook_timeout"] = .string("300ms")
            configuration.domainSettings.values["fence_webhook_retry_base"] = .string("100ms")
        }
        let downTrip = try await server.createTrip(hosts: ["hana"], travellers: ["alice"])
        let slowTrip = try await server.createTrip(hosts: ["hana"], travellers: ["bob"])
        for (trip, port) in [(downTrip, downPort), (slowTrip, slowPort)] {
            _ = try await server.api(
                "fence_webhook_set", ["trip": .string(trip), "url": .string("http://127.0.0.1:\(port)/hook"), "secret": .string(secret)])
            _ = try await server.api("fence_create", Self.circle(trip))
        }
        let hana = try await server.client("hana")
        try await hana.subscribe("fences:\(downTrip)")
        try await hana.subscribe("fences:\(slowTrip)")
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let start = Self.now()
        try await Self.update(alice, northOfCenter: 0, at: start)
        try await Self.update(bob, northOfCenter: 0, at: start)
        // The channels have the events whatever the webhooks do.
        let downEvent = try #require(try await hana.awaitPublications("fences:\(downTrip)", count: 1).first)
        let slowEvent = try #require(try await hana.awaitPublications("fences:\(slowTrip)", count: 1).first)

        // The receiver that was down answers the third attempt.
        try await eventually("the event delivered after two refusals", within: .seconds(20)) { !down.calls.withLock(\.isEmpty) }
        let delivered = try #require(down.calls.withLock { $0.first })
        #expect(delivered.id == downEvent["id"]?.stringValue)
        #expect(try JSONParser.parse(delivered.body) == downEvent)
        #expect(Self.verify(delivered, secret: secret))
        #expect(down.attempts.withLock { $0 } == 3)

        // The slow receiver makes attempts time out; the server keeps serving meanwhile.
        try await eventually("two timed-out attempts", within: .seconds(20)) { held.count >= 2 }
        try await Self.update(bob, northOfCenter: 900, at: start + 1000)
        #expect(try await hana.awaitPublications("fences:\(slowTrip)", count: 2).count == 2)
        held.release()
        try await eventually("the slow receiver's events delivered", within: .seconds(20)) {
            Set(slow.calls.withLock { $0.map(\.id) }).contains(slowEvent["id"]?.stringValue ?? "?")
        }
        #expect(slow.calls.withLock { $0.allSatisfy { Self.verify($0, secret: secret) } })
        for client in [hana, alice, bob] { await client.close() }
        try await server.stop()
        for task in [downTask, slowTask] {
            task.cancel()
            _ = try? await task.value
        }
    }
}
