import GondolaGeo

/// When a dropped connection is opened again.
public enum ReconnectPolicy: Sendable, Equatable {
    /// Always after this long.
    case fixed(Duration)
    /// The Centrifuge SDKs' exponential back-off with full jitter: after the n-th failed
    /// attempt in a row (n from 0) wait `min + random(0...min(max, min·2ⁿ))`, at most `max`.
    /// centrifuge-js uses 500 ms and 20 s. The random numbers come from `seed`.
    case backoff(min: Duration, max: Duration, seed: UInt64)
}

/// The delays of one run under a `ReconnectPolicy`: each connection's failed attempts in a
/// row, and the seeded generator the jitter is drawn from.
struct ReconnectSchedule {
    let policy: ReconnectPolicy
    private var failures: [Int]
    private var random: SeededRandom

    init(policy: ReconnectPolicy, connections: Int) {
        self.policy = policy
        failures = Array(repeating: 0, count: connections)
        if case let .backoff(_, _, seed) = policy { random = SeededRandom(seed: seed) } else { random = SeededRandom(seed: 0) }
    }

    /// The connection opened: its next drop starts the back-off again.
    mutating func succeeded(_ connection: Int) { failures[connection] = 0 }

    /// The connection dropped or failed to open: the wait, in nanoseconds, before the next attempt.
    mutating func delay(after connection: Int) -> Int64 {
        switch policy {
        case let .fixed(delay):
            return delay.nanoseconds
        case let .backoff(min, max, _):
            let step = Swift.min(failures[connection], 31)
            failures[connection] += 1
            let low = min.nanoseconds
            let high = max.nanoseconds
            let window = Swift.min(high, low.multipliedReportingOverflow(by: 1 << step).overflow ? high : low << step)
            return Swift.min(high, low + Int64.random(in: 0...Swift.max(0, window), using: &random))
        }
    }
}
