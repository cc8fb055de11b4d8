import Foundation
import GondolaProtocol
import Testing

@_spi(Engine) @testable import GondolaHub

/// Fossil delta subscriptions: negotiation, the first publication whole and later ones
/// as deltas that give every publication back exactly, in both encodings, with
/// recovery whole and subscribers without deltas unaffected.
@Suite struct DeltaSubscriptionTests {
    /// A node whose `room` namespace (history, recovery) allows fossil deltas and sends
    /// every publication as one (`deltaPublish`), and whose default namespace allows none.
    func deltaNode(deltaPublish: Bool = true) async throws -> Node {
        try await makeNode {
            $0.namespaces["room"]?.allowedDeltaTypes = [.fossil]
            $0.namespaces["room"]?.deltaPublish = deltaPublish
        }
    }

    /// Position-frame-like publications: one of eight travellers moves from one frame
    /// to the next, so most bytes repeat.
    static func frames(count: Int, from start: Int = 0) -> [Payload] {
        (start..<(start + count)).map { n in
            Payload([
                "type": "nearby",
                "travellers": .array(
                    (0..<8).map { index in
                        let step = n / 8 + (index < n % 8 ? 1 : 0)
                        return [
                            "id": .string("traveller-\(index)"), "lat": .double(46.0 + Double(index) / 1000 + Double(step) / 100_000),
                            "lng": 7.5, "name": "Zoë Übersax",
                        ]
                    }),
            ])
        }
    }

    /// Rebuilds the data of each publication a delta subscription received, as its SDK
    /// does: a whole one replaces the base, a delta is applied to it.
    static func rebuild(_ publications: [Publication], encoding: ProtocolEncoding) throws -> [[UInt8]] {
        var base: [UInt8] = []
        var rebuilt: [[UInt8]] = []
        for publication in publications {
            let text: [UInt8]
            switch (encoding, publication.data.json ?? .null) {
            case let (_, .string(string)) where publication.delta || encoding == .json: text = Array(string.utf8)
            case (.protobuf, _): text = publication.data.bytes
            default: throw HarnessError("a JSON delta subscription got data that is not a string: \(publication.data)")
            }
            base = publication.delta ? try FossilDelta.apply(text, to: base) : text
            rebuilt.append(base)
        }
        return rebuilt
    }

    func publications(_ client: TestClient, count: Int) async throws -> [Publication] {
        var received: [Publication] = []
        while received.count < count {
            if let publication = try await client.next().publication { received.append(publication) }
        }
        return received
    }

    @Test(arguments: ProtocolEncoding.allCases)
    func laterPublicationsAreDeltasThatGiveEveryPublicationBack(encoding: ProtocolEncoding) async throws {
        let node = try await deltaNode()
        var delta = try await TestClient.connected(node, user: "alice", encoding: encoding)
        var plain = try await TestClient.connected(node, user: "bob", encoding: encoding)
        let negotiated = try await delta.call(.subscribe(SubscribeRequest(channel: "room:d", delta: "fossil")))
        guard case let .subscribe(result) = negotiated.body else {
            Issue.record("\(negotiated)")
            return
        }
        #expect(result.delta)
        let without = try await plain.call(.subscribe(SubscribeRequest(channel: "room:d")))
        guard case let .subscribe(plainResult) = without.body else {
            Issue.record("\(without)")
            return
        }
        #expect(!plainResult.delta)

        let frames = Self.frames(count: 6)
        for frame in frames { try await node.publish(channel: "room:d", data: frame) }
        let received = try await publications(delta, count: frames.count)
        #expect(received.map(\.delta) == [false, true, true, true, true, true])
        #expect(received.map(\.offset) == Array(1...6))
        #expect(try Self.rebuild(received, encoding: encoding) == frames.map(\.bytes))
        let deltaBytes = received.dropFirst().map { publication -> Int in
            guard case let .string(text)? = publication.data.json else { return .max }
            return text.utf8.count
        }
        #expect(deltaBytes.allSatisfy { $0 < frames[0].bytes.count / 3 }, "deltas of \(deltaBytes) bytes for frames of \(frames[0].bytes.count)")

        let whole = try await publications(plain, count: frames.count)
        #expect(whole.map(\.data) == frames)
        #expect(whole.allSatisfy { !$0.delta })
    }

