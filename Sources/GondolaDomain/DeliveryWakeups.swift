import Foundation
import Synchronization

/// The pacing of an outbox's delivery loop: it runs at once when work is queued (`kick`),
/// else at least every `tick`. Kicks while a round runs fold into one more round.
public final class DeliveryWakeups: Sendable {
    private let wake: AsyncStream<Void>.Continuation
    private let wakes: Mutex<AsyncStream<Void>?>

    public init() {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        wake = continuation
        wakes = Mutex(stream)
    }

    /// Tells the loop that work was queued.
    public func kick() { wake.yield() }

    /// Runs `round` until cancelled: at once, then whenever kicked or `tick` passed.
    /// Only the first call runs; a second returns at once.
    public func run(every tick: Duration, _ round: () async -> Void) async {
        guard
            let stream = wakes.withLock({ stream in
                defer { stream = nil }
                return stream
            })
        else { return }
        var iterator = stream.makeAsyncIterator()
        while !Task.isCancelled {
            await round()
            let wait = Task { [wake] in
                try await Task.sleep(for: tick)
                wake.yield()
            }
            _ = await iterator.next()
            wait.cancel()
        }
    }
}
