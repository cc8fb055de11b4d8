import GondolaTestSupport
import NIOCore
import NIOHPACK
import NIOSSL
import Synchronization
import Testing

@testable import GondolaPush

/// A push service's connection when there is no service: requests fail at once, saying
/// why, and fail after a shutdown without trying again.
@Suite struct ServiceConnectionTests {
    @Test(.timeLimit(.minutes(1))) func aServiceThatCannotBeReachedFailsItsRequestsNamingWhy() async throws {
        let port = TestRedis.freePort()
        let address = try #require(ServiceConnection.Address(baseURL: "http://127.0.0.1:\(port)/prefix/"))
        #expect(address.authority == "127.0.0.1:\(port)" && address.pathPrefix == "/prefix" && address.hostIsAddress)
        let connection = try ServiceConnection(address: address, tls: .makeClientConfiguration())
        // Several batches at once share the one attempt to connect, and each request hears why it failed.
        let outcomes = await withTaskGroup(of: [Result<ServiceAnswer, ServiceAnswer.Unreachable>].self) { group in
            for _ in 0..<3 { group.addTask { await Self.post(3, to: connection) } }
            return await group.reduce(into: []) { $0 += $1 }
        }
        #expect(outcomes.count == 9)
        for outcome in outcomes {
            guard case let .failure(unreachable) = outcome else {
                Issue.record("a request to a closed port was answered")
                continue
            }
            #expect(unreachable.detail.hasPrefix("cannot connect to 127.0.0.1:\(port): "), "\(unreachable.detail)")
        }
        await connection.shutdown()
        guard case let .failure(afterShutdown)? = await Self.post(1, to: connection).first else {
            Issue.record("a request after the shutdown was answered")
            return
        }
        #expect(afterShutdown.detail == "the push sender is shut down")
    }

    /// Posts a batch of `count` requests and returns their answers, in the order they came.
    private static func post(_ count: Int, to connection: ServiceConnection) async -> [Result<ServiceAnswer, ServiceAnswer.Unreachable>] {
        let answers = Mutex<[Result<ServiceAnswer, ServiceAnswer.Unreachable>]>([])
        let posts = (0..<count).map { _ in ServicePost(path: "/send", headers: [], body: ByteBuffer(string: "{}")) }
        await connection.post(posts) { _, answer in answers.withLock { $0.append(answer) } }
        return answers.withLock { $0 }
    }

    /// The fields every APNs request repeats enter the HPACK table; those naming one device or
    /// one notification, and the length, do not (they would push the provider token out of it).
    @Test func fieldsThatDifferPerRequestAreNotIndexed() throws {
        let address = try #require(ServiceConnection.Address(baseURL: APNsCredentials.sandbox))
        let block = ServiceExchangeHandler.headerBlock(
            path: "/3/device/0a1b", headers: [("authorization", "bearer eyJ"), ("apns-topic", "app.gondola"), ("apns-id", "0190-ab")],
            unindexed: APNsSender.perRequestFields, bodyLength: 120, to: address)
        let indexing = Dictionary(uniqueKeysWithValues: block.map { ($0.name, $0.indexable) })
        #expect(indexing[":path"] == .nonIndexable && indexing["apns-id"] == .nonIndexable && indexing["content-length"] == .nonIndexable)
        #expect(indexing["authorization"] == .indexable && indexing["apns-topic"] == .indexable && indexing[":authority"] == .indexable)
        #expect(block.first(name: ":path") == "/3/device/0a1b" && block.first(name: "content-length") == "120")
    }
}
