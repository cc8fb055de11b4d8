import Foundation
@_spi(Engine) import GondolaHub
import GondolaProtocol
import GondolaRedis
import GondolaTestSupport
import Logging
import NIOPosix
import Testing

@_spi(Engine) @testable import GondolaCluster

/// Redis Cluster (three masters; `TestRedisCluster`): slots as Redis computes them, partition
/// tags spread over the slot ranges, a client that follows its slot when it moves to another
/// master (`ASK` during the move, `MOVED` after it), and the cluster bus on a shard channel
/// that follows its slot too.
@Suite(.serialized) struct RedisClusterTests {
    let group = MultiThreadedEventLoopGroup.singleton

    @Test func slotsAreThoseOfRedisClusterSpecification() {
        // The specification's check value: CRC16/XMODEM of "123456789" is 0x31C3.
        #expect(RedisSlot.of("123456789") == 0x31C3)
        #expect(RedisSlot.of("{user1000}.following") == RedisSlot.of("user1000"))
        #expect(RedisSlot.of("foo{}{bar}") != RedisSlot.of("bar"))  // an empty tag: the whole key is hashed
        #expect(RedisSlot.of("foo{{bar}}zap") == RedisSlot.of("{bar"))
        #expect(RedisSlot.of("foo{bar}{zap}") == RedisSlot.of("bar"))
    }

    @Test(arguments: [1, 3, 16, 1_024]) func partitionTagsFallInEvenRangesOfSlots(count: Int) {
        let tags = RedisSlot.evenTags(count: count)
        #expect(tags.count == count)
        for (index, tag) in tags.enumerated() {
            #expect(RedisSlot.of("{\(tag)}") * count / RedisSlot.count == index, "tag \(tag)")
        }
    }

    @Test func aClientFollowsItsSlotToAnotherMaster() async throws {
        try await TestRedisCluster.with { cluster in
            let slot = RedisClusterSlot(seeds: cluster.seeds, tag: "7")
            let client = RedisClient(server: .cluster(slot), group: group, maxBackoff: .milliseconds(200))
            client.start()
            defer { client.stop() }
            try await eventually { client.isUp }
            let key = "gondola:{7}:counter"
            #expect(try await client.send(["INCR", key]).integer == 1)
            let source = try await cluster.owner(of: slot.slot)
            let target = try #require(cluster.masters.first { $0 !== source })
            try await cluster.moveSlot(slot.slot, to: target) {
                // The key went ahead of its slot: the old master answers ASK, and the client asks the new one.
                try await cluster.migrate([key], of: slot.slot, to: target)
                #expect(try await client.send(["INCR", key]).integer == 2)
            }
            // The slot has moved: the old master answers MOVED, which fails the command as a
            // temporary error, and the client reconnects to the new master.
            await #expect {
                _ = try await client.send(["INCR", key])
            } throws: { error in
                guard case let .unavailable(reason) = error as? RedisError else { return false }
                return reason.contains("MOVED \(slot.slot) 127.0.0.1:\(target.port)")
            }
            try await eventually("the client on the slot's new master") { (try? await client.send(["INCR", key]))?.integer == 3 }
        }
    }

    @Test func theClusterBusFollowsItsShardChannelToAnotherMaster() async throws {
        try await TestRedisCluster.with { cluster in
            let server = RedisServer.cluster(RedisClusterSlot(seeds: cluster.seeds, tag: "7"))
            let logger = Logger(label: "test")
            let received = RedisBusTests.Received()
            let listener = RedisBus(server: server, group: group, nodeUID: "b", logger: logger)
            try await listener.start(
                deliver: { events in received.events.withLock { $0 += events } },
                listening: { again in if again { received.resumptions.add(1, ordering: .relaxed) } })
            let speaker = RedisBus(server: server, group: group, nodeUID: "a", logger: logger)
            try await speaker.start(deliver: { _ in }, listening: { _ in })
            defer {
                listener.stop()
                speaker.stop()
            }
            #expect(listener.keys.bus == Array("gondola:{7}:bus".utf8))
            try await eventually { listener.receiving && speaker.publisher.isUp }
            // A stream's append publishes on the shard channel from its script, in the same slot.
            let streams = RedisHistoryStore(redis: speaker, keys: speaker.keys)
            let header = BinaryBusMessage.header(node: "a", sequence: 1)
            _ = try await streams.append(
                RedisHistoryStoreTests.publication(#"{"n":1}"#), to: "room", options: RedisHistoryStoreTests.options(), now: Date(),
                announcing: .init(busChannel: speaker.keys.bus, header: header))
            try await eventually { received.events.withLock { $0.count } == 1 }

            let source = try await cluster.owner(of: RedisSlot.of("{7}"))
            try await cluster.moveSlot(RedisSlot.of("{7}"), to: try #require(cluster.masters.first { $0 !== source }))
            // The old master ends the listener's subscription; the listener subscribes on the new
            // master and says it resumed (its node's clients recover what the move hid).
            let moved = ClusterEvent.unsubscribe(user: "u", channel: "after")
            try await eventually("a bus message heard after the move", within: .seconds(30), every: .milliseconds(50)) {
                _ = try? await speaker.publish([moved])
                return received.events.withLock { $0.last } == moved
            }
            // Its publisher connection may come back after the subscriber heard the message, and
            // each connection that comes back on its own says so again: at least once, then.
            try await eventually("the listener's resumption") { received.resumptions.load(ordering: .relaxed) >= 1 }
            // The stream moved with its slot, whole.
            let slice = try await streams.read(
                channel: "room", after: nil, limit: -1, reverse: false, options: RedisHistoryStoreTests.options(), now: Date())
            #expect(slice.publications.map(\.offset) == [1])
        }
    }
}
