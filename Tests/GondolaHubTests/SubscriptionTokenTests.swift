import Foundation
import GondolaProtocol
import Testing

@_spi(Engine) @testable import GondolaHub

/// Subscription tokens in `subscribe` and `sub_refresh`, as Centrifugo reads them: a valid
/// token opens a namespace closed to clients, every fault gets its own code and changes
/// nothing else, the token's info, data and overrides apply to its subscription only.
@Suite(.timeLimit(.minutes(1))) struct SubscriptionTokenTests {
    static let now = Int(Date().timeIntervalSince1970)

    /// A subscription token signed with the hub tests' secret.
    static func token(_ claims: String) -> String {
        TokenTests.handMadeToken(claims, secret: testSecret)
    }

    static func subscribe(_ channel: String, token: String, joinLeave: Bool = false) -> Command.Method {
        var request = SubscribeRequest(channel: channel, joinLeave: joinLeave)
        request.token = token
        return .subscribe(request)
    }

    @Test func aValidTokenOpensANamespaceClosedToClients() async throws {
        let node = try await makeNode()
        var alice = try await TestClient.connected(node, user: "alice")
        #expect(try await alice.call(.subscribe(SubscribeRequest(channel: "locked:a"))).errorCode == 103)
        let token = Self.token(#"{"sub":"alice","channel":"locked:a","exp":\#(Self.now + 600),"data":{"welcome" : 1.50}}"#)
        let reply = try await alice.call(Self.subscribe("locked:a", token: token))
        guard case let .subscribe(result) = reply.body else {
            Issue.record("\(reply)")
            return
        }
        #expect(result.data?.bytes == Array(#"{"welcome" : 1.50}"#.utf8), "the token's data reaches the client byte for byte")
        #expect(result.expires && (590...600).contains(result.ttl))
        try await node.publish(channel: "locked:a", data: Payload(RawJSON(["n": 1])))
        guard case let .push(push) = try await alice.next(), case let .publication(publication) = push.body else {
            Issue.record("no publication")
            return
        }
        #expect(publication.data == Payload(RawJSON(["n": 1])))
    }

    @Test(arguments: [
        (#"{"sub":"alice","channel":"locked:other","exp":EXP}"#, UInt32(103)),
        (#"{"sub":"bob","channel":"locked:a","exp":EXP}"#, 103),
        (#"{"sub":"alice","channel":"locked:a","client":"someone-else"}"#, 103),
        (#"{"sub":"alice","exp":EXP}"#, 103),
        (#"{"sub":"alice","channel":"locked:a","exp":PAST}"#, 109),
        (#"{"sub":"alice","channel":"locked:a","nbf":EXP}"#, 109),
        (#"{"sub":"alice","channel":"locked:a","b64info":"%%%"}"#, 103),
        (#"{"sub":"alice","channel":"locked:a","override":{"presence":true}}"#, 103),
    ])
    func aFaultyTokenGetsItsCodeAndChangesNothing(_ claims: String, _ code: UInt32) async throws {
        let node = try await makeNode()
        var alice = try await TestClient.connected(node, user: "alice")
        let token = Self.token(
            claims.replacingOccurrences(of: "EXP", with: "\(Self.now + 600)")
                .replacingOccurrences(of: "PAST", with: "\(Self.now - 5)"))
        #expect(try await alice.call(Self.subscribe("locked:a", token: token)).errorCode == code)
        #expect(alice.session.subscriptions.isEmpty)
        // The connection goes on: the same client subscribes elsewhere.
        #expect(try await alice.call(.subscribe(SubscribeRequest(channel: "room:ok"))).errorCode == nil)
    }

    @Test func aForgedOrMalformedTokenIsRefusedWith103() async throws {
        let node = try await makeNode()
        var alice = try await TestClient.connected(node, user: "alice")
        let forged = TokenTests.handMadeToken(#"{"sub":"alice","channel":"locked:a"}"#, secret: "another-secret-another-secret-another")
        for token in [forged, "invalid_token", "a.b.c"] {
            #expect(try await alice.call(Self.subscribe("locked:a", token: token)).errorCode == 103, "\(token)")
        }
        #expect(alice.session.subscriptions.isEmpty)
    }

    /// The token's `info` is the subscription's `chan_info`; its overrides turn the namespace's
    /// presence and join/leave off for this subscription only.
    @Test func infoAndOverridesApplyToTheTokensSubscription() async throws {
        let node = try await makeNode()
        var alice = try await TestClient.connected(node, user: "alice")
        var bob = try await TestClient.connected(node, user: "bob")
        _ = try await bob.call(.subscribe(SubscribeRequest(channel: "room:q", joinLeave: true)))
        let token = Self.token(
            #"""
            {"sub":"alice","channel":"room:q","info":{"seat" : 3},"override":{"presence":{"value":false},"join_leave":{"value":false}}}
            """#)
        #expect(try await alice.call(Self.subscribe("room:q", token: token)).errorCode == nil)
        _ = try await alice.call(.publish(channel: "room:q", data: Payload(RawJSON(["hi": true]))))
        var publication: Publication?
        while publication == nil {
            guard case let .push(push) = try await bob.next() else { continue }
            if case let .join(info) = push.body, info.user == "alice" { Issue.record("alice's join was announced") }
            if case let .publication(received) = push.body { publication = received }
        }
        #expect(publication?.info?.chanInfo?.bytes == Array(#"{"seat" : 3}"#.utf8))
        let presence = try await node.presence(channel: "room:q")
        #expect(Set(presence.values.map(\.user)) == ["bob"])
        alice.session.transportClosed()
        // Alice was never in presence, so her leave must not be announced either: bob's next
        // message is the reply to his own call.
        let reply = try await bob.call(.presenceStats(channel: "room:q"))
        #expect(reply.body == .presenceStats(PresenceStats(numClients: 1, numUsers: 1)))
    }

    /// `force_recovery` and `force_positioning` turn a plain subscribe into a recoverable, positioned one.
    @Test func overridesForceRecoveryAndPositioning() async throws {
        let node = try await makeNode()
        var alice = try await TestClient.connected(node, user: "alice")
        let plain = try await alice.call(.subscribe(SubscribeRequest(channel: "room:plain")))
        guard case let .subscribe(before) = plain.body else {
            Issue.record("\(plain)")
            return
        }
        #expect(!before.recoverable && !before.positioned)
        for (override, recoverable) in [("force_positioning", false), ("force_recovery", true)] {
            let channel = "room:\(override)"
            let token = Self.token(#"{"sub":"alice","channel":"\#(channel)","override":{"\#(override)":{"value":true}}}"#)
            let reply = try await alice.call(Self.subscribe(channel, token: token))
            guard case let .subscribe(result) = reply.body else {
                Issue.record("\(reply)")
                return
            }
            #expect(result.positioned && result.recoverable == recoverable, "\(override)")
        }
    }

    @Test func subRefreshProlongsAndAnExpiredSubscriptionIsUnsubscribedWith2501() async throws {
        let node = try await makeNode()
        var alice = try await TestClient.connected(node, user: "alice")
        // This test's own clock reading: a loaded machine may take seconds between the suite's start and here.
        let now = Int(Date().timeIntervalSince1970)
        /// Seconds since `now`, so a ttl is checked against the time that really passed.
        func elapsed() -> Int { Int(Date().timeIntervalSince1970) - now }
        let first = Self.token(#"{"sub":"alice","channel":"locked:b","exp":\#(now + 3600),"expire_at":\#(now + 60)}"#)
        let reply = try await alice.call(Self.subscribe("locked:b", token: first))
        guard case let .subscribe(result) = reply.body else {
            Issue.record("\(reply)")
            return
        }
        #expect(result.expires && (60 - elapsed() - 1...60).contains(Int(result.ttl)), "expire_at, not exp, sets the subscription's end")

        #expect(try await alice.call(.subRefresh(channel: "locked:c", token: first)).errorCode == 103, "not subscribed")
        #expect(
            try await alice.call(.subRefresh(channel: "locked:b", token: Self.token(#"{"sub":"alice","channel":"locked:c"}"#)))
                .errorCode == 103, "a token for another channel")
        #expect(try await alice.call(.subRefresh(channel: "locked:b", token: "")).errorCode == 107)
        let later = Self.token(#"{"sub":"alice","channel":"locked:b","expire_at":\#(now + 7200)}"#)
        let refreshed = try await alice.call(.subRefresh(channel: "locked:b", token: later))
        guard case let .subRefresh(prolonged) = refreshed.body else {
            Issue.record("\(refreshed)")
            return
        }
        #expect(prolonged.expires && (7200 - elapsed() - 1...7200).contains(Int(prolonged.ttl)), "\(prolonged.ttl)")

        // An hour later the refreshed subscription stands; three hours later it has expired.
        alice.session.tick(now: .now, date: Date(timeIntervalSince1970: Double(now + 3600)))
        #expect(alice.session.subscriptions == ["locked:b"])
        alice.session.tick(now: .now, date: Date(timeIntervalSince1970: Double(now + 3 * 3600)))
        var unsubscribed: Push?
        while unsubscribed == nil {
            if case let .push(push) = try await alice.next(), case .unsubscribe = push.body { unsubscribed = push }
        }
        #expect(unsubscribed == Push(channel: "locked:b", .unsubscribe(code: 2501, reason: "subscription expired")))
        #expect(alice.session.subscriptions.isEmpty)
    }
}
