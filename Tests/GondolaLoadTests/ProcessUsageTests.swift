import Foundation
import GondolaLoad
import GondolaTestSupport
import Synchronization
import Testing

/// What the load generator reads of a process in `/proc`: CPU, memory, and the time its
/// threads waited for a core.
@Suite struct ProcessUsageTests {
    /// Tells the busy threads to end.
    final class StopFlag: Sendable {
        let stopped = Atomic(false)
    }

    @Test(.timeLimit(.minutes(1))) func threadsThatOutnumberTheCoresWaitForOne() async throws {
        let before = try #require(ProcessUsage(pid: getpid()))
        #expect(before.cpuSeconds > 0 && before.rssMiB > 0)
        let waitedBefore = try #require(before.runQueueWaitSeconds)
        // More busy threads than cores: some are always waiting for one, until the wait shows.
        let spinners = ProcessInfo.processInfo.activeProcessorCount * 2 + 1
        let stop = StopFlag()
        let threads = (0..<spinners).map { _ in
            Thread {
                var spins: UInt64 = 0
                while !stop.stopped.load(ordering: .relaxed) { spins &+= 1 }
                _ = spins
            }
        }
        threads.forEach { $0.start() }
        defer { stop.stopped.store(true, ordering: .relaxed) }
        var waited = waitedBefore
        try await eventually("the process's threads waiting for a core", within: .seconds(20), every: .milliseconds(20)) {
            waited = ProcessUsage(pid: getpid())?.runQueueWaitSeconds ?? waited
            return waited > waitedBefore + 0.01
        }
        stop.stopped.store(true, ordering: .relaxed)
        let after = ProcessUsage(pid: getpid())
        let percent = ProcessUsage.runQueueWaitPercent(from: before, to: after, over: 1)
        #expect((percent ?? 0) > 0)
    }
}
