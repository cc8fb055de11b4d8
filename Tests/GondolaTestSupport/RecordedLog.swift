import Logging
import Synchronization

/// Keeps every line a logger writes, for tests that read the log.
public final class RecordedLog: Sendable {
    /// One line as the handler received it, its metadata as text.
    public struct Line: Sendable {
        public let level: Logger.Level
        public let message: String
        public let metadata: [String: String]
    }

    private let lines = Mutex<[Line]>([])

    public init() {}

    /// Every line so far, oldest first.
    public var all: [Line] { lines.withLock { $0 } }

    /// A logger at `level` that records into this log.
    public func logger(level: Logger.Level = .info) -> Logger {
        var logger = Logger(label: "test") { _ in Handler(log: self) }
        logger.logLevel = level
        return logger
    }

    fileprivate func record(_ line: Line) { lines.withLock { $0.append(line) } }

    private struct Handler: LogHandler {
        let log: RecordedLog
        var logLevel = Logger.Level.trace
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            log.record(Line(level: event.level, message: "\(event.message)", metadata: all.mapValues { "\($0)" }))
        }
    }
}
