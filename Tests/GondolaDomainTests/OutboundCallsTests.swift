import Foundation
import GondolaProtocol
import GondolaStore
import GondolaTestSupport
import Logging
import Synchronization
import Testing

@testable import GondolaDomain

/// The durable queue of outbound calls on both engines: calls waiting when a process stops are
/// made by the next one, a call claimed by a worker that stopped mid-attempt is made once its
/// claim lapses, a failing call is retried then given up, the queue refuses past its limit, and
/// two workers on one queue never make one call twice.
@Suite struct OutboundCallsTests {
    /// Attempts a few milliseconds apart, so that a test waits only for its events.
    static let quick = OutboundCalls.Policy(timeout: .seconds(5), maxAttempts: 3, retryBase: .milliseconds(5), retryCap: .milliseconds(20))

    static func store(_ engine: Engine) async throws -> any OutboundCallStore {
        switch engine {
        case .sqlite:
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-calls-\(UUID().uuidString)/db.sqlite").path
            return SQLiteOutboundCallStore(database: try GondolaDatabase(path: path))
        case .postgres:
            return PostgresOutboundCallStore(pool: try await TestPostgres.freshDatabase())
        }
    }

    /// A service that refuses while `down`, and records each call it took and each attempt.
    final class Service: Sendable {
        let down: Atomic<Bool>
        let taken = Mutex<[JSON]>([])
        let attempts = Atomic<Int>(0)

        init(down: Bool) { self.down = Atomic(down) }

        func call(_ payload: JSON) async throws {
            attempts.wrappingAdd(1, ordering: .relaxed)
            guard !down.load(ordering: .relaxed) else { throw Refused() }
            taken.withLock { $0.append(payload) }
        }

        var takenNumbers: [Int64] {
            taken.withLock { $0.compactMap { if case let .int(n)? = $0["n"] { n } else { nil } } }.sorted()
        }

        struct Refused: Error {}
    }

    static func queue(on store: any OutboundCallStore, _ service: Service, policy: OutboundCalls.Policy = quick) -> OutboundCalls {
        OutboundCalls(service: "sms", store: store, policy: policy, logger: Logger(label: "outbound-calls-test")) { try await service.call($0) }
    }

    /// A queue on fresh storage holding one call to a service that is `down` or not.
    static func oneCall(_ engine: Engine, down: Bool) async throws -> (any OutboundCallStore, Service, OutboundCalls) {
        let store = try await Self.store(engine)
        let service = Service(down: down)
        let calls = Self.queue(on: store, service)
        #expect(await calls.submit("text", ["n": 7]))
        return (store, service, calls)
    }

    /// An hour, the step of the rounds the tests run at times of their choosing (`makeDue(now:)`),
    /// past any back-off or claim.
    static let hour: Int64 = 3_600_000

    @Test(arguments: Engine.allCases)
    func callsWaitingAtAStopAreMadeByTheNextProcess(engine: Engine) async throws {
        let store = try await Self.store(engine)
        let down = Service(down: true)
        let first = Self.queue(on: store, down)
        for n in 1...3 { #expect(await first.submit("text \(n)", ["n": .int(Int64(n))])) }
        #expect(await first.makeDue() == 0)
        #expect(down.attempts.load(ordering: .relaxed) == 3, "each call tried once, and kept for its next attempt")
        // The next process: a new queue on the same storage, the service back.
        let up = Service(down: false)
        let second = Self.queue(on: store, up)
        let later = unixMilliseconds() + Self.hour
        #expect(await second.makeDue(now: later) == 3)
        #expect(up.takenNumbers == [1, 2, 3])
        #expect(await second.makeDue(now: later + Self.hour) == 0 && up.takenNumbers == [1, 2, 3], "each call made once, then forgotten")
    }

    @Test(arguments: Engine.allCases)
    func aCallClaimedByAWorkerThatStoppedIsMadeOnceItsClaimLapses(engine: Engine) async throws {
        let (store, service, calls) = try await Self.oneCall(engine, down: false)
        // A worker claimed it for a minute and stopped before answering.
        let claimedAt = unixMilliseconds()
        let claimed = try await store.claimDue(service: "sms", now: claimedAt, limit: 10, lease: 60_000)
        #expect(claimed.map(\.label) == ["text"])
        #expect(await calls.makeDue(now: claimedAt + 59_999) == 0, "not while the claim holds")
        #expect(await calls.makeDue(now: claimedAt + 60_000) == 1, "made once it lapsed")
        #expect(service.takenNumbers == [7])
    }

    @Test(arguments: Engine.allCases)
    func aFailingCallIsRetriedThenGivenUp(engine: Engine) async throws {
        let (store, service, calls) = try await Self.oneCall(engine, down: true)
        var now = unixMilliseconds()
        for attempt in 1...3 {
            #expect(await calls.makeDue(now: now) == 0)
            #expect(service.attempts.load(ordering: .relaxed) == attempt, "one attempt a round")
            #expect(await calls.makeDue(now: now) == 0 && service.attempts.load(ordering: .relaxed) == attempt, "none before its back-off")
            now += Self.hour
        }
        let far = now + 86_400_000
        #expect(try await store.claimDue(service: "sms", now: far, limit: 10, lease: 1).isEmpty, "given up and forgotten")
        #expect(service.attempts.load(ordering: .relaxed) == 3)
    }

    @Test(arguments: Engine.allCases)
    func theQueueRefusesPastItsLimitAndKeepsServicesApart(engine: Engine) async throws {
        let store = try await Self.store(engine)
        var policy = Self.quick
        policy.maxPending = 2
        let calls = Self.queue(on: store, Service(down: true), policy: policy)
        #expect(await calls.submit("a", ["n": 1]))
        #expect(await calls.submit("b", ["n": 2]))
        #expect(await calls.submit("c", ["n": 3]) == false)
        let now = unixMilliseconds()
        #expect(
            try await store.enqueue(service: "telegram", id: "call-t", label: "t", payload: [:], now: now, limit: 2), "another service's own limit")
        #expect(try await store.claimDue(service: "sms", now: now, limit: 10, lease: 1).count == 2)
        await #expect(throws: OutboundCallStoreError.self) { try await store.claimDue(service: "sms' OR '1'='1", now: now, limit: 1, lease: 1) }
    }

    @Test(arguments: Engine.allCases)
    func twoWorkersNeverMakeOneCallTwice(engine: Engine) async throws {
        let store = try await Self.store(engine)
        let service = Service(down: false)
        let (one, two) = (Self.queue(on: store, service), Self.queue(on: store, service))
        for n in 1...40 { #expect(await one.submit("text \(n)", ["n": .int(Int64(n))])) }
        async let made1 = one.makeDue()
        async let made2 = two.makeDue()
        let made = await made1 + made2
        #expect(made == 40)
        #expect(service.takenNumbers == (1...40).map(Int64.init), "each call made by one worker")
    }
}
