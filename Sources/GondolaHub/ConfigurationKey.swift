import GondolaProtocol

/// What the docs, `checkconfig`, the flags and a reload know of a configuration key.
public struct ConfigurationKeyInfo: Sendable, Equatable {
    public let name: String
    /// What a value must be (`duration > 0`, `whole number 1 to 1024`, `host:port`).
    public let type: String
    /// The default as the docs show it.
    public let defaultValue: String
    /// Whether a reload (SIGHUP) puts a new value in force; otherwise it waits for a restart.
    public let reloadable: Bool
    /// The docs' line: what the key does, and what happens at its limit.
    public let doc: String

    public init(name: String, type: String, defaultValue: String, reloadable: Bool, doc: String) {
        (self.name, self.type, self.defaultValue, self.reloadable, self.doc) = (name, type, defaultValue, reloadable, doc)
    }

    /// The environment variable that sets the key: `GONDOLA_<KEY>`.
    public var environmentVariable: String { Self.environmentPrefix + name.uppercased() }
    /// The flag that sets the key: `--<key-with-dashes>`.
    public var flag: String { "--" + name.replacingOccurrences(of: "_", with: "-") }

    public static let environmentPrefix = "GONDOLA_"

    /// The key a flag (`--key-with-dashes`, without its value) names.
    public static func key(ofFlag flag: String) -> String? {
        guard flag.hasPrefix("--"), flag.count > 2 else { return nil }
        return flag.dropFirst(2).replacingOccurrences(of: "-", with: "_")
    }
}

/// One configuration key, declared once: its name, what its value must be, its default,
/// whether a reload puts it in force, its line in the docs, and how a value is read into the
/// settings it belongs to. Each part of the server keeps its keys as a table of these
/// (`HubConfiguration.keys`, `NamespaceOptions.keys`, ...); the loader, `checkconfig`, the
/// flags, `genconfig`'s comments and docs/configuration.md are made from the tables.
public struct ConfigurationKey<Settings>: Sendable {
    /// Reads one value (already named and placed by the reader) into the settings.
    public typealias Read = @Sendable (ValueReader, inout Settings) throws(ConfigurationError) -> Void

    public let info: ConfigurationKeyInfo
    private let read: Read

    public var name: String { info.name }

    public init(_ info: ConfigurationKeyInfo, read: @escaping Read) {
        self.info = info
        self.read = read
    }

    /// A key whose reading says more than its type: a check across values, a list, an object.
    public init(_ name: String, type: String, default defaultValue: String, reloadable: Bool = false, doc: String, read: @escaping Read) {
        self.init(ConfigurationKeyInfo(name: name, type: type, defaultValue: defaultValue, reloadable: reloadable, doc: doc), read: read)
    }

    /// Reads `value` into `settings`; the error names the key, the value and where it came from.
    public func apply(_ value: ValueReader, to settings: inout Settings) throws(ConfigurationError) {
        try read(value, &settings)
    }

    /// The same key, reading into the part of `Outer` that `path` names.
    public func within<Outer>(_ path: WritableKeyPath<Outer, Settings> & Sendable) -> ConfigurationKey<Outer> {
        let read = self.read
        return ConfigurationKey<Outer>(info) { (value, outer) throws(ConfigurationError) in try read(value, &outer[keyPath: path]) }
    }

    /// The same key with the default the docs show said in words (a default that is worked
    /// out at start, such as the host name).
    public func showing(default text: String) -> Self {
        ConfigurationKey(
            ConfigurationKeyInfo(name: info.name, type: info.type, defaultValue: text, reloadable: info.reloadable, doc: info.doc), read: read)
    }
}

/// Settings whose keys are declared with the typed rows (`ConfigurationKey.boolean`, ...):
/// the row's default is read from `defaults`, so it is written only where the settings are.
public protocol ConfigurationDefaults: SendableMetatype {
    static var defaults: Self { get }
}

extension ConfigurationKey where Settings: ConfigurationDefaults {
    /// `true` or `false` (`1` or `0` as text).
    public static func boolean(_ name: String, _ path: WritableKeyPath<Settings, Bool> & Sendable, reloadable: Bool = false, doc: String) -> Self {
        Self(name, type: "boolean", default: "\(Settings.defaults[keyPath: path])", reloadable: reloadable, doc: doc) {
            (value, settings) throws(ConfigurationError) in settings[keyPath: path] = try value.bool()
        }
    }

    /// A whole number from `min` (up to `max` when given).
    public static func integer(
        _ name: String, _ path: WritableKeyPath<Settings, Int> & Sendable, min: Int, max: Int? = nil, reloadable: Bool = false, doc: String
    ) -> Self {
        let type = max.map { "whole number \(min) to \($0)" } ?? "whole number, at least \(min)"
        return Self(name, type: type, default: "\(Settings.defaults[keyPath: path])", reloadable: reloadable, doc: doc) {
            (value, settings) throws(ConfigurationError) in
            if let max {
                settings[keyPath: path] = try value.integer(min: min, max: max)
            } else {
                settings[keyPath: path] = try value.integer(min: min)
            }
        }
    }

    /// A duration (`250ms`, `25s`, `10m`, `1h`, or seconds), greater than zero unless `allowZero`.
    public static func duration(
        _ name: String, _ path: WritableKeyPath<Settings, Duration> & Sendable, allowZero: Bool, reloadable: Bool = false, doc: String
    ) -> Self {
        Self(
            name, type: allowZero ? "duration" : "duration > 0", default: DurationText.text(of: Settings.defaults[keyPath: path]),
            reloadable: reloadable, doc: doc
        ) { (value, settings) throws(ConfigurationError) in settings[keyPath: path] = try value.duration(allowZero: allowZero) }
    }

    /// Text, which may be empty unless `nonEmpty`.
    public static func text(
        _ name: String, _ path: WritableKeyPath<Settings, String> & Sendable, nonEmpty: Bool = false, reloadable: Bool = false, doc: String
    ) -> Self {
        let fallback = Settings.defaults[keyPath: path]
        return Self(
            name, type: nonEmpty ? "text, not empty" : "text", default: fallback.isEmpty ? "empty" : fallback, reloadable: reloadable, doc: doc
        ) {
            (value, settings) throws(ConfigurationError) in settings[keyPath: path] = nonEmpty ? try value.nonEmptyString() : try value.string()
        }
    }

    /// The path of a file this process can read, checked when the configuration is read.
    public static func file(_ name: String, _ path: WritableKeyPath<Settings, String> & Sendable, reloadable: Bool = false, doc: String) -> Self {
        Self(name, type: "readable file", default: "none", reloadable: reloadable, doc: doc) {
            (value, settings) throws(ConfigurationError) in settings[keyPath: path] = try value.readableFile()
        }
    }
}
