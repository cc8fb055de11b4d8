import Foundation
@_spi(Engine) import GondolaCluster
@_spi(Engine) import GondolaHub
import GondolaRedis
import GondolaTestSupport
import Testing

/// The node registry in a real redis-server: heartbeats list a node with its
/// figures and uptime, silence for the node timeout hides it, a graceful leave removes it.
@Suite(.serialized) struct RedisNodesTests {
    static func info(_ uid: String, name: String, clients: Int) -> ClusterNodeInfo {
        ClusterNodeInfo(
            uid: uid, name: name, version: "1.0",
            stats: NodeStats(
                clients: clients, users: clients / 2, channels: 3, subscriptions: clients * 2, queuedBytes: 0, uptimeSeconds: 0))
    }

    @Test func heartbeatsTimeoutAndLeave() async throws {
        try await TestRedis.with { redis in
            try await RedisHistoryStoreTests.withStore(redis) { store, client in
                let registry = RedisNodes(redis: client, nodeTimeout: .seconds(5))
                let start = Date()
                try await registry.beat(Self.info("u2", name: "b", clients: 10), startedAt: start, now: start)
                try await registry.beat(Self.info("u1", name: "a", clients: 4), startedAt: start, now: start.addingTimeInterval(3))
                let listed = try await registry.nodes(now: start.addingTimeInterval(4))
                #expect(listed.map(\.uid) == ["u1", "u2"])
                #expect(listed[1].stats == NodeStats(clients: 10, users: 5, channels: 3, subscriptions: 20, queuedBytes: 0, uptimeSeconds: 4))
                // Six seconds after its last heartbeat, u2 is no longer live; u1 (at 3 s) still is.
                #expect(try await registry.nodes(now: start.addingTimeInterval(6)).map(\.uid) == ["u1"])
                try await registry.leave(uid: "u1")
                #expect(try await registry.nodes(now: start.addingTimeInterval(6)).isEmpty)
                // A node that comes back is listed again.
                try await registry.beat(Self.info("u2", name: "b", clients: 1), startedAt: start, now: start.addingTimeInterval(7))
                #expect(try await registry.nodes(now: start.addingTimeInterval(8)).map(\.stats.clients) == [1])
            }
        }
    }
}
