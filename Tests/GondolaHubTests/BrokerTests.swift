import Foundation
@_spi(Engine) import GondolaCluster
import GondolaProtocol
import GondolaRedis
import GondolaTestSupport
import Logging
import NIOPosix
import Synchronization
import Testing

@_spi(Engine) @testable import GondolaHub

/// The engine seam (`Broker`, `PresenceManager`), one suite for every engine: the
/// memory broker of a node alone, the PostgreSQL cluster link, the Redis link on
/// two Redis servers (shards; each test's channels spread over both), and the Redis link
/// on a master found through Sentinel (`TestSentinel`: a replica and three Sentinels), and the
/// Redis link on a Redis Cluster of three masters (`TestRedisCluster`; four partitions), and the
/// Redis link on Redis alone (two shards, no PostgreSQL: a hub with no domain). Each test
/// drives a node on the engine as clients would, so delivery through `Node.receive` is
/// part of what is checked.
@Suite struct BrokerTests {
    enum BrokerEngine: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case memory, postgres, redis, sentinel, redisCluster, redisAlone
        var testDescription: String { rawValue }
    }

    /// A node on `engine`, and what stops it.
    static func node(_ engine: BrokerEngine, _ adjust: (inout HubConfiguration) -> Void = { _ in }) async throws -> (
        Node, stop: @Sendable () async -> Void
    ) {
        let (nodes, stop) = try await Self.nodes(engine, count: 1, adjust)
        return (nodes[0], stop)
    }

    /// `count` nodes sharing `engine` (one PostgreSQL database, and for Redis two
    /// servers), and what stops them; a node alone (`memory`) only as one. `silent` more
    /// cluster members join the registry and the bus without a node behind them: they
    /// never answer anything.
    static func nodes(
        _ engine: BrokerEngine, count: Int, silent: Int = 0, _ adjust: (inout HubConfiguration) -> Void = { _ in }
    ) async throws -> ([Node], stop: @Sendable () async -> Void) {
        let configuration = testConfiguration { configuration in
            configuration.namespaces["room"]?.historySize = 1_000
            var ledger = NamespaceOptions(name: "ledger")
            ledger.historySize = 100
            ledger.historyTTL = .seconds(3600)
            ledger.historyDurable = true
            ledger.allowSubscribeForClient = true
            configuration.namespaces["ledger"] = ledger
            adjust(&configuration)
        }
        let tokens = try await ConnectionTokens(secret: testSecret)
        switch engine {
        case .memory:
            precondition(count == 1, "a node alone")
            return ([Node(configuration: configuration, tokens: tokens)], {})
        case .postgres, .redis, .sentinel, .redisCluster, .redisAlone:
            let pool = engine == .redisAlone ? nil : try await TestPostgres.freshDatabase { PostgresCluster.register(in: &$0) }
            var logger = Logger(label: "broker-tests")
            logger.logLevel = .warning
            let servers = engine == .redis || engine == .redisAlone ? [try TestRedis(), try TestRedis()] : []
            let sentinel = engine == .sentinel ? try TestSentinel() : nil
            let redisCluster = engine == .redisCluster ? try TestRedisCluster() : nil
            do {
                for server in servers { try await server.start() }
                try await sentinel?.start()
                try await redisCluster?.start()
            } catch {
                for server in servers { try? await server.stop() }
                await sentinel?.stop()
                await redisCluster?.stop()
                throw error
            }
            let redisServers: [RedisServer] =
                if let sentinel { [sentinel.server] } else if let redisCluster {
                    // Four partitions (sixteen by default) keep each test's connections few; the conformance cluster runs sixteen.
                    RedisSlot.evenTags(count: 4).map { .cluster(RedisClusterSlot(seeds: redisCluster.seeds, tag: $0)) }
                } else { servers.map { .address($0.address) } }
            var nodes: [Node] = []
            var running: [Task<Void, Never>] = []
            for index in 0..<(count + silent) {
                let cluster: any ClusterNodeLink =
                    engine != .postgres
                    ? RedisCluster(
                        pool: pool, servers: redisServers, nodeUID: UUID().uuidString.lowercased(),
                        group: MultiThreadedEventLoopGroup.singleton, logger: logger)
                    : PostgresCluster(pool: pool!, nodeUID: UUID().uuidString.lowercased(), logger: logger)
                if index < count { nodes.append(Node(configuration: configuration, tokens: tokens, cluster: cluster)) }
                running.append(Task { await cluster.run() })
                await cluster.ready()
            }
            let tasks = running
            return (
                nodes,
                {
                    for task in tasks { task.cancel() }
                    for task in tasks { await task.value }
                    for server in servers { try? await server.stop() }
                    await sentinel?.stop()
                    await redisCluster?.stop()
                }
            )
        }
    }

    static func publications(_ client: TestClient, count: Int) async throws -> [Publication] {
        var received: [Publication] = []
        while received.count < count {
            if let publication = try await client.next(timeout: .seconds(10)).publication { received.append(publication) }
        }
        return received
    }

    @Test(arguments: BrokerEngine.allCases)
    func publicationsAreStoredNumberedAndDeliveredInOffsetOrder(engine: BrokerEngine) async throws {
        let (node, stop) = try await Self.node(engine)
        var client = try await TestClient.connected(node, user: "ann")
        _ = try await client.call(.subscribe(SubscribeRequest(channel: "room:order")))
        // Four publishers at once: every publication arrives once, in offset order.
        let positions = try await withThrowingTaskGroup(of: [UInt64].self) { group in
            for publisher in 0..<4 {
                group.addTask {
                    var offsets: [UInt64] = []
                    for n in 0..<25 {
                        let position = try await node.publish(
                            channel: "room:order", data: Payload(["p": .int(Int64(publisher)), "n": .int(Int64(n))]))
                        offsets.append(try #require(position).offset)
                    }
                    return offsets
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(positions.sorted() == Array(1...100))
        let received = try await Self.publications(client, count: 100)
        #expect(received.map(\.offset) == Array(1...100))
        let history = try await node.history(channel: "room:order", limit: -1, since: nil, reverse: false)
        #expect(history.publications.map(\.offset) == Array(1...100))
        #expect(history.publications.map(\.data) == received.map(\.data), "the stream holds what was delivered")
        try await node.removeHistory(channel: "room:order")
        #expect(try await node.history(channel: "room:order", limit: -1, since: nil, reverse: false).publications.isEmpty)
        await stop()
    }

    @Test(arguments: BrokerEngine.allCases)
    func aSubscribeWithRecoveryDuringPublishingMissesNothingAndRepeatsNothing(engine: BrokerEngine) async throws {
        let (node, stop) = try await Self.node(engine)
        let epoch = try await node.history(channel: "room:race", limit: 0, since: nil, reverse: false).epoch
        let publisher = Task {
            for n in 1...200 { try await node.publish(channel: "room:race", data: Payload(.int(Int64(n)))) }
        }
        // Subscribe once the stream is under way, then read the rest live.
        while try await node.history(channel: "room:race", limit: 0, since: nil, reverse: false).offset < 20 { await Task.yield() }
        var client = try await TestClient.connected(node, user: "bo")
        let reply = try await client.call(
            .subscribe(SubscribeRequest(channel: "room:race", recover: true, epoch: epoch, offset: 0, recoverable: true)))
        guard case let .subscribe(result) = reply.body else {
            Issue.record("\(reply)")
            return
        }
        #expect(result.recovered)
        try await publisher.value
        let live = try await Self.publications(client, count: 200 - result.publications.count)
        #expect((result.publications + live).map(\.offset) == Array(1...200))
        await stop()
    }

    @Test(arguments: BrokerEngine.allCases)
    func presenceJoinsLeavesAndServerSideUnsubscribes(engine: BrokerEngine) async throws {
        let (node, stop) = try await Self.node(engine)
        var ann = try await TestClient.connected(node, user: "ann")
        _ = try await ann.call(.subscribe(SubscribeRequest(channel: "room:p", joinLeave: true)))
        var bo = try await TestClient.connected(node, user: "bo")
        _ = try await bo.call(.subscribe(SubscribeRequest(channel: "room:p")))
        #expect(await Set(try node.presence(channel: "room:p").values.map(\.user)) == ["ann", "bo"])
        #expect(try await node.presenceStats(channel: "room:p").numUsers == 2)
        var joins: [String] = []
        while joins.count < 2 {
            if case let .push(push) = try await ann.next(timeout: .seconds(10)), case let .join(info) = push.body { joins.append(info.user) }
        }
        #expect(Set(joins) == ["ann", "bo"])
        try await node.unsubscribe(user: "bo", channel: "room:p")
        var unsubscribed = false
        while !unsubscribed {
            if case let .push(push) = try await bo.next(timeout: .seconds(10)), case .unsubscribe = push.body { unsubscribed = true }
        }
        var left: String?
        while left == nil {
            if case let .push(push) = try await ann.next(timeout: .seconds(10)), case let .leave(info) = push.body { left = info.user }
        }
        #expect(left == "bo")
        #expect(try await node.presence(channel: "room:p").values.map(\.user) == ["ann"])
        await stop()
    }

    /// The server API's subscribe crosses the engine (the cluster's bus) with its options' bytes.
    @Test(arguments: BrokerEngine.allCases)
    func serverSideSubscribeReachesTheUsersConnections(engine: BrokerEngine) async throws {
        let (node, stop) = try await Self.node(engine)
        var ann = try await TestClient.connected(node, user: "ann")
        let options = RawJSON(trusted: Array(#"{"info":{"desk" : 1.50},"data":{"hi" : true}}"#.utf8))
        try await node.subscribe(user: "ann", channel: "room:ops", options: options)
        var result: SubscribeResult?
        while result == nil {
            if case let .push(push) = try await ann.next(timeout: .seconds(10)), case let .subscribe(subscribed) = push.body { result = subscribed }
        }
        #expect(result?.data?.bytes == Array(#"{"hi" : true}"#.utf8))
        // Her publication carries the subscription's info, as the bus delivered it back.
        _ = try await ann.call(.publish(channel: "room:ops", data: Payload(RawJSON(["n": 1]))))
        let publication = try #require(try await Self.publications(ann, count: 1).first)
        #expect(publication.info?.chanInfo?.bytes == Array(#"{"desk" : 1.50}"#.utf8))
        await stop()
    }

    /// The server API's unsubscribe and disconnect aimed at one connection (`client`), or
    /// sparing some (`whitelist`), with a code and reason of the caller's: they cross the
    /// engine and reach exactly the connections they name, on whichever node they are.
    @Test(arguments: BrokerEngine.allCases)
    func targetedUnsubscribesAndDisconnectsReachOnlyTheirConnections(engine: BrokerEngine) async throws {
        let (nodes, stop) = try await Self.nodes(engine, count: engine == .memory ? 1 : 2)
        let other = nodes[nodes.count - 1]
        var kept = try await TestClient.connected(nodes[0], user: "ann")
        var aimed = try await TestClient.connected(other, user: "ann")
        var spared = try await TestClient.connected(other, user: "ann")
        _ = try await kept.call(.subscribe(SubscribeRequest(channel: "room:aim")))
        _ = try await aimed.call(.subscribe(SubscribeRequest(channel: "room:aim")))
        _ = try await spared.call(.subscribe(SubscribeRequest(channel: "room:aim")))
        try await nodes[0].unsubscribe(user: "ann", channel: "room:aim", target: ConnectionFilter(client: aimed.session.id))
        var unsubscribed = false
        while !unsubscribed {
            if case let .push(push) = try await aimed.next(timeout: .seconds(10)), case .unsubscribe = push.body { unsubscribed = true }
        }
        try await nodes[0].publish(channel: "room:aim", data: Payload(RawJSON(["n": 1])))
        #expect(try await Self.publications(kept, count: 1).count == 1)
        #expect(try await Self.publications(spared, count: 1).count == 1)
        try await nodes[0].disconnect(
            user: "ann", target: ConnectionFilter(client: aimed.session.id), code: DisconnectCode(code: 4001, reason: "moved to another desk"))
        var afterUnsubscribe: [ServerMessage] = []
        var aimedClose: DisconnectCode?
        while aimedClose == nil {
            do {
                afterUnsubscribe.append(try await aimed.next(timeout: .seconds(10)))
            } catch let closed as Closed {
                aimedClose = closed.code
            }
        }
        #expect(aimedClose == DisconnectCode(code: 4001, reason: "moved to another desk"))
        #expect(afterUnsubscribe.allSatisfy { $0.publication == nil }, "the unsubscribed connection got no publication: \(afterUnsubscribe)")
        try await nodes[0].disconnect(user: "ann", keeping: [kept.session.id])
        #expect(try await spared.closeCode() == .forceDisconnect)
        let reply = try await kept.call(.presenceStats(channel: "room:aim"))
        if case .error = reply.body { Issue.record("the whitelisted connection stays: \(reply)") }
        await stop()
    }

    /// The server API's refresh, aimed at one connection on whichever node it is: a new
    /// end is told with a refresh push and the info changes; `expired` or an end already
    /// past closes with 3005; a user's other connections are untouched.
    @Test(arguments: BrokerEngine.allCases)
    func refreshProlongsOrEndsOnlyTheConnectionsItNames(engine: BrokerEngine) async throws {
        let (nodes, stop) = try await Self.nodes(engine, count: engine == .memory ? 1 : 2)
        let other = nodes[nodes.count - 1]
        var aimed = try await TestClient.connected(other, user: "bea")
        let spared = try await TestClient.connected(nodes[0], user: "bea")
        let end = Date().addingTimeInterval(600)
        let info = try RawJSON(validating: Array(#"{"seat" : 12.50}"#.utf8))
        try await nodes[0].refresh(user: "bea", target: ConnectionFilter(client: aimed.session.id), ConnectionRefresh(expireAt: end, info: info))
        var pushed: Push?
        while pushed == nil {
            if case let .push(push) = try await aimed.next(timeout: .seconds(10)), case .refresh = push.body { pushed = push }
        }
        guard case let .refresh(expires, ttl)? = pushed?.body else { return }
        #expect(expires && (590...600).contains(ttl), "ttl \(ttl)")
        _ = try await aimed.call(.subscribe(SubscribeRequest(channel: "room:seat")))
        let presence = try await other.presence(channel: "room:seat")
        #expect(presence[aimed.session.id]?.connInfo?.bytes == info.bytes, "the new info, byte for byte")

        try await nodes[0].refresh(
            user: "bea", target: ConnectionFilter(client: aimed.session.id), ConnectionRefresh(expireAt: Date().addingTimeInterval(-5)))
        #expect(try await aimed.closeCode() == .expired)
        try await other.refresh(user: "bea", ConnectionRefresh(expired: true))
        #expect(try await spared.closeCode() == .expired)
        await stop()
    }

    /// The server API's `channels` asks every other node over the engine and sums their
    /// subscribers; a member that never answers is named once the survey's timeout is
    /// over, and the others' channels are there all the same.
    @Test(arguments: BrokerEngine.allCases)
    func channelsAreCountedOnEveryNodeAndASilentOneIsNamed(engine: BrokerEngine) async throws {
        let clustered = engine != .memory
        let (nodes, stop) = try await Self.nodes(engine, count: clustered ? 2 : 1, silent: clustered ? 1 : 0) {
            // Long enough that a loaded machine's answering nodes are never late; the silent one is named after it.
            $0.surveyTimeout = .seconds(3)
        }
        var clients: [TestClient] = []
        for (index, node) in nodes.enumerated() {
            for user in ["cy", "dot"] {
                var client = try await TestClient.connected(node, user: user)
                _ = try await client.call(.subscribe(SubscribeRequest(channel: "room:lobby")))
                _ = try await client.call(.subscribe(SubscribeRequest(channel: "room:node-\(index)")))
                clients.append(client)
            }
        }
        let all = try await nodes[0].channels(matching: "")
        var expected = ["room:lobby": 2 * nodes.count]
        for index in nodes.indices { expected["room:node-\(index)"] = 2 }
        #expect(all.counts == expected)
        #expect(all.unanswered.count == (clustered ? 1 : 0), "the silent member: \(all.unanswered)")
        let matching = try await nodes[nodes.count - 1].channels(matching: "room:node-*")
        #expect(matching.counts == expected.filter { $0.key.hasPrefix("room:node-") })
        await stop()
    }

    @Test(arguments: BrokerEngine.allCases)
    func binaryAndSpelledPayloadsPassByteForByte(engine: BrokerEngine) async throws {
        let (node, stop) = try await Self.node(engine)
        var client = try await TestClient.connected(node, user: "ann", encoding: .protobuf)
        _ = try await client.call(.subscribe(SubscribeRequest(channel: "room:bytes")))
        let payloads = [Payload(received: [0x00, 0xFF, 0x0A, 0xC3]), Payload(received: Array(#"{"n": 1.50, "big": 12345678901234567890}"#.utf8))]
        for payload in payloads { try await node.publish(channel: "room:bytes", data: payload) }
        #expect(try await Self.publications(client, count: 2).map(\.data) == payloads)
        #expect(try await node.history(channel: "room:bytes", limit: -1, since: nil, reverse: false).publications.map(\.data) == payloads)
        await stop()
    }

    /// `delta` travels with a publication through the engine: a node delivers as a delta exactly
    /// what another node published with it (a stream's bus message is made of its entry, which
    /// keeps the flag).
    @Test(arguments: [BrokerEngine.postgres, .redis, .sentinel, .redisCluster, .redisAlone])
    func publicationsPublishedWithDeltaGoAsDeltasOnAnotherNode(engine: BrokerEngine) async throws {
        let (nodes, stop) = try await Self.nodes(engine, count: 2) { $0.namespaces["room"]?.allowedDeltaTypes = [.fossil] }
        var client = try await TestClient.connected(nodes[1], user: "ann")
        _ = try await client.call(.subscribe(SubscribeRequest(channel: "room:deltas", delta: "fossil")))
        let frames = DeltaSubscriptionTests.frames(count: 4)
        for (frame, delta) in zip(frames, [true, true, false, true]) {
            try await nodes[0].publish(channel: "room:deltas", data: frame, publishing: PublishOptions(delta: delta))
        }
        let received = try await Self.publications(client, count: 4)
        #expect(received.map(\.delta) == [false, true, false, true])
        #expect(try DeltaSubscriptionTests.rebuild(received, encoding: .json) == frames.map(\.bytes))
        await stop()
    }

    /// A durable namespace keeps its stream where the node keeps data (SQLite alone,
    /// PostgreSQL in a cluster, with Redis carrying only the live bus), beside a volatile
    /// one: each stream numbers its own publications and both reach the subscriber.
    @Test(arguments: BrokerEngine.allCases)
    func durableAndVolatileStreamsSideBySide(engine: BrokerEngine) async throws {
        let (node, stop) = try await Self.node(engine)
        var client = try await TestClient.connected(node, user: "ann")
        for channel in ["ledger:trip", "room:trip"] {
            let reply = try await client.call(.subscribe(SubscribeRequest(channel: channel)))
            guard case .subscribe = reply.body else { throw HarnessError("subscribing to \(channel) answered \(reply)") }
        }
        for n in 1...3 {
            #expect(try await node.publish(channel: "ledger:trip", data: Payload(.int(Int64(n))))?.offset == UInt64(n))
            #expect(try await node.publish(channel: "room:trip", data: Payload(.int(Int64(10 + n))))?.offset == UInt64(n))
        }
        let received = try await Self.publications(client, count: 6)
        #expect(received.filter { $0.data.bytes.count == 1 }.map(\.offset) == [1, 2, 3], "the durable stream's, in order")
        #expect(received.filter { $0.data.bytes.count == 2 }.map(\.offset) == [1, 2, 3], "the volatile stream's, in order")
        let durable = try await node.history(channel: "ledger:trip", limit: -1, since: nil, reverse: false)
        #expect(durable.publications.map(\.data.bytes) == ["1", "2", "3"].map { Array($0.utf8) })
        await stop()
    }

    /// What a node's replica handler applied.
    final class Applied: Sendable {
        let values = Mutex<[Int64]>([])
        func contains(_ value: Int64) -> Bool { values.withLock { $0.contains(value) } }
    }

    /// Regional events (positions) reach only the nodes following their region: the
    /// PostgreSQL bus brings them to every node and the others drop them; on Redis
    /// each region is a Pub/Sub channel that only its followers listen on. The sender
    /// never applies its own.
    @Test(arguments: [BrokerEngine.postgres, .redis, .sentinel, .redisCluster, .redisAlone])
    func regionalEventsReachOnlyTheNodesFollowingTheirRegion(engine: BrokerEngine) async throws {
        let (nodes, stop) = try await Self.nodes(engine, count: 2)
        let applied = [Applied(), Applied()]
        for (node, record) in zip(nodes, applied) {
            var registrations = NodeRegistrations()
            registrations.onReplica(topic: "position", TestReplica.self, effect: "") { replica in
                if case let .int(value)? = replica.json["n"] { record.values.withLock { $0.append(value) } }
            }
            try node.install(registrations, by: "test")
        }
        /// Sends `n` (and again every 20 ms, numbered on) in `region` until the follower
        /// applied one; answers the first it applied.
        func sendUntilApplied(region: String, from n: Int64) async throws -> Int64 {
            var next = n
            var first: Int64?
            try await eventually("an event of \(region) applied", every: .milliseconds(20)) {
                first = applied[1].values.withLock { $0.first { $0 >= n } }
                guard first == nil else { return true }
                nodes[0].replicate(topic: "position", region: region, TestReplica(json: ["n": .int(next)]))
                next += 1
                return false
            }
            return first!
        }
        nodes[1].follow(regions: ["resort:a"])
        _ = try await sendUntilApplied(region: "resort:a", from: 1)
        // An event of another region, then one of the followed region behind it.
        nodes[0].replicate(topic: "position", region: "resort:b", TestReplica(json: ["n": 500]))
        let marker = try await sendUntilApplied(region: "resort:a", from: 600)
        #expect(!applied[1].contains(500), "an event of a region the node does not follow is not applied")
        #expect(applied[1].contains(marker))
        // Following the other region too brings its events.
        nodes[1].follow(regions: ["resort:a", "resort:b"])
        _ = try await sendUntilApplied(region: "resort:b", from: 1_000)
        #expect(applied[0].values.withLock { $0.isEmpty }, "the sender applies none of its own")
        await stop()
    }
}
