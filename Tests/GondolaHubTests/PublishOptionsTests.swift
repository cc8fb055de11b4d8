import Foundation
import GondolaProtocol
import GondolaTestSupport
import Testing

@_spi(Engine) @testable import GondolaHub

/// Centrifugo's per-publication options on every engine: tags, `skip_history`,
/// idempotency keys and versions, on a node alone and in a cluster (the keys shared by
/// the nodes).
@Suite struct PublishOptionsTests {
    typealias Engine = BrokerTests.BrokerEngine
    /// Every engine but Redis alone, whose publishing is the Redis engine's.
    static let engines = Engine.allCases.filter { $0 != .redisAlone }

    @Test(arguments: engines)
    func tagsReachSubscribersAndStayInTheStream(engine: Engine) async throws {
        let (node, stop) = try await BrokerTests.node(engine)
        var client = try await TestClient.connected(node, user: "ann")
        _ = try await client.call(.subscribe(SubscribeRequest(channel: "room:tags")))
        _ = try await client.call(.subscribe(SubscribeRequest(channel: "ledger:tags")))
        let tags = ["kind": "lift", "resort": "Zermatt ⛷"]
        for channel in ["room:tags", "ledger:tags"] {
            try await node.publish(channel: channel, data: Payload(["n": 1]), tags: tags)
        }
        let received = try await BrokerTests.publications(client, count: 2)
        #expect(received.map(\.tags) == [tags, tags])
        for channel in ["room:tags", "ledger:tags"] {
            let stored = try await node.history(channel: channel, limit: -1, since: nil, reverse: false).publications
            #expect(stored.map(\.tags) == [tags], "\(channel) keeps the tags")
        }
        await stop()
    }

    @Test(arguments: engines)
    func skipHistoryDeliversWithoutAnOffsetAndLeavesTheStream(engine: Engine) async throws {
        let (node, stop) = try await BrokerTests.node(engine)
        var client = try await TestClient.connected(node, user: "bo")
        _ = try await client.call(.subscribe(SubscribeRequest(channel: "room:skip")))
        let first = try await node.publish(channel: "room:skip", data: Payload(1))
        let skipped = try await node.publish(channel: "room:skip", data: Payload(2), publishing: PublishOptions(skipHistory: true))
        let third = try await node.publish(channel: "room:skip", data: Payload(3))
        #expect(first?.offset == 1 && skipped == nil && third?.offset == 2)
        let received = try await BrokerTests.publications(client, count: 3)
        #expect(received.map(\.offset) == [1, 0, 2])
        #expect(received.map(\.data) == [Payload(1), Payload(2), Payload(3)])
        let stored = try await node.history(channel: "room:skip", limit: -1, since: nil, reverse: false).publications
        #expect(stored.map(\.data) == [Payload(1), Payload(3)])
        await stop()
    }

    /// In `room` (volatile streams: Redis's append script, PostgreSQL's volatile tables) and
    /// `ledger` (durable streams: PostgreSQL on both cluster engines).
    @Test(arguments: engines, ["room", "ledger"])
    func aRepeatedIdempotencyKeyAnswersTheFirstResultAndPublishesNothing(engine: Engine, namespace: String) async throws {
        let (node, stop) = try await BrokerTests.node(engine)
        var client = try await TestClient.connected(node, user: "cy")
        let (once, twice) = ("\(namespace):once", "\(namespace):twice")
        _ = try await client.call(.subscribe(SubscribeRequest(channel: once)))
        let keyed = PublishOptions(idempotencyKey: "order-17")
        let first = try await node.publish(channel: once, data: Payload(["n": 1]), publishing: keyed)
        let retry = try await node.publish(channel: once, data: Payload(["n": 2]), publishing: keyed)
        #expect(first != nil && retry == first, "the retry answers the first position")
        // The same key on another channel, and another key, publish.
        let elsewhere = try await node.publish(channel: twice, data: Payload(1), publishing: keyed)
        let other = try await node.publish(channel: once, data: Payload(["n": 3]), publishing: PublishOptions(idempotencyKey: "order-18"))
        #expect(elsewhere?.offset == 1 && other?.offset == 2)
        // Without a stream the key is kept all the same.
        let noStream = PublishOptions(skipHistory: true, idempotencyKey: "plain")
        #expect(try await node.publish(channel: once, data: Payload(4), publishing: noStream) == nil)
        #expect(try await node.publish(channel: once, data: Payload(5), publishing: noStream) == nil)
        let received = try await BrokerTests.publications(client, count: 3)
        #expect(received.map(\.data) == [Payload(["n": 1]), Payload(["n": 3]), Payload(4)], "each key published once")
        let stored = try await node.history(channel: once, limit: -1, since: nil, reverse: false).publications
        #expect(stored.map(\.data) == [Payload(["n": 1]), Payload(["n": 3])])
        await stop()
    }