    /// Without `deltaPublish` a publication goes as a delta only when published with
    /// `delta`; every publication, whole or not, is the base of the next delta.
    @Test(arguments: ProtocolEncoding.allCases)
    func onlyPublicationsPublishedWithDeltaGoAsDeltas(encoding: ProtocolEncoding) async throws {
        let node = try await deltaNode(deltaPublish: false)
        var client = try await TestClient.connected(node, user: "alice", encoding: encoding)
        _ = try await client.call(.subscribe(SubscribeRequest(channel: "room:asked", delta: "fossil")))
        let frames = Self.frames(count: 6)
        let asked = [true, true, false, true, false, true]
        for (frame, delta) in zip(frames, asked) {
            try await node.publish(channel: "room:asked", data: frame, publishing: PublishOptions(delta: delta))
        }
        let received = try await publications(client, count: frames.count)
        #expect(received.map(\.delta) == [false, true, false, true, false, true])
        #expect(try Self.rebuild(received, encoding: encoding) == frames.map(\.bytes))
    }

    @Test func aLateSubscriberStartsWholeWhileOthersKeepTakingDeltas() async throws {
        let node = try await deltaNode()
        var early = try await TestClient.connected(node, user: "alice")
        var late = try await TestClient.connected(node, user: "carol", encoding: .protobuf)
        _ = try await early.call(.subscribe(SubscribeRequest(channel: "room:late", delta: "fossil")))
        let frames = Self.frames(count: 5)
        for frame in frames.prefix(2) { try await node.publish(channel: "room:late", data: frame) }
        _ = try await late.call(.subscribe(SubscribeRequest(channel: "room:late", delta: "fossil")))
        for frame in frames.dropFirst(2) { try await node.publish(channel: "room:late", data: frame) }

        let earlyReceived = try await publications(early, count: 5)
        #expect(earlyReceived.map(\.delta) == [false, true, true, true, true])
        #expect(try Self.rebuild(earlyReceived, encoding: .json) == frames.map(\.bytes))
        let lateReceived = try await publications(late, count: 3)
        #expect(lateReceived.map(\.delta) == [false, true, true])
        #expect(try Self.rebuild(lateReceived, encoding: .protobuf) == frames.dropFirst(2).map(\.bytes))
    }

    @Test func aDeltaNoShorterThanThePublicationIsSentWhole() async throws {
        let node = try await deltaNode()
        var client = try await TestClient.connected(node, user: "alice")
        _ = try await client.call(.subscribe(SubscribeRequest(channel: "room:short", delta: "fossil")))
        let data: [Payload] = [Payload(["a": 1]), Payload(["zz": "other"]), Self.frames(count: 1)[0], Self.frames(count: 1, from: 1)[0]]
        for item in data { try await node.publish(channel: "room:short", data: item) }
        let received = try await publications(client, count: data.count)
        #expect(received.map(\.delta) == [false, false, false, true])
        #expect(try Self.rebuild(received, encoding: .json) == data.map(\.bytes))
    }

