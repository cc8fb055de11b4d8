import NIOCore

/// A task executor that runs jobs on one NIO event loop. A connection's message task prefers
/// the executor of its channel's loop, so its messages are handled and answered on the
/// thread that owns the socket: no hand-off to the cooperative pool for each message and
/// none back to the loop for its reply (each hand-off is a wake-up and a context switch).
/// Work a handler awaits elsewhere (an actor, a database future) hops there and comes back.
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
