import NIOCore
import Synchronization

/// The drains waiting to run on one event loop: a connection whose queue has
/// something to write joins the list, and the first to join an empty list
/// schedules one task that runs them all. A fan-out to a thousand connections
/// spread over two loops thus wakes each loop once instead of once per
/// connection (a wake-up is a syscall and a context switch on an idle loop).
///
/// The list holds each connection at most once (a connection is signalled once
/// per burst, see `OutboundQueue.onReady`), so it is bounded by the loop's
/// connections.
final class EventLoopDrains: Sendable {
    private let eventLoop: any EventLoop
    private let pending = Mutex<[@Sendable () -> Void]>([])

    private init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Runs `drain` on the loop soon, together with every other drain signalled before the loop gets to them.
    func schedule(_ drain: @escaping @Sendable () -> Void) {
        let first = pending.withLock { pending in
            pending.append(drain)
            return pending.count == 1
        }
        if first { eventLoop.execute { self.runPending() } }
    }

    private func runPending() {
        let drains = pending.withLock { pending in
            defer { pending.removeAll(keepingCapacity: true) }
            return pending
        }
        for drain in drains { drain() }
    }

    private static let perLoop = EventLoopLocal<Int, EventLoopDrains>()

    /// The drains of `eventLoop`, made on first use and kept while the process runs:
    /// there is one per loop of the server's group.
    static func of(_ eventLoop: any EventLoop) -> EventLoopDrains {
        perLoop.value(on: eventLoop, for: 0) { EventLoopDrains(eventLoop: eventLoop) }
    }
}