    @Test func recoveredPublicationsComeWholeAndTheNextLiveOneToo() async throws {
        let node = try await deltaNode()
        var client = try await TestClient.connected(node, user: "alice")
        let first = try await client.call(.subscribe(SubscribeRequest(channel: "room:rec", recoverable: true, delta: "fossil")))
        guard case let .subscribe(subscribed) = first.body else {
            Issue.record("\(first)")
            return
        }
        let frames = Self.frames(count: 6)
        for frame in frames.prefix(2) { try await node.publish(channel: "room:rec", data: frame) }
        _ = try await publications(client, count: 2)
        _ = try await client.call(.unsubscribe(channel: "room:rec"))
        for frame in frames[2..<4] { try await node.publish(channel: "room:rec", data: frame) }

        let again = try await client.call(
            .subscribe(
                SubscribeRequest(
                    channel: "room:rec", recover: true, epoch: subscribed.epoch, offset: 2, recoverable: true, delta: "fossil")))
        guard case let .subscribe(recovered) = again.body else {
            Issue.record("\(again)")
            return
        }
        #expect(recovered.recovered && recovered.delta)
        #expect(recovered.publications.map(\.offset) == [3, 4] && recovered.publications.allSatisfy { !$0.delta })
        // The JSON encoding hands a delta subscription whole data as text.
        #expect(recovered.publications.map(\.data) == frames[2..<4].map { Payload(.string($0.description)) })

        for frame in frames.suffix(2) { try await node.publish(channel: "room:rec", data: frame) }
        let live = try await publications(client, count: 2)
        #expect(live.map(\.delta) == [false, true])
        #expect(try Self.rebuild(live, encoding: .json) == frames.suffix(2).map(\.bytes))

        // History is not a subscription: whole publications as they are.
        let history = try await client.call(.history(HistoryRequest(channel: "room:rec", limit: -1)))
        guard case let .history(stream) = history.body else {
            Issue.record("\(history)")
            return
        }
        #expect(stream.publications.map(\.data) == frames.suffix(5))
    }

    @Test func aNamespaceWithoutDeltasAnswersFalseAndSendsPublicationsAsTheyAre() async throws {
        let node = try await deltaNode()
        var client = try await TestClient.connected(node, user: "alice")
        let reply = try await client.call(.subscribe(SubscribeRequest(channel: "plain", delta: "fossil")))
        guard case let .subscribe(result) = reply.body else {
            Issue.record("\(reply)")
            return
        }
        #expect(!result.delta)
        let frames = Self.frames(count: 2)
        for frame in frames { try await node.publish(channel: "plain", data: frame) }
        #expect(try await publications(client, count: 2).map(\.data) == frames)
    }

    @Test func anUnknownDeltaTypeIsABadRequestAndChangesNothing() async throws {
        let node = try await deltaNode()
        var client = try await TestClient.connected(node, user: "alice")
        let refused = try await client.call(.subscribe(SubscribeRequest(channel: "room:x", delta: "xdelta")))
        guard case let .error(error) = refused.body else {
            Issue.record("\(refused)")
            return
        }
        #expect(error.code == 107 && error.message.contains("subscribe.delta 'xdelta'"))
        #expect(node.channels()["room:x"] == nil)
        let accepted = try await client.call(.subscribe(SubscribeRequest(channel: "room:x", delta: "fossil")))
        guard case let .subscribe(result) = accepted.body else {
            Issue.record("\(accepted)")
            return
        }
        #expect(result.delta)
    }

    @Test func aSubscriberThatLeavesAndComesBackStartsWholeAgain() async throws {
        let node = try await deltaNode()
        var client = try await TestClient.connected(node, user: "alice")
        let frames = Self.frames(count: 4)
        _ = try await client.call(.subscribe(SubscribeRequest(channel: "room:back", delta: "fossil")))
        for frame in frames.prefix(2) { try await node.publish(channel: "room:back", data: frame) }
        _ = try await publications(client, count: 2)
        _ = try await client.call(.unsubscribe(channel: "room:back"))
        _ = try await client.call(.subscribe(SubscribeRequest(channel: "room:back", delta: "fossil")))
        for frame in frames.suffix(2) { try await node.publish(channel: "room:back", data: frame) }
        let again = try await publications(client, count: 2)
        #expect(again.map(\.delta) == [false, true])
        #expect(try Self.rebuild(again, encoding: .json) == frames.suffix(2).map(\.bytes))
    }
}
