/// Spreads `count` periodic actions evenly over `period`: member i acts at
/// start + i/count·period, then once per period. `due(at:)` answers the members
/// whose turn came since the last call, in order, so a tick of any length sends
/// exactly what is due (at most `maxPerCall`, by default one period's worth; the
/// rest on the next calls).
public struct UniformSchedule: Sendable {
    public let count: Int
    public let period: Int64
    public let maxPerCall: Int
    private var start: Int64?
    /// Turns handed out so far (member = turn % count).
    public private(set) var turns = 0

    /// `period` in nanoseconds.
    public init(count: Int, period: Int64, maxPerCall: Int? = nil) {
        self.count = count
        self.period = max(1, period)
        self.maxPerCall = maxPerCall ?? max(1, count)
    }

    /// Members due at `now` (monotonic ns); the first call starts the schedule.
    public mutating func due(at now: Int64) -> [Int] {
        guard count > 0 else { return [] }
        let start = self.start ?? now
        self.start = start
        let reached = Int((Double(now - start) / Double(period) * Double(count)).rounded(.down)) + 1
        let end = min(reached, turns + maxPerCall)
        guard end > turns else { return [] }
        defer { turns = end }
        return (turns..<end).map { $0 % count }
    }
}
