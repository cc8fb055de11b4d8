import NIOCore

/// A task executor that runs jobs on one NIO event loop. A connection's message task prefers
/// the executor of its channel's loop, so its messages are handled and answered on the
/// thread that owns the socket: no hand-off to the cooperative pool for each message and
/// none back to the loop for its reply (each hand-off is a wake-up and a context switch).
/// Work a handler awaits elsewhere (an actor, a database future) hops there and comes back.
/// A domain's writer that blocks on a synchronous disk write (SQLite) runs its task on a
/// loop of its own the same way, so the write never holds one of the cooperative pool's
/// threads; the cluster's bus writer runs on its PostgreSQL pool's loop, where the futures it
/// awaits complete, so each query's answer resumes it without waking another thread.
public final class EventLoopTaskExecutor: TaskExecutor {
    public let eventLoop: any EventLoop

    public init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
