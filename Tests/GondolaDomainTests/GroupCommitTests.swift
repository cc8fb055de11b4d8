import GondolaDomain
import GondolaTestSupport
import Synchronization
import Testing

/// Group commit: items that arrive while a batch is written go together in the next write,
/// at most `maxBatch` at a time, and each caller gets its own item's outcome.
@Suite struct GroupCommitTests {
    @Test(.timeLimit(.minutes(1))) func itemsArrivingDuringAWriteShareTheNextWrites() async throws {
        let batches = Mutex<[[Int]]>([])
        let (gate, opening) = AsyncStream.makeStream(of: Void.self)
        let (started, starting) = AsyncStream.makeStream(of: Void.self)
        let commit = GroupCommit<Int, String>(maxBatch: 4) { items in
            let isFirst = batches.withLock { batches in
                batches.append(items)
                return batches.count == 1
            }
            if isFirst {
                starting.yield()
                for await _ in gate { break }
            }
            return items.map { "written \($0)" }
        }
        try await withThrowingTaskGroup(of: (Int, String).self) { group in
            group.addTask { (0, await commit.commit(0)) }
            var startedIterator = started.makeAsyncIterator()
            await startedIterator.next()
            // The first write holds; six more items wait behind it.
            for item in 1...6 { group.addTask { (item, await commit.commit(item)) } }
            try await eventually { commit.waitingCount == 6 }
            opening.yield()
            var outcomes: [Int: String] = [:]
            for try await (item, outcome) in group { outcomes[item] = outcome }
            #expect(outcomes == Dictionary(uniqueKeysWithValues: (0...6).map { ($0, "written \($0)") }))
        }
        let written = batches.withLock { $0 }
        #expect(written.count == 3)
        #expect(written.first == [0])
        #expect(written.dropFirst().map(\.count) == [4, 2])
        #expect(Set(written.joined()) == Set(0...6))
        #expect(commit.waitingCount == 0)
    }

    @Test(.timeLimit(.minutes(1))) func aWriteAfterTheLastOneStartsAgain() async {
        let writes = Mutex(0)
        let commit = GroupCommit<Int, Int>(maxBatch: 10) { items in
            writes.withLock { $0 += 1 }
            return items.map { -$0 }
        }
        #expect(await commit.commit(1) == -1)
        #expect(await commit.commit(2) == -2)
        #expect(writes.withLock { $0 } == 2)
    }

    /// Callers that do not wait in a task hear their outcomes through callbacks, in batches of
    /// at most `maxBatch`; a countdown waits until every one was heard.
    @Test(.timeLimit(.minutes(1))) func callbacksHearTheirOutcomesAndACountdownWaitsForAll() async {
        let heard = Mutex<[Int: Int]>([:])
        let batchSizes = Mutex<[Int]>([])
        let commit = GroupCommit<Int, Int>(maxBatch: 3) { items in
            batchSizes.withLock { $0.append(items.count) }
            return items.map { $0 * 10 }
        }
        let unheard = Countdown(8)
        for item in 0..<8 {
            commit.commit(item) { outcome in
                heard.withLock { $0[item] = outcome }
                unheard.done()
            }
        }
        await unheard.allDone()
        #expect(heard.withLock { $0 } == Dictionary(uniqueKeysWithValues: (0..<8).map { ($0, $0 * 10) }))
        #expect(batchSizes.withLock { $0.allSatisfy { $0 <= 3 } && $0.reduce(0, +) == 8 })
        // Nothing to wait for: returns at once.
        await Countdown(0).allDone()
    }
}
