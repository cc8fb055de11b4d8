import GondolaDomain
import Logging
import Synchronization
import Testing

/// A domain's background reads after another node's change: one at a time, in the order
/// they were submitted, and dropped (logged) past the limit.
@Suite struct SerialJobsTests {
    /// What the jobs did, in order.
    final class Log<Entry: Sendable>: Sendable {
        private let entries = Mutex<[Entry]>([])
        func add(_ entry: Entry) { entries.withLock { $0.append(entry) } }
        var all: [Entry] { entries.withLock { $0 } }
    }

    @Test(.timeLimit(.minutes(1))) func jobsRunOneAtATimeInTheOrderTheyCame() async throws {
        let jobs = SerialJobs(name: "test", logger: Logger(label: "test"))
        let log = Log<String>()
        let (done, doneContinuation) = AsyncStream.makeStream(of: Void.self)
        for index in 0..<50 {
            jobs.submit {
                log.add("start \(index)")
                await Task.yield()
                log.add("end \(index)")
                if index == 49 { doneContinuation.yield() }
            }
        }
        var iterator = done.makeAsyncIterator()
        await iterator.next()
        #expect(log.all == (0..<50).flatMap { ["start \($0)", "end \($0)"] })
    }

    @Test(.timeLimit(.minutes(1))) func jobsPastTheLimitAreDroppedWhileTheQueuedOnesRun() async throws {
        let jobs = SerialJobs(name: "test", limit: 2, logger: Logger(label: "test"))
        let ran = Log<Int>()
        let (gate, gateContinuation) = AsyncStream.makeStream(of: Void.self)
        let (started, startedContinuation) = AsyncStream.makeStream(of: Void.self)
        let (finished, finishedContinuation) = AsyncStream.makeStream(of: Void.self)
        jobs.submit {
            startedContinuation.yield()
            for await _ in gate { break }
            ran.add(0)
        }
        var startedIterator = started.makeAsyncIterator()
        await startedIterator.next()
        // The first job runs; two fit in the queue behind it, the fourth does not.
        for index in 1...3 {
            jobs.submit {
                ran.add(index)
                if index == 2 { finishedContinuation.yield() }
            }
        }
        gateContinuation.yield()
        var finishedIterator = finished.makeAsyncIterator()
        await finishedIterator.next()
        // A job submitted now runs after everything queued before it: the dropped one never does.
        jobs.submit {
            ran.add(4)
            finishedContinuation.yield()
        }
        await finishedIterator.next()
        #expect(ran.all == [0, 1, 2, 4])
    }
}
