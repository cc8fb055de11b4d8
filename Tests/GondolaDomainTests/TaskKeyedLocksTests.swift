import GondolaDomain
import GondolaHub
import Synchronization
import Testing

/// The in-process keyed locks a domain waits on as a task: one holder per key, first come
/// first served, other keys free, and a refusal once too many wait.
@Suite struct TaskKeyedLocksTests {
    /// Who entered the lock, in order.
    final class Entries: Sendable {
        private let entries = Mutex<[Int]>([])
        func add(_ entry: Int) { entries.withLock { $0.append(entry) } }
        var all: [Int] { entries.withLock { $0 } }
    }

    @Test(.timeLimit(.minutes(1))) func holdersOfOneKeyTakeTurnsInOrderWhileAnotherKeyIsFree() async throws {
        let locks = TaskKeyedLocks()
        let order = Entries()
        let (entered, enteredContinuation) = AsyncStream.makeStream(of: Void.self)
        let (release, releaseContinuation) = AsyncStream.makeStream(of: Void.self)
        // The first holder stays inside until the test lets it go.
        let first = Task {
            try await locks.withLock("doc") { () throws(HubError) in
                order.add(0)
                enteredContinuation.yield()
                for await _ in release { break }
            }
        }
        var enteredIterator = entered.makeAsyncIterator()
        await enteredIterator.next()
        // Waiters queue up one at a time, so their order is the order they asked in.
        var waiters: [Task<Void, any Error>] = []
        for index in 1...3 {
            waiters.append(
                Task {
                    try await locks.withLock("doc") { () throws(HubError) in order.add(index) }
                })
            while locks.waitingCount < index { await Task.yield() }
        }
        let other = try await locks.withLock("other doc") { () throws(HubError) in 42 }
        #expect(other == 42, "another key does not wait for the held one")
        #expect(order.all == [0], "nobody entered the held key")
        releaseContinuation.yield()
        try await first.value
        for waiter in waiters { try await waiter.value }
        #expect(order.all == [0, 1, 2, 3])
        #expect(locks.waitingCount == 0)
    }

    @Test(.timeLimit(.minutes(1))) func aCallerPastTheWaitingLimitIsRefusedAndTheOthersStillRun() async throws {
        let locks = TaskKeyedLocks(maxWaiting: 1)
        let (release, releaseContinuation) = AsyncStream.makeStream(of: Void.self)
        let (entered, enteredContinuation) = AsyncStream.makeStream(of: Void.self)
        let holder = Task {
            try await locks.withLock("k") { () throws(HubError) in
                enteredContinuation.yield()
                for await _ in release { break }
            }
        }
        var enteredIterator = entered.makeAsyncIterator()
        await enteredIterator.next()
        let waiter = Task { try await locks.withLock("k") { () throws(HubError) in "waited" } }
        while locks.waitingCount < 1 { await Task.yield() }
        do {
            _ = try await locks.withLock("k") { () throws(HubError) in "refused" }
            Issue.record("a caller past the limit got the lock")
        } catch {
            #expect(error.protocolError.code == 106, "\(error)")
        }
        releaseContinuation.yield()
        try await holder.value
        #expect(try await waiter.value == "waited")
    }

    @Test(.timeLimit(.minutes(1))) func anErrorInsideTheLockReachesTheCallerAndFreesTheKey() async throws {
        let locks = TaskKeyedLocks()
        await #expect(throws: HubError.self) {
            try await locks.withLock("k") { () throws(HubError) in throw .badRequest("no") }
        }
        #expect(try await locks.withLock("k") { () throws(HubError) in 7 } == 7)
    }
}
