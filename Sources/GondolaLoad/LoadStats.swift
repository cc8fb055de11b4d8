import Histogram

/// The running tally of a load run: counters, latency histograms, errors by cause
/// and the per-second timeline. Owned by the loop thread (no locks).
public struct LoadStats: Sendable {
    /// The latency kind the timeline and the progress line follow.
    public let mainLatency: String
    public private(set) var connected = 0
    public private(set) var messagesIn = 0
    public private(set) var messagesOut = 0
    public private(set) var reconnects = 0
    public private(set) var connectionErrors: [String: Int] = [:]
    public private(set) var errorReplies: [String: Int] = [:]
    public private(set) var timeline: [TimelineSample] = []
    private var latencies: [String: Histogram<UInt64>] = [:]
    private var second = Histogram<UInt64>(highestTrackableValue: LoadStats.highestLatency, numberOfSignificantValueDigits: .three)
    private var secondIn = 0, secondOut = 0, secondErrors = 0
    /// Latencies above this (a minute, in ns) are recorded as this.
    public static let highestLatency: UInt64 = 60_000_000_000

    public init(mainLatency: String) { self.mainLatency = mainLatency }

    public mutating func opened() { connected += 1 }

    /// A connection ended; `wasOpen` tells a drop from a failed attempt.
    public mutating func closed(cause: String, wasOpen: Bool) {
        if wasOpen { connected -= 1 }
        connectionErrors[cause, default: 0] += 1
        secondErrors += 1
    }

    public mutating func reconnected() { reconnects += 1 }

    public mutating func errorReply(_ code: String) {
        errorReplies[code, default: 0] += 1
        secondErrors += 1
    }

    public mutating func received(_ count: Int = 1) {
        messagesIn += count
        secondIn += count
    }

    public mutating func sent(_ count: Int = 1) {
        messagesOut += count
        secondOut += count
    }

    /// Records one latency of `kind`, in nanoseconds (negative values count as 0).
    public mutating func record(_ kind: String, nanoseconds: Int64) {
        let value = min(UInt64(max(0, nanoseconds)), Self.highestLatency)
        _ = latencies[kind, default: Self.histogram()].record(value)
        if kind == mainLatency { _ = second.record(value) }
    }

    /// Closes the current second: appends its sample and starts the next.
    public mutating func closeSecond(at elapsedSecond: Int) -> TimelineSample {
        let sample = TimelineSample(
            second: elapsedSecond, connected: connected, messagesIn: secondIn, messagesOut: secondOut,
            p50: Double(second.valueAtPercentile(50)) / 1e6, p99: Double(second.valueAtPercentile(99)) / 1e6,
            errors: secondErrors)
        timeline.append(sample)
        second.reset()
        secondIn = 0
        secondOut = 0
        secondErrors = 0
        return sample
    }

    /// Starts the measured period: counters, histograms and errors from before are dropped
    /// (connections stay counted); the timeline is kept.
    public mutating func startMeasuring() {
        messagesIn = 0
        messagesOut = 0
        reconnects = 0
        connectionErrors = [:]
        errorReplies = [:]
        latencies = [:]
    }

    /// Percentiles of every latency kind recorded since `startMeasuring`.
    public var summaries: [String: LatencySummary] { latencies.mapValues(LatencySummary.init) }

    /// The main latency's p99 since `startMeasuring`, ms.
    public var mainP99: Double { latencies[mainLatency].map { Double($0.valueAtPercentile(99)) / 1e6 } ?? 0 }

    static func histogram() -> Histogram<UInt64> {
        Histogram<UInt64>(highestTrackableValue: highestLatency, numberOfSignificantValueDigits: .three)
    }
}
