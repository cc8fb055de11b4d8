import Foundation
import GondolaProtocol
import Testing

@_spi(Engine) @testable import GondolaHub

/// What a node does when its engine may have missed a part of the bus (`Node.streamsInterrupted`):
/// the subscribers of the affected channels recover, as after centrifuge's insufficient state,
/// and nobody else is disturbed.
@Suite(.timeLimit(.minutes(1))) struct StreamRecoveryTests {
    @Test func aClientSideSubscriptionEndsWith2500AndRecoversWhatItMissed() async throws {
        let node = try await makeNode()
        var bob = try await TestClient.connected(node, user: "bob")
        guard case let .subscribe(first) = try await bob.call(.subscribe(SubscribeRequest(channel: "room:a", recoverable: true))).body else {
            Issue.record("no subscribe reply")
            return
        }
        _ = try await bob.call(.subscribe(SubscribeRequest(channel: "room:b")))

        node.streamsInterrupted { $0 == "room:a" }

        guard case let .push(ended) = try await bob.next(), case let .unsubscribe(code, reason) = ended.body else {
            Issue.record("no unsubscribe push")
            return
        }
        #expect(ended.channel == "room:a" && code == 2500 && reason == "insufficient state")
        #expect(bob.session.subscriptions == ["room:b"], "the other channel's subscription goes on")
        // What the client missed meanwhile comes back when it subscribes again from its position.
        try await node.publish(channel: "room:a", data: Payload(RawJSON(["n": 1])))
        let again = SubscribeRequest(channel: "room:a", recover: true, epoch: first.epoch, offset: first.offset, recoverable: true)
        guard case let .subscribe(recovered) = try await bob.call(.subscribe(again)).body else {
            Issue.record("no subscribe reply")
            return
        }
        #expect(recovered.recovered && recovered.publications.map(\.data.bytes) == [Array(#"{"n":1}"#.utf8)])
    }

    @Test func aServerSideSubscriptionClosesTheConnectionWith3010() async throws {
        let node = try await makeNode()
        let (alice, _) = try await ServerSideSubscriptionTests.connect(node, claims: #"{"sub":"alice","channels":["room:news"]}"#)
        var bob = try await TestClient.connected(node, user: "bob")
        _ = try await bob.call(.subscribe(SubscribeRequest(channel: "room:other")))

        node.streamsInterrupted { $0 == "room:news" }

        #expect(try await alice.closeCode() == .insufficientState)
        #expect(bob.session.subscriptions == ["room:other"], "a connection without the channel is not touched")
        try await node.publish(channel: "room:other", data: Payload(RawJSON(["n": 2])))
        guard case let .push(push) = try await bob.next(), case .publication = push.body else {
            Issue.record("bob's subscription stopped")
            return
        }
    }
}
