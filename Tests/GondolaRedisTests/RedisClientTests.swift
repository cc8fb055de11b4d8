import Foundation
import GondolaRESP
import GondolaRedis
import GondolaTestSupport
import NIOPosix
import Synchronization
import Testing

/// The Redis client against a real redis-server: commands and binary values,
/// pipelining, error answers, Pub/Sub, and an outage (the server killed and started
/// again) during which commands fail at once and after which subscriptions come back.
@Suite(.serialized) struct RedisClientTests {
    let group = MultiThreadedEventLoopGroup.singleton

    @Test func commandsPipelineAndKeepBytes() async throws {
        try await TestRedis.with { redis in
            try await pipelining(on: redis)
        }
    }

    func pipelining(on redis: TestRedis) async throws {
        let connection = try await RedisConnection.connect(to: redis.address, on: group)
        defer { connection.close() }
        let binary: [UInt8] = [0, 13, 10, 255, 36, 42]
        #expect(try await connection.send(bytes: [Array("SET".utf8), Array("k".utf8), binary]) == .simpleString("OK"))
        #expect(try await connection.send(["GET", "k"]) == .bulkString(binary))
        #expect(try await connection.send(["GET", "missing"]) == .null)
        // 2,000 commands in flight at once: every answer comes back, each to its command.
        let answers = try await withThrowingTaskGroup(of: Int64.self) { tasks in
            for _ in 0..<2_000 { tasks.addTask { try await connection.send(["INCR", "counter"]).integer! } }
            return try await tasks.reduce(into: [Int64]()) { $0.append($1) }
        }
        #expect(Set(answers) == Set(1...2_000))
        await #expect(throws: RedisError.server("ERR unknown command 'NOSUCH', with args beginning with: ")) {
            _ = try await connection.send(["NOSUCH"])
        }
        // After an error answer, the connection goes on.
        #expect(try await connection.send(["PING"]) == .simpleString("PONG"))
    }

    @Test func tooManyWaitingCommandsAreRefused() async throws {
        try await TestRedis.with { redis in try await overload(redis) }
    }

    func overload(_ redis: TestRedis) async throws {
        let connection = try await RedisConnection.connect(to: redis.address, on: group, maxPending: 4)
        defer { connection.close() }
        // A blocking pop holds the connection's answers back (until the observer pushes what it waits
        // for); four more wait behind it, the fifth is refused.
        async let blocked = connection.send(["BLPOP", "nothing", "0"])
        let observer = try await RedisConnection.connect(to: redis.address, on: group)
        defer { observer.close() }
        try await eventually { (try await observer.send(["INFO", "clients"]).string ?? "").contains("blocked_clients:1") }
        let results = await withTaskGroup(of: RedisError?.self) { tasks in
            for _ in 0..<4 {
                tasks.addTask {
                    do throws(RedisError) {
                        _ = try await connection.send(["PING"])
                        return nil
                    } catch {
                        return error
                    }
                }
            }
            var results: [RedisError?] = []
            for await result in tasks {
                results.append(result)
                // The refused one answers at once; the others wait behind the pop until it is released.
                if results.count == 1 { _ = try? await observer.send(["LPUSH", "nothing", "released"]) }
            }
            return results
        }
        #expect(results.first == .some(.overloaded(limit: 4)))
        #expect(results.compactMap { $0 } == [.overloaded(limit: 4)])
        #expect(try await blocked.elements?.last?.string == "released")
    }

    @Test func pubSubAndAnOutage() async throws {
        try await TestRedis.with { redis in try await outage(redis) }
    }

    func outage(_ redis: TestRedis) async throws {
        let received = AsyncStream<[UInt8]>.makeStream()
        let states = AsyncStream<RedisClient.State>.makeStream()
        let subscriber = RedisClient(
            address: redis.address, group: group, maxBackoff: .milliseconds(200),
            stateChanged: { states.continuation.yield($0) },
            messages: { _, payload in received.continuation.yield(payload) })
        let publisher = RedisClient(address: redis.address, group: group, maxBackoff: .milliseconds(200))
        defer {
            subscriber.stop()
            publisher.stop()
        }
        try await subscriber.subscribe(Array("bus".utf8))
        subscriber.start()
        publisher.start()
        var stateEvents = states.stream.makeAsyncIterator()
        #expect(await stateEvents.next() == .up)
        try await eventually { publisher.isUp }
        var messages = received.stream.makeAsyncIterator()
        #expect(try await publishUntilHeard(publisher, "one", &messages) == Array("one".utf8))

        try await redis.stop()
        guard case .down? = await stateEvents.next() else {
            Issue.record("no down state")
            return
        }
        // While Redis is down, a command fails at once: it does not wait for the server, which
        // comes back only after it answered.
        await #expect(throws: RedisError.self) { _ = try await publisher.send(["PING"]) }

        try await redis.start()
        // Attempts that failed while it was down said why (once per reason), then it is back.
        var next = await stateEvents.next()
        while case .down? = next { next = await stateEvents.next() }
        #expect(next == .up)
        try await eventually { publisher.isUp }
        // The subscription came back with the connection.
        #expect(try await publishUntilHeard(publisher, "two", &messages) == Array("two".utf8))
    }

    /// A server that stops answering without closing its socket (SIGSTOP: a partition or a
    /// blackholing firewall looks the same from here) holds no command for good: the waiting
    /// command fails, the client says it is down and why, later commands fail at once naming the
    /// server, and the client is back once the server answers again.
    @Test func aSilentServerFailsWaitingCommandsAndTheClientComesBackWhenItAnswers() async throws {
        try await TestRedis.with { redis in
            let states = AsyncStream<RedisClient.State>.makeStream()
            let client = RedisClient(
                address: redis.address, group: group, maxBackoff: .milliseconds(200), stateChanged: { states.continuation.yield($0) })
            defer { client.stop() }
            client.start()
            var stateEvents = states.stream.makeAsyncIterator()
            #expect(await stateEvents.next() == .up)
            redis.pause()
            defer { redis.resume() }
            // The command was written to a server that takes bytes and answers nothing.
            await #expect(throws: RedisError.self) { _ = try await client.send(["PING"]) }
            guard case let .down(reason)? = await stateEvents.next() else {
                Issue.record("no down state")
                return
            }
            #expect(reason.contains("no answer within"), "\(reason)")
            do throws(RedisError) {
                _ = try await client.send(["PING"])
                Issue.record("a command went through to a silent server")
            } catch let .unavailable(why) {
                #expect(why.contains("127.0.0.1:\(redis.port)"), "\(why)")
            } catch {
                Issue.record("not unavailable: \(error)")
            }
            redis.resume()
            try await eventually("the client is back") { (try? await client.send(["PING"])) == .simpleString("PONG") }
        }
    }

    /// A client that cannot get its first connection says why within a few attempts, without
    /// the password: a wrong password, and a server certificate its CA does not trust.
    @Test func aConnectionThatNeverComesUpSaysWhy() async throws {
        try await TestRedis.with { redis in
            let otherCA = try TestCertificates()
            let wrongPassword = RedisAddress(host: "127.0.0.1", port: redis.port, password: "not-the-password", tls: redis.address.tls)
            var untrusted = redis.address
            untrusted.tls?.caFile = otherCA.caFile
            for (address, expected) in [(wrongPassword, "WRONGPASS"), (untrusted, "certificate is not trusted")] {
                let states = AsyncStream<RedisClient.State>.makeStream()
                let client = RedisClient(
                    address: address, group: group, maxBackoff: .milliseconds(100), stateChanged: { states.continuation.yield($0) })
                defer { client.stop() }
                client.start()
                var stateEvents = states.stream.makeAsyncIterator()
                guard case let .down(reason)? = await stateEvents.next() else {
                    Issue.record("no down state for \(expected)")
                    continue
                }
                #expect(reason.contains(expected), "\(reason)")
                #expect(!reason.contains("not-the-password") && !reason.contains(TestRedis.password), "\(reason)")
                do throws(RedisError) {
                    _ = try await client.send(["PING"])
                    Issue.record("a command went through")
                } catch let .unavailable(why) {
                    #expect(why.contains("127.0.0.1:\(redis.port)") && why.contains(expected), "\(why)")
                } catch {
                    Issue.record("not unavailable: \(error)")
                }
            }
        }
    }

    /// Publishes until a subscriber counts (PUBLISH answers how many heard it), then reads the delivery.
    func publishUntilHeard(
        _ publisher: RedisClient, _ text: String,
        _ messages: inout AsyncStream<[UInt8]>.Iterator
    ) async throws -> [UInt8]? {
        try await eventually { (try? await publisher.send(["PUBSUB", "NUMSUB", "bus"]))?.elements?.last?.integer == 1 }
        #expect(try await publisher.send(["PUBLISH", "bus", text]).integer == 1)
        return await messages.next()
    }
}
