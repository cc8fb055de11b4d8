import Synchronization

/// Waits for a known number of things that end on other threads (callbacks, answers): each
/// calls `done` once, and `allDone` returns once all of them have. One task awaits it, and
/// no thread blocks: `done` never suspends, so event loops may call it.
public final class Countdown: Sendable {
    private let state: Mutex<(left: Int, waiter: CheckedContinuation<Void, Never>?)>

    /// A countdown from `count` (at least zero).
    public init(_ count: Int) {
        precondition(count >= 0, "a countdown starts at zero or more")
        state = Mutex((count, nil))
    }

    /// One thing ended; the waiting task resumes when it was the last.
    public func done() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            precondition(state.left > 0, "a countdown counted past zero")
            state.left -= 1
            guard state.left == 0 else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Returns once every thing counted has ended (at once when none is left).
    public func allDone() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                guard state.left > 0 else { return true }
                precondition(state.waiter == nil, "one task waits on a countdown")
                state.waiter = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}
