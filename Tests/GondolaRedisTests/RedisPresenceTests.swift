import Foundation
@_spi(Engine) import GondolaCluster
@_spi(Engine) import GondolaHub
import GondolaProtocol
import GondolaRedis
import GondolaTestSupport
import Testing

/// Channel presence in a real redis-server: entries with their info byte for byte,
/// removal, expiry of entries nobody refreshed, and a refresh that keeps one.
@Suite(.serialized) struct RedisPresenceTests {
    @Test func entriesRemovalAndExpiry() async throws {
        try await TestRedis.with { redis in
            try await RedisHistoryStoreTests.withStore(redis) { store, client in
                let presence = RedisPresence(redis: client, ttl: .seconds(60))
                let connInfo = try RawJSON(validating: Array(#"{"name": "Ann",  "n":1.50, "big":12345678901234567890}"#.utf8))
                let ann = ClientInfo(user: "ann", client: "c1", connInfo: connInfo, chanInfo: try RawJSON(validating: Array("[1, 2]".utf8)))
                let ben = ClientInfo(user: "ben", client: "c2")
                let start = Date()
                try await presence.addPresence(channel: "room", info: ann, now: start)
                try await presence.addPresence(channel: "room", info: ben, now: start.addingTimeInterval(30))
                let both = try await presence.presence(channel: "room", now: start.addingTimeInterval(1))
                #expect(both == ["c1": ann, "c2": ben])
                #expect(both["c1"]?.connInfo?.bytes == connInfo.bytes)
                // 61 s later Ann's entry expired (nobody added it again); Ben's, added at 30 s, lasts until 90 s.
                #expect(try await presence.presence(channel: "room", now: start.addingTimeInterval(61)) == ["c2": ben])
                try await presence.removePresence(channel: "room", client: "c2")
                #expect(try await presence.presence(channel: "room", now: start.addingTimeInterval(62)).isEmpty)
                #expect(try await presence.presence(channel: "nobody").isEmpty)
            }
        }
    }

    /// What the nodes write and read without an instant is on Redis's clock, not theirs: an entry
    /// lives `ttl` from Redis's `TIME`, so nodes whose clocks disagree agree on it.
    @Test func entriesWithoutAnInstantLiveOnRedissClock() async throws {
        try await TestRedis.with { redis in
            try await RedisHistoryStoreTests.withStore(redis) { store, client in
                let presence = RedisPresence(redis: client, ttl: .seconds(60))
                let ann = ClientInfo(user: "ann", client: "c1")
                try await presence.addPresence(channel: "room", info: ann)
                let time = try await client.send(bytes: [Array("TIME".utf8)])
                let parts = try #require(time.elements?.compactMap(\.string).compactMap(Double.init))
                let redisNow = Date(timeIntervalSince1970: parts[0] + parts[1] / 1_000_000)
                #expect(try await presence.presence(channel: "room") == ["c1": ann])
                #expect(try await presence.presence(channel: "room", now: redisNow.addingTimeInterval(58)) == ["c1": ann])
                #expect(try await presence.presence(channel: "room", now: redisNow.addingTimeInterval(62)).isEmpty)
            }
        }
    }

    @Test func anOutageAnswersNotAvailable() async throws {
        try await TestRedis.with { redis in
            try await RedisHistoryStoreTests.withStore(redis) { store, client in
                let presence = RedisPresence(redis: client)
                try await redis.stop()
                try await eventually { !client.isUp }
                await #expect {
                    try await presence.addPresence(channel: "room", info: ClientInfo(user: "u", client: "c"))
                } throws: { error in
                    guard case let .unavailable(message) = error as? HubError else { return false }
                    return message.hasPrefix("the presence (Redis) is unavailable")
                }
                try await redis.start()
            }
        }
    }
}
