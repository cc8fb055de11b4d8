import Foundation
@_spi(Engine) import GondolaCluster
@_spi(Engine) import GondolaHub
import GondolaProtocol
import GondolaRedis
import GondolaTestSupport
import Logging
import NIOPosix
import Testing

/// Redis behind Sentinel (a master, a replica, three Sentinels; `TestSentinel`): the client
/// finds the master by its name, follows a failover after the master is killed (its streams
/// kept, in a new epoch) and one ordered
/// by the Sentinels while the old master still runs as a master, and the cluster bus resumes on the new
/// master; a name no Sentinel knows answers `unavailable` naming it.
@Suite(.serialized) struct RedisSentinelTests {
    let group = MultiThreadedEventLoopGroup.singleton

    /// The port of the server `client` is connected to (its TLS port).
    static func port(of client: RedisClient) async throws -> Int? {
        let answer = try await client.send(["CONFIG", "GET", "tls-port"])
        if case let .map(pairs) = answer { return pairs.first?.value.integer.map(Int.init) }
        return answer.elements?.last?.integer.map(Int.init)
    }

    @Test func theClientFindsTheMasterAndFollowsItsFailoverAfterAKill() async throws {
        try await TestSentinel.with { sentinel in
            let client = RedisClient(server: sentinel.server, group: group, maxBackoff: .milliseconds(200))
            client.start()
            defer { client.stop() }
            try await eventually { client.isUp }
            #expect(try await Self.port(of: client) == sentinel.master.port)
            _ = try await client.send(["SET", "before", "kept"])
            let streams = RedisHistoryStore(redis: client)
            let options = RedisHistoryStoreTests.options()
            let (_, position) = try await streams.append(RedisHistoryStoreTests.publication(#"{"n":1}"#), to: "ch", options: options, now: Date())
            // The replica has it before the master dies (WAIT: one replica acknowledged).
            #expect(try await client.send(["WAIT", "1", "5000"]).integer == 1)

            try await sentinel.master.stop()
            let killed = ContinuousClock.now
            try await eventually("a write accepted after the failover", within: .seconds(60), every: .milliseconds(50)) {
                (try? await client.send(["SET", "after", "written"])) != nil
            }
            print("Sentinel failover: writes accepted again \(ContinuousClock.now - killed) after kill -9 of the master")
            #expect(try await Self.port(of: client) == sentinel.replica.port)
            #expect(try await client.send(["GET", "before"]).string == "kept")
            // The stream is there, in a new epoch: the new master cannot know whether it lacks
            // entries the old one acknowledged, so recovering clients are told they cannot recover.
            let after = try await streams.read(channel: "ch", after: nil, limit: -1, reverse: false, options: options, now: Date())
            #expect(after.publications.map(\.offset) == [1] && after.position.offset == position.offset)
            #expect(after.position.epoch != position.epoch)
            let (_, next) = try await streams.append(RedisHistoryStoreTests.publication(#"{"n":2}"#), to: "ch", options: options, now: Date())
            #expect(next == StreamPosition(offset: 2, epoch: after.position.epoch))
        }
    }

    @Test func anOrderedFailoverMovesTheClientOffAnOldMasterThatStaysMaster() async throws {
        // The Sentinels cannot demote this master (no REPLICAOF), nor close its clients (they do
        // that in the same transaction): it goes on accepting writes, as one cut off from the
        // Sentinels would. Only their +switch-master tells the client to move.
        try await TestSentinel.with(masterArguments: ["--rename-command", "REPLICAOF", "", "--rename-command", "SLAVEOF", ""]) { sentinel in
            let client = RedisClient(server: sentinel.server, group: group, maxBackoff: .milliseconds(200))
            client.start()
            defer { client.stop() }
            try await eventually { client.isUp }
            #expect(try await Self.port(of: client) == sentinel.master.port)
            _ = try await sentinel.answer(sentinel.sentinels[0], ["SENTINEL", "FAILOVER", TestSentinel.masterName])
            try await eventually("the client on the new master", within: .seconds(60), every: .milliseconds(50)) {
                (try? await Self.port(of: client)) == sentinel.replica.port
            }
            _ = try await client.send(["SET", "k", "v"])
            #expect(try await sentinel.answer(sentinel.master.address, ["ROLE"]).hasPrefix("master"))
        }
    }

    @Test func theClusterBusResumesOnTheNewMaster() async throws {
        try await TestSentinel.with { sentinel in
            let logger = Logger(label: "test")
            let received = RedisBusTests.Received()
            let listener = RedisBus(server: sentinel.server, group: group, nodeUID: "b", logger: logger)
            try await listener.start(
                deliver: { events in received.events.withLock { $0 += events } },
                listening: { again in if again { received.resumptions.add(1, ordering: .relaxed) } })
            let speaker = RedisBus(server: sentinel.server, group: group, nodeUID: "a", logger: logger)
            try await speaker.start(deliver: { _ in }, listening: { _ in })
            defer {
                listener.stop()
                speaker.stop()
            }
            try await eventually { listener.receiving && speaker.publisher.isUp }
            let first = ClusterEvent.unsubscribe(user: "u", channel: "before")
            try await speaker.publish([first])
            try await eventually { received.events.withLock { $0 } == [first] }

            try await sentinel.master.stop()
            let killed = ContinuousClock.now
            let second = ClusterEvent.unsubscribe(user: "u", channel: "after")
            // Pub/Sub keeps nothing: a message published before the listener subscribed on the new
            // master is lost (the node's clients recover it from the streams), so the speaker repeats it.
            try await eventually("a bus message heard after the failover", within: .seconds(60), every: .milliseconds(50)) {
                _ = try? await speaker.publish([second])
                return received.events.withLock { $0.last } == second
            }
            print("Sentinel failover: the bus carried a message again \(ContinuousClock.now - killed) after kill -9 of the master")
            // The listener says it resumed, so that the node has its clients recover what the gap hid, once
            // its publisher connection is back too (which may be after its subscriber heard the message).
            // Each connection may come back on its own (the subscriber before the publisher noticed its
            // loss), and each return with both up says so again: at least once, then.
            try await eventually("the listener's resumption") { received.resumptions.load(ordering: .relaxed) >= 1 }
        }
    }

    @Test func aMasterNoSentinelKnowsIsUnavailableByName() async throws {
        try await TestSentinel.with { sentinel in
            let unknown = RedisSentinel(
                sentinels: sentinel.sentinels + [RedisAddress(host: "127.0.0.1", port: TestRedis.freePort())],
                master: RedisAddress(host: "no-such-master", port: 6379))
            await #expect {
                _ = try await unknown.resolve(on: group)
            } throws: { error in
                guard case let .unavailable(reason) = error as? RedisError else { return false }
                return reason.contains("no Sentinel names the master 'no-such-master'") && reason.contains("does not know a master named")
                    && reason.contains("cannot connect")
            }
        }
    }
}
