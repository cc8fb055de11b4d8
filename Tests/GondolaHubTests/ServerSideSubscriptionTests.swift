import Foundation
import GondolaProtocol
import Testing

@_spi(Engine) @testable import GondolaHub

/// Server-side subscriptions: from a connection token's `channels` and `subs`, from
/// `user_subscribe_to_personal`, and from the server API's `subscribe`, announced in the
/// connect reply or with a subscribe push, and recovered through `connect.subs`.
@Suite(.timeLimit(.minutes(1))) struct ServerSideSubscriptionTests {
    /// A client connected with a connection token whose claims are `claims`.
    static func connect(_ node: Node, claims: String, subs: [String: SubscribeRequest] = [:]) async throws -> (TestClient, Reply) {
        var client = TestClient(node: node)
        var request = ConnectRequest(token: TokenTests.handMadeToken(claims, secret: testSecret))
        request.subs = subs
        return (client, try await client.call(.connect(request)))
    }

    @Test func aTokensChannelsAreSubscribedAndAnsweredInTheConnectReply() async throws {
        let node = try await makeNode()
        let (alice, reply) = try await Self.connect(node, claims: #"{"sub":"alice","channels":["locked:news","room:a"]}"#)
        guard case let .connect(result) = reply.body else {
            Issue.record("\(reply)")
            return
        }
        #expect(Set(result.subs.keys) == ["locked:news", "room:a"])
        #expect(result.subs["room:a"]?.recoverable == false && result.subs["room:a"]?.epoch.isEmpty == false)
        #expect(alice.session.subscriptions == ["locked:news", "room:a"])
        try await node.publish(channel: "locked:news", data: Payload(RawJSON(["n": 1])))
        guard case let .push(push) = try await alice.next(), case .publication = push.body else {
            Issue.record("no publication")
            return
        }
        #expect(push.channel == "locked:news")
    }

    @Test func aTokensSubsGiveInfoAndData() async throws {
        let node = try await makeNode()
        let (_, reply) = try await Self.connect(
            node, claims: #"{"sub":"alice","subs":{"room:b":{"info":{"seat" : 2},"data":{"hello" : 1.0}}},"channels":["room:ignored"]}"#)
        guard case let .connect(result) = reply.body else {
            Issue.record("\(reply)")
            return
        }
        #expect(Array(result.subs.keys) == ["room:b"], "subs wins over channels, as in Centrifugo")
        #expect(result.subs["room:b"]?.data?.bytes == Array(#"{"hello" : 1.0}"#.utf8))
        let presence = try await node.presence(channel: "room:b")
        #expect(presence.values.map { $0.chanInfo?.bytes } == [Array(#"{"seat" : 2}"#.utf8)])
    }

    @Test func anUnknownChannelInATokenRefusesTheConnection() async throws {
        let node = try await makeNode()
        var client = TestClient(node: node)
        _ = await client.send(
            .connect(ConnectRequest(token: TokenTests.handMadeToken(#"{"sub":"alice","channels":["nowhere:x"]}"#, secret: testSecret))))
        #expect(try await client.closeCode().code == 3500)
        #expect(node.stats.clients == 0)
    }

    @Test func everyUserIsSubscribedToItsPersonalChannelWhenConfigured() async throws {
        let node = try await makeNode { $0.userSubscribeToPersonal = true }
        let (_, reply) = try await Self.connect(node, claims: #"{"sub":"alice"}"#)
        guard case let .connect(result) = reply.body else {
            Issue.record("\(reply)")
            return
        }
        #expect(Array(result.subs.keys) == ["personal:#alice"])
    }

    /// A client that reconnects names where it was in `connect.subs` and gets what it missed.
    @Test func aReconnectRecoversThroughConnectSubs() async throws {
        let node = try await makeNode()
        let (first, reply) = try await Self.connect(node, claims: #"{"sub":"alice","channels":["room:r"]}"#)
        guard case let .connect(result) = reply.body, let position = result.subs["room:r"] else {
            Issue.record("\(reply)")
            return
        }
        first.session.transportClosed()
        for n in 1...3 { try await node.publish(channel: "room:r", data: Payload(RawJSON(["n": .int(Int64(n))]))) }
        let (_, again) = try await Self.connect(
            node, claims: #"{"sub":"alice","channels":["room:r"]}"#,
            subs: ["room:r": SubscribeRequest(channel: "", recover: true, epoch: position.epoch, offset: position.offset)])
        guard case let .connect(recovered) = again.body, let sub = recovered.subs["room:r"] else {
            Issue.record("\(again)")
            return
        }
        #expect(sub.recovered && sub.wasRecovering)
        #expect(sub.publications.map(\.offset) == [position.offset + 1, position.offset + 2, position.offset + 3])
    }

    @Test func theServerAPISubscribesEveryConnectionOfAUser() async throws {
        let node = try await makeNode()
        var phone = try await TestClient.connected(node, user: "alice")
        let laptop = try await TestClient.connected(node, user: "alice")
        let options = RawJSON(trusted: Array(#"{"user":"alice","channel":"locked:ops","data":{"why" : "on call"}}"#.utf8))
        try await node.subscribe(user: "alice", channel: "locked:ops", options: options)
        for client in [phone, laptop] {
            guard case let .push(push) = try await client.next(), case let .subscribe(result) = push.body else {
                Issue.record("no subscribe push")
                return
            }
            #expect(push.channel == "locked:ops" && result.data?.bytes == Array(#"{"why" : "on call"}"#.utf8))
        }
        try await node.publish(channel: "locked:ops", data: Payload(RawJSON(["n": 1])))
        for client in [phone, laptop] {
            guard case let .push(push) = try await client.next(), case .publication = push.body else {
                Issue.record("no publication")
                return
            }
        }
        // Bad requests change nothing.
        await #expect(throws: HubError.unknownChannel("nowhere:x")) {
            try await node.subscribe(user: "alice", channel: "nowhere:x", options: RawJSON(trusted: Array("{}".utf8)))
        }
        await #expect(throws: HubError.self) {
            try await node.subscribe(user: "alice", channel: "room:x", options: RawJSON(trusted: Array(#"{"override":{"presence":1}}"#.utf8)))
        }
        #expect(try await phone.call(.ping).body == .ping)
        #expect(phone.session.subscriptions == ["locked:ops"])
    }

    /// `expire_at` of the server API's subscribe: the push tells the subscription's ttl,
    /// and once it is over (with the grace of `pongTimeout`) the connection is unsubscribed
    /// with 2501; a past `expire_at` is refused before anything is sent.
    @Test func aServerSideSubscriptionEndsAtItsExpireAt() async throws {
        let node = try await makeNode()
        var client = try await TestClient.connected(node, user: "alice")
        let end = Int(Date().timeIntervalSince1970) + 120
        await #expect(throws: HubError.badRequest("expire_at \(end - 240) is in the past")) {
            try await node.subscribe(user: "alice", channel: "locked:shift", options: RawJSON(trusted: Array(#"{"expire_at":\#(end - 240)}"#.utf8)))
        }
        try await node.subscribe(user: "alice", channel: "locked:shift", options: RawJSON(trusted: Array(#"{"expire_at":\#(end)}"#.utf8)))
        guard case let .push(push) = try await client.next(), case let .subscribe(result) = push.body else {
            Issue.record("no subscribe push")
            return
        }
        #expect(result.expires && (110...120).contains(result.ttl), "ttl \(result.ttl)")
        client.session.tick(now: .now, date: Date(timeIntervalSince1970: Double(end - 1)))
        #expect(client.session.subscriptions == ["locked:shift"])
        client.session.tick(now: .now, date: Date(timeIntervalSince1970: Double(end) + node.configuration.pongTimeout.timeInterval + 1))
        guard case let .push(ended) = try await client.next(), case let .unsubscribe(code, _) = ended.body else {
            Issue.record("no unsubscribe push")
            return
        }
        #expect(ended.channel == "locked:shift" && code == UnsubscribeCode.expired)
        #expect(client.session.subscriptions.isEmpty)
    }
}

extension Node {
    /// The server API's `subscribe` with its body as it arrives: read, then asked of the node.
    func subscribe(user: String, channel: String, options: RawJSON) async throws(HubError) {
        try await subscribe(user: user, channel: channel, try ServerSubscription(options), options: options)
    }
}
