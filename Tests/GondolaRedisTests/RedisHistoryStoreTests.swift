import Foundation
@_spi(Engine) import GondolaCluster
@_spi(Engine) import GondolaHub
import GondolaProtocol
import GondolaRedis
import GondolaTestSupport
import NIOPosix
import Testing

/// Channel streams in a real redis-server: offsets and one epoch, reads forward and
/// backward, size and TTL, removal, bytes kept, appends from two clients, and an outage.
@Suite(.serialized) struct RedisHistoryStoreTests {
    static func options(size: Int = 100, ttl: Duration = .seconds(300)) -> NamespaceOptions {
        var options = NamespaceOptions(name: "test")
        options.historySize = size
        options.historyTTL = ttl
        return options
    }

    static func publication(_ text: String) throws -> Publication {
        Publication(data: Payload(try RawJSON(validating: Array(text.utf8))))
    }

    /// A started client on `redis`, stopped after `body`.
    static func withStore(_ redis: TestRedis, _ body: (RedisHistoryStore, RedisClient) async throws -> Void) async throws {
        let client = RedisClient(address: redis.address, group: MultiThreadedEventLoopGroup.singleton, maxBackoff: .milliseconds(100))
        client.start()
        defer { client.stop() }
        try await eventually { client.isUp }
        try await body(RedisHistoryStore(redis: client), client)
    }

    @Test func offsetsEpochAndReads() async throws {
        try await TestRedis.with { redis in
            try await Self.withStore(redis) { store, client in
                let options = Self.options(size: 3)
                let now = Date()
                var positions: [StreamPosition] = []
                for index in 1...5 {
                    positions.append(try await store.append(Self.publication(#"{"n":\#(index)}"#), to: "ch", options: options, now: now).1)
                }
                #expect(positions.map(\.offset) == [1, 2, 3, 4, 5] && Set(positions.map(\.epoch)).count == 1)
                // Trimmed to the last 3; read forward, after an offset, backward, and for the position only.
                let all = try await store.read(channel: "ch", after: nil, limit: -1, reverse: false, options: options, now: now)
                #expect(all.publications.map(\.offset) == [3, 4, 5] && all.position == positions[4])
                #expect(all.publications.map { String(decoding: $0.data.bytes, as: UTF8.self) } == [#"{"n":3}"#, #"{"n":4}"#, #"{"n":5}"#])
                #expect(
                    try await store.read(channel: "ch", after: 3, limit: 1, reverse: false, options: options, now: now).publications.map(\.offset)
                        == [4])
                #expect(
                    try await store.read(channel: "ch", after: nil, limit: 2, reverse: true, options: options, now: now).publications.map(\.offset)
                        == [5, 4])
                let position = try await store.read(channel: "ch", after: nil, limit: 0, reverse: false, options: options, now: now)
                #expect(position.publications.isEmpty && position.position == positions[4])
                // A stream nobody published to has offset 0 and an epoch that stays.
                let empty = try await store.read(channel: "quiet", after: nil, limit: 10, reverse: false, options: options, now: now)
                #expect(empty.position.offset == 0)
                #expect(
                    try await store.read(channel: "quiet", after: nil, limit: 0, reverse: false, options: options, now: now).position
                        == empty.position)
            }
        }
    }

    /// The offset and epoch expire the namespace's `history_meta_ttl` after the last
    /// publication, long after the publications themselves.
    @Test func theStreamPositionLastsItsMetaTTL() async throws {
        try await TestRedis.with { redis in
            try await Self.withStore(redis) { store, client in
                var options = Self.options(ttl: .seconds(60))
                options.historyMetaTTL = .seconds(7 * 86_400)
                _ = try await store.append(Self.publication("{}"), to: "quiet", options: options, now: Date())
                let ttl = try await client.send(["TTL", "gondola:{quiet}:meta"]).integer ?? -2
                #expect(ttl > 6 * 86_400 && ttl <= 7 * 86_400, "\(ttl)")
            }
        }
    }

    @Test func ttlRemovalAndBytes() async throws {
        try await TestRedis.with { redis in
            try await Self.withStore(redis) { store, client in
                let options = Self.options(ttl: .seconds(10))
                let start = Date()
                _ = try await store.append(
                    Self.publication(#"{"big":12345678901234567890123,"s":"\u00e9","f":1.50}"#), to: "t", options: options, now: start)
                let binary: [UInt8] = [0, 255, 13, 10, 0x7B]
                _ = try await store.append(Publication(data: Payload(received: binary)), to: "t", options: options, now: start.addingTimeInterval(8))
                let read = try await store.read(
                    channel: "t", after: nil, limit: 10, reverse: false, options: options, now: start.addingTimeInterval(9))
                #expect(read.publications.map(\.data.bytes) == [Array(#"{"big":12345678901234567890123,"s":"\u00e9","f":1.50}"#.utf8), binary])
                // 12 s after the first publication only the second is within the TTL, forward and backward.
                let later = start.addingTimeInterval(12)
                #expect(
                    try await store.read(channel: "t", after: nil, limit: 10, reverse: false, options: options, now: later).publications.map(\.offset)
                        == [2])
                #expect(
                    try await store.read(channel: "t", after: nil, limit: 10, reverse: true, options: options, now: later).publications.map(\.offset)
                        == [2])
                // Removing the history keeps the offset and the epoch.
                try await store.removeHistory(channel: "t")
                let removed = try await store.read(channel: "t", after: nil, limit: 10, reverse: false, options: options, now: later)
                #expect(removed.publications.isEmpty && removed.position.offset == 2 && removed.position.epoch == read.position.epoch)
                #expect(try await store.append(Self.publication("3"), to: "t", options: options, now: later).1.offset == 3)
            }
        }
    }

    @Test func twoClientsAppendWithoutSharingAnOffset() async throws {
        try await TestRedis.with { redis in
            try await Self.withStore(redis) { first, _ in
                try await Self.withStore(redis) { second, _ in
                    let options = Self.options(size: 1000)
                    let offsets = try await withThrowingTaskGroup(of: UInt64.self) { tasks in
                        for index in 0..<400 {
                            let store = index % 2 == 0 ? first : second
                            tasks.addTask {
                                try await store.append(Self.publication("\(index)"), to: "shared", options: options, now: Date()).1.offset
                            }
                        }
                        return try await tasks.reduce(into: [UInt64]()) { $0.append($1) }
                    }
                    #expect(Set(offsets) == Set(1...400))
                }
            }
        }
    }

    @Test func anOutageAnswersNotAvailableAndTheScriptComesBack() async throws {
        try await TestRedis.with { redis in
            try await Self.withStore(redis) { store, client in
                let options = Self.options()
                let before = try await store.append(Self.publication("1"), to: "o", options: options, now: Date()).1
                try await redis.stop()
                try await eventually { !client.isUp }
                // Answered while the server is still down: the append does not wait for it.
                await #expect {
                    _ = try await store.append(Self.publication("2"), to: "o", options: options, now: Date())
                } throws: { error in
                    guard case let .unavailable(message) = error as? HubError else { return false }
                    return message.hasPrefix("the stream store (Redis) is unavailable")
                }
                // The server comes back empty (no persistence here): the script is loaded again, and the stream starts a new epoch.
                try await redis.start()
                try await eventually { client.isUp }
                let after = try await store.append(Self.publication("3"), to: "o", options: options, now: Date()).1
                #expect(after.offset == 1 && after.epoch != before.epoch)
            }
        }
    }
}