    @Test(arguments: engines, ["room", "ledger"])
    func anOlderVersionIsSkippedWithinItsEpoch(engine: Engine, namespace: String) async throws {
        let (node, stop) = try await BrokerTests.node(engine)
        var client = try await TestClient.connected(node, user: "di")
        let channel = "\(namespace):score"
        _ = try await client.call(.subscribe(SubscribeRequest(channel: channel)))
        func publish(_ n: Int, version: UInt64, epoch: String = "") async throws -> StreamPosition? {
            try await node.publish(
                channel: channel, data: Payload(.int(Int64(n))), publishing: PublishOptions(version: version, versionEpoch: epoch))
        }
        #expect(try await publish(1, version: 5)?.offset == 1)
        #expect(try await publish(2, version: 5)?.offset == 1, "the same version is skipped: the stream's position answers")
        #expect(try await publish(3, version: 4)?.offset == 1, "an older one too")
        #expect(try await publish(4, version: 6)?.offset == 2)
        #expect(try await publish(5, version: 1, epoch: "match-2")?.offset == 3, "another epoch starts the versions over")
        #expect(try await publish(6, version: 1, epoch: "match-2")?.offset == 3)
        #expect(try await publish(7, version: 2)?.offset == 4, "no epoch: compared with the latest version whatever its epoch")
        let received = try await BrokerTests.publications(client, count: 4)
        #expect(received.map(\.data) == [1, 4, 5, 7].map { Payload(.int($0)) })
        await stop()
    }

    /// Versions published at once (one bus batch on PostgreSQL) are decided in their
    /// order, each against the one before it.
    @Test(arguments: engines)
    func versionsPublishedAtOnceAreDecidedInOrder(engine: Engine) async throws {
        let (node, stop) = try await BrokerTests.node(engine)
        var client = try await TestClient.connected(node, user: "ed")
        _ = try await client.call(.subscribe(SubscribeRequest(channel: "room:batch")))
        let versions: [UInt64] = [3, 1, 4, 4, 2, 5]
        let (answers, answered) = AsyncStream.makeStream(of: (Int, Result<StreamPosition?, HubError>).self)
        // Not awaited one by one: every publish is handed to the engine before the first is answered.
        for (index, version) in versions.enumerated() {
            node.publish(channel: "room:batch", data: Payload(.int(Int64(version))), publishing: PublishOptions(version: version)) {
                answered.yield((index, $0))
            }
        }
        var offsets: [Int: UInt64] = [:]
        for await (index, answer) in answers {
            offsets[index] = try answer.get()?.offset
            if offsets.count == versions.count { break }
        }
        let received = try await BrokerTests.publications(client, count: 3)
        #expect(received.map(\.data) == [3, 4, 5].map { Payload(.int($0)) })
        await stop()
    }

    @Test func aVersionWithoutAStreamIsRefused() async throws {
        let (node, stop) = try await BrokerTests.node(.memory)
        await #expect(throws: HubError.badRequest("version needs the channel's stream: skip_history leaves it out")) {
            try await node.publish(channel: "room:v", data: Payload(1), publishing: PublishOptions(skipHistory: true, version: 1))
        }
        await #expect(throws: HubError.badRequest("version needs the channel's stream: the default namespace keeps no history")) {
            try await node.publish(channel: "plain", data: Payload(1), publishing: PublishOptions(version: 1))
        }
        #expect(try await node.publish(channel: "room:v", data: Payload(1), publishing: PublishOptions(version: 1))?.offset == 1)
        await stop()
    }

    /// Two nodes publishing with one key at the same time publish it once: PostgreSQL
    /// claims the key in the bus's transaction, Redis in the shard's script.
    @Test(arguments: [BrokerTests.BrokerEngine.postgres, .redis], ["room:race", "ledger:race", "plain-race"])
    func aKeyUsedByTwoNodesAtOnceIsPublishedOnce(engine: Engine, channel: String) async throws {
        let (nodes, stop) = try await BrokerTests.nodes(engine, count: 2)
        var client = try await TestClient.connected(nodes[0], user: "fay")
        _ = try await client.call(.subscribe(SubscribeRequest(channel: channel)))
        let answers = try await withThrowingTaskGroup(of: StreamPosition?.self) { group in
            for index in 0..<10 {
                group.addTask {
                    try await nodes[index % 2].publish(
                        channel: channel, data: Payload(.int(Int64(index))), publishing: PublishOptions(idempotencyKey: "k"))
                }
            }
            return try await group.reduce(into: [StreamPosition?]()) { $0.append($1) }
        }
        #expect(Set(answers.map { $0?.offset }).count == 1, "every attempt answers the same position: \(answers)")
        // Published after every keyed attempt was answered, so it arrives after any of them.
        try await nodes[1].publish(channel: channel, data: Payload("end"))
        let received = try await BrokerTests.publications(client, count: 2)
        #expect(received.last?.data == Payload("end"), "one keyed publication, then the end: \(received.map(\.data))")
        await stop()
    }

    @Test func idempotentResultsExpireAndStayWithinTheirLimit() {
        let results = IdempotentResults()
        let start = ContinuousClock.now
        let position = StreamPosition(offset: 3, epoch: "e")
        results.remember(position, channel: "a", key: "k", now: start)
        results.remember(nil, channel: "a", key: "plain", now: start)
        #expect(results.result(channel: "a", key: "k", now: start + .seconds(299)) == .some(position))
        #expect(results.result(channel: "a", key: "plain", now: start + .seconds(299)) == .some(nil))
        #expect(results.result(channel: "b", key: "k", now: start) == nil, "keys are per channel")
        #expect(results.result(channel: "a", key: "k", now: start + IdempotentResults.lifetime) == nil, "forgotten after five minutes")
        for n in 0..<(IdempotentResults.limit + 10) { results.remember(position, channel: "c", key: "\(n)", now: start + .seconds(400)) }
        #expect(results.count == IdempotentResults.limit)
        #expect(results.result(channel: "c", key: "0", now: start + .seconds(400)) == nil, "the oldest went first")
        #expect(results.result(channel: "c", key: "\(IdempotentResults.limit + 9)", now: start + .seconds(400)) == .some(position))
    }
}
