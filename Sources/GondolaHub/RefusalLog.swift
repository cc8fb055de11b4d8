import Logging
import Synchronization

/// Logs refusals at most once per `interval` for each kind, so that a client or a storm
/// repeating one refusal cannot flood the log, while an operator still finds why a request
/// was refused. A line after a quiet spell says how many refusals of its kind were not
/// logged since the last one (`suppressed`); they are counted in the metrics all the same.
public final class RefusalLog: Sendable {
    /// Shortest time between two lines about the same kind of refusal.
    public static let defaultInterval = Duration.seconds(3)
    /// Most kinds remembered at once; past it the oldest lines' kinds are forgotten, so the
    /// table stays bounded whatever keys callers make up (a forgotten kind logs again at once).
    public static let maxKinds = 1_024

    private struct Seen {
        var loggedAt: ContinuousClock.Instant
        var suppressed: Int
    }

    private let logger: Logger
    private let interval: Duration
    private let seen = Mutex<[String: Seen]>([:])

    public init(logger: Logger, interval: Duration = RefusalLog.defaultInterval) {
        self.logger = logger
        self.interval = interval
    }

    /// Logs `message` at `level` with `metadata` unless a refusal of `kind` was logged within
    /// the interval, in which case it is only counted toward the next line's `suppressed`.
    public func log(
        _ kind: String, _ message: @autoclosure () -> Logger.Message, level: Logger.Level = .info,
        metadata: @autoclosure () -> Logger.Metadata, now: ContinuousClock.Instant = .now
    ) {
        guard logger.logLevel <= level else { return }
        let suppressed = seen.withLock { seen -> Int? in
            if var entry = seen[kind], now - entry.loggedAt < interval {
                entry.suppressed += 1
                seen[kind] = entry
                return nil
            }
            if seen.count >= Self.maxKinds, seen[kind] == nil,
                let oldest = seen.min(by: { $0.value.loggedAt < $1.value.loggedAt })?.key
            {
                seen[oldest] = nil
            }
            let skipped = seen[kind]?.suppressed ?? 0
            seen[kind] = Seen(loggedAt: now, suppressed: 0)
            return skipped
        }
        guard let suppressed else { return }
        var lineMetadata = metadata()
        if suppressed > 0 { lineMetadata["suppressed"] = "\(suppressed)" }
        logger.log(level: level, message(), metadata: lineMetadata)
    }
}
