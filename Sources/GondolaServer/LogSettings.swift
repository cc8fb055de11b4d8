import Foundation
import GondolaHub
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

    /// The configuration keys of the logs.
    static let keys: [ConfigurationKey<LogSettings>] = [
        ConfigurationKey(
            "log_format", type: Format.allCases.map { "`\($0.rawValue)`" }.joined(separator: " or "), default: "text",
            doc:
                "`text`: swift-log's text lines; `json`: one JSON object per line (`time`, `level`, `component`, `message`, `label`, then the metadata) ([operations.md](operations.md#logs))"
        ) { (field, logging) throws(ConfigurationError) in
            let text = try field.string()
            guard let format = Format(rawValue: text) else {
                throw field.error("expected one of \(Format.allCases.map(\.rawValue).joined(separator: ", ")), got '\(text)'")
            }
            logging.format = format
        },
        ConfigurationKey(
            "log_level", type: "log level", default: "info", doc: "`trace`, `debug`, `info`, `notice`, `warning`, `error` or `critical`"
        ) { (field, logging) throws(ConfigurationError) in logging.level = try field.logLevel() },
        ConfigurationKey(
            "log_levels", type: "object, or name=value pairs", default: "none",
            doc:
                "a level per component, overriding `log_level` for it: an object (`{\"hub\": \"debug\"}`), or `hub=debug,push=warning` from a variable or flag; the components are `server`, `http`, `connections`, `tokens`, `proxy`, `hub`, `cluster` and each domain's name"
        ) { (field, logging) throws(ConfigurationError) in
            var levels: [String: Logger.Level] = [:]
            for (component, level) in try field.pairs(of: "component levels such as hub=debug") {
                guard components.contains(component) else {
                    throw field.error("names no component '\(component)' (components: \(components.joined(separator: ", ")))")
                }
                levels[component] = try ValueReader(key: "log_levels.\(component)", value: level, source: field.source).logLevel()
            }
            logging.componentLevels = levels
        },
    ]

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
