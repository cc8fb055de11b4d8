import GondolaRuntime
import NIOCore
import NIOPosix
import Testing

@testable import GondolaServer

/// A connection's task that prefers its loop's executor runs there: its body, what follows
/// an await that suspended elsewhere, and its child tasks.
@Suite struct EventLoopTaskExecutorTests {
    @Test func aTaskPreferringTheExecutorRunsOnItsLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loop = group.next()
        let other = group.next()
        let seen = await withTaskExecutorPreference(EventLoopTaskExecutor(loop)) {
            var seen = [loop.inEventLoop]
            // Resumed by a future completed on the other loop: the task comes back to its own.
            _ = try? await other.submit { 1 }.get()
            seen.append(loop.inEventLoop)
            try? await Task.sleep(for: .milliseconds(2))
            seen.append(loop.inEventLoop)
            await withTaskGroup(of: Bool.self) { children in
                children.addTask { loop.inEventLoop }
                for await child in children { seen.append(child) }
            }
            return seen
        }
        #expect(seen == [true, true, true, true])
        // Without the preference the same body runs on the cooperative pool, not on the loop.
        let withoutPreference = await Task.detached { loop.inEventLoop }.value
        #expect(withoutPreference == false)
        try await group.shutdownGracefully()
    }
}
