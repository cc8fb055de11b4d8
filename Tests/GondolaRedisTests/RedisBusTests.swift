import Foundation
@_spi(Engine) import GondolaCluster
@_spi(Engine) import GondolaHub
import GondolaProtocol
import GondolaRedis
import GondolaTestSupport
import Logging
import NIOPosix
import Synchronization
import Testing

/// The cluster bus over a real redis-server, between two nodes: every event reaches
/// both in the order its node sent them, large and binary ones whole, and after an
/// outage both say they resumed and the bus carries events again.
@Suite(.serialized) struct RedisBusTests {
    /// What a node's bus delivered, and how often it resumed.
    final class Received: Sendable {
        let events = Mutex<[ClusterEvent]>([])
        let resumptions = Atomic<Int>(0)
    }

    static func bus(_ redis: TestRedis, node: String, keys: RedisKeys = RedisKeys()) async throws -> (RedisBus, Received) {
        let received = Received()
        let bus = RedisBus(
            server: .address(redis.address), group: MultiThreadedEventLoopGroup.singleton, nodeUID: node, keys: keys, logger: Logger(label: "test"))
        try await bus.start(
            deliver: { events in received.events.withLock { $0 += events } },
            listening: { again in if again { received.resumptions.add(1, ordering: .relaxed) } })
        try await eventually { bus.receiving && bus.publisher.isUp }
        return (bus, received)
    }

    /// Two nodes' buses on one server, stopped after `body`.
    static func withTwoNodes(_ body: (TestRedis, (RedisBus, Received), (RedisBus, Received)) async throws -> Void) async throws {
        try await TestRedis.with { redis in
            let a = try await Self.bus(redis, node: "a")
            let b = try await Self.bus(redis, node: "b")
            defer {
                a.0.stop()
                b.0.stop()
            }
            try await body(redis, a, b)
        }
    }

    @Test func eventsReachEveryNodeInOrder() async throws {
        try await Self.withTwoNodes { _, first, second in
            let (a, atA) = first
            let (_, atB) = second
            var sent: [ClusterEvent] = []
            for index in 0..<300 {
                sent.append(
                    .publication(
                        channel: "ch", Publication(offset: UInt64(index + 1), data: Payload(try RawJSON(validating: Array(#"{"i":\#(index)}"#.utf8))))
                    ))
            }
            sent.append(.publication(channel: "bin", Publication(data: Payload(received: [0, 255, 10, 13]))))
            let big = JSON.string(String(repeating: "x", count: 200_000))
            sent.append(.domain(topic: "fleet", origin: "a", payload: ["blob": big]))
            // The server API's targeted events keep their client, whitelist, code and reason.
            sent.append(
                .disconnect(user: "w", code: DisconnectCode(code: 4001, reason: "moved"), keeping: ["c2"], target: ConnectionFilter(client: "c3")))
            sent.append(.unsubscribe(user: "w", channel: "ch", target: ConnectionFilter(client: "c3", session: "s3")))
            sent.append(.unsubscribe(user: "w", channel: "ch"))
            let info = try RawJSON(validating: Array(#"{"seat" : 1.50}"#.utf8))
            sent.append(
                .refresh(
                    user: "w", target: ConnectionFilter(session: "s3"),
                    ConnectionRefresh(expireAt: Date(timeIntervalSince1970: 1_900_000_000), info: info)))
            sent.append(.refresh(user: "w", target: .every, ConnectionRefresh(expired: true)))
            for event in sent { try await a.publish([event]) }
            try await eventually { atB.events.withLock { $0.count } == sent.count && atA.events.withLock { $0.count } == sent.count }
            #expect(atB.events.withLock { $0 } == sent)
            #expect(atA.events.withLock { $0 } == sent)
        }
    }

    @Test func anOutageRefusesPublishesThenTheBusResumes() async throws {
        try await Self.withTwoNodes { redis, first, second in
            let (a, atA) = first
            let (b, atB) = second
            try await redis.stop()
            try await eventually { !a.receiving && !b.receiving && !a.publisher.isUp }
            await #expect {
                try await a.publish([.disconnect(user: "u", code: .forceDisconnect, keeping: [])])
            } throws: { error in
                guard case let .unavailable(message) = error as? HubError else { return false }
                return message.hasPrefix("the cluster bus (Redis) is unavailable")
            }
            try await redis.start()
            // Each bus says it resumed once both its connections are back.
            try await eventually { atA.resumptions.load(ordering: .relaxed) == 1 && atB.resumptions.load(ordering: .relaxed) == 1 }
            #expect(a.receiving && b.receiving && a.publisher.isUp)
            try await a.publish([.disconnect(user: "v", code: .connectionLimit, keeping: ["c1"])])
            try await eventually { atB.events.withLock { $0 } == [.disconnect(user: "v", code: .connectionLimit, keeping: ["c1"])] }
        }
    }

    /// Two clusters under different `redis_prefix`es share one server: each hears only its own
    /// bus, and each keeps its streams and presence under its own names.
    @Test func clustersUnderDifferentPrefixesShareAServerWithoutHearingEachOther() async throws {
        try await TestRedis.with { redis in
            let (east, atEast) = try await Self.bus(redis, node: "e", keys: RedisKeys(prefix: "east"))
            let (west, atWest) = try await Self.bus(redis, node: "w", keys: RedisKeys(prefix: "west"))
            defer {
                east.stop()
                west.stop()
            }
            let eastEvent = ClusterEvent.unsubscribe(user: "u", channel: "news")
            let westEvent = ClusterEvent.unsubscribe(user: "u", channel: "sports")
            try await east.publish([eastEvent])
            // Redis writes both messages to any subscriber in the order it ran the publishes,
            // so once west hears its own, it would have heard east's first.
            try await west.publish([westEvent])
            try await eventually { atWest.events.withLock { $0 } == [westEvent] && atEast.events.withLock { $0 } == [eastEvent] }

            let publication = Publication(data: Payload(received: Array("x".utf8)))
            _ = try await RedisHistoryStore(redis: east, keys: east.keys).append(
                publication, to: "news", options: RedisHistoryStoreTests.options(), now: Date())
            try await RedisPresence(redis: west, keys: west.keys).addPresence(
                channel: "news", info: ClientInfo(user: "u", client: "c", connInfo: nil, chanInfo: nil))
            let names = try await east.publisher.send(["KEYS", "*"]).elements?.compactMap(\.string).sorted()
            #expect(names == ["east:{news}:meta", "east:{news}:stream", "west:{news}:presence", "west:{news}:presence-expiry"])
        }
    }
}
