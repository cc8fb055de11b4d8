import Foundation
import GondolaProtocol
import Logging
import OTel

/// How the hub logs: text or JSON lines on standard error, a level, and a level of its own for
/// any component (`log_format`, `log_level`, `log_levels`).
public struct LogSettings: Sendable {
    /// The shape of a log line.
    public enum Format: String, Sendable, CaseIterable {
        /// swift-log's text line: time, level, label, `key=value` metadata, message.
        case text
        /// One JSON object per line: `time`, `level`, `component`, `message`, then the metadata.
        case json
    }

    /// The parts of the hub whose level can be set on its own, each domain among them; each
    /// logs with `component` set.
    public static var components: [String] { ["server", "http", "connections", "tokens", "proxy", "hub", "cluster"] + BuiltInDomains.names }

    public var format = Format.text
    public var level = Logger.Level.info
    public var componentLevels: [String: Logger.Level] = [:]

    public init() {}

    /// Sends the process's logs to standard error in `format`, at `level`. Traced, a line logged
    /// within a span carries its `trace_id` and `span_id`, which find the request's trace.
    public func bootstrap(traced: Bool = false) {
        let (format, level) = (format, level)
        LoggingSystem.bootstrap(
            { label, metadataProvider in
                var handler: any LogHandler =
                    switch format {
                    case .text: StreamLogHandler.standardError(label: label, metadataProvider: metadataProvider)
                    case .json: JSONLineLogHandler(label: label, metadataProvider: metadataProvider)
                    }
                handler.logLevel = level
                return handler
            }, metadataProvider: traced ? OTel.makeLoggingMetadataProvider() : nil)
    }
}

extension Logger {
    /// This logger for one component of the hub: its lines carry `component`, and its level is
    /// the one `log_levels` gives the component, else this logger's own.
    public func component(_ name: String, _ settings: LogSettings) -> Logger {
        var logger = self
        logger[metadataKey: "component"] = .string(name)
        if let level = settings.componentLevels[name] { logger.logLevel = level }
        return logger
    }
}

/// A log handler writing one JSON object per line to standard error, for log collectors:
/// `{"time":"…","level":"info","component":"hub","message":"…","label":"gondola",…metadata}`.
/// Metadata values keep their shape (strings, arrays, objects); each line is one write.
struct JSONLineLogHandler: LogHandler {
    let label: String
    var logLevel = Logger.Level.info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    init(label: String, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        FileHandle.standardError.write(Data(Self.line(event, label: label, metadata: merged(event)).utf8))
    }

    /// The handler's metadata, the provider's and the event's, later ones winning.
    private func merged(_ event: LogEvent) -> Logger.Metadata {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { $1 } }
        if let own = event.metadata { all.merge(own) { $1 } }
        return all
    }

    /// The JSON line of `event`: the fixed members first, then the metadata by name.
    static func line(_ event: LogEvent, label: String, metadata: Logger.Metadata, now: Date = Date()) -> String {
        var members: [(key: String, value: JSON)] = [
            ("time", .string(now.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))),
            ("level", .string(event.level.rawValue)),
        ]
        if let component = metadata["component"] { members.append(("component", json(component))) }
        members.append(("message", .string(event.message.description)))
        members.append(("label", .string(label)))
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) where key != "component" {
            members.append((key, json(value)))
        }
        if let error = event.error { members.append(("error", .string(String(describing: error)))) }
        return JSON.object(members).text + "\n"
    }

    private static func json(_ value: Logger.Metadata.Value) -> JSON {
        switch value {
        case let .string(text): return .string(text)
        case let .stringConvertible(convertible): return .string(convertible.description)
        case let .array(values): return .array(values.map(json))
        case let .dictionary(entries): return .object(entries.sorted { $0.key < $1.key }.map { ($0.key, json($0.value)) })
        }
    }
}
