import GondolaHub
import GondolaProtocol

/// The configuration values of the keys domains declare (`Domain.settingKeys`), as the
/// configuration file, a `GONDOLA_*` variable or a flag gave them (text from the last two).
/// The server's loader only routes them; each domain reads its own with `value(of:)` when it
/// is installed or checked.
public struct DomainSettings: Sendable {
    public var values: [String: JSON]

    public init(_ values: [String: JSON] = [:]) { self.values = values }

    /// The value `key` was given, checked as its row says, or the row's default.
    public func value<Value>(of key: DomainSettingKey<Value>) throws(DomainSetupError) -> Value {
        guard let value = values[key.info.name] else { return key.defaultValue }
        return try key.read(value)
    }
}

/// One of a domain's configuration keys, declared once: its row (name, type, default, doc,
/// as the docs show it) and how a value is read and checked. The domain lists the rows in
/// `Domain.settingKeys` and reads them with `DomainSettings.value(of:)`.
public struct DomainSettingKey<Value: Sendable>: Sendable {
    public let info: ConfigurationKeyInfo
    public let defaultValue: Value
    let read: @Sendable (JSON) throws(DomainSetupError) -> Value

    /// A key whose value `read` checks (an error names the key and the value).
    public init(
        _ name: String, type: String, default defaultValue: Value, shown: String, doc: String,
        read: @escaping @Sendable (JSON) throws(DomainSetupError) -> Value
    ) {
        info = ConfigurationKeyInfo(name: name, type: type, defaultValue: shown, reloadable: false, doc: doc)
        self.defaultValue = defaultValue
        self.read = read
    }

    /// The same key with the default the docs show said in words (one worked out at start).
    public func showing(default text: String) -> Self {
        Self(info.name, type: info.type, default: defaultValue, shown: text, doc: info.doc, read: read)
    }
}

extension DomainSettingKey where Value == String {
    /// Text, which may be empty unless `nonEmpty`; `check` refuses what the text may not be,
    /// returning the reason.
    public static func text(
        _ name: String, default fallback: String = "", nonEmpty: Bool = false, doc: String, check: (@Sendable (String) -> String?)? = nil
    ) -> Self {
        Self(name, type: nonEmpty ? "text, not empty" : "text", default: fallback, shown: fallback.isEmpty ? "empty" : fallback, doc: doc) {
            (value) throws(DomainSetupError) in
            guard case let .string(text) = value else { throw DomainSetupError("'\(name)' expected a string, got \(value.kindName)") }
            if nonEmpty, text.isEmpty { throw DomainSetupError("'\(name)' must not be empty") }
            if let reason = check?(text) { throw DomainSetupError("'\(name)' \(reason)") }
            return text
        }
    }
}

extension DomainSettingKey where Value == String {
    /// An `http://` or `https://` URL, or empty when `fallback` is.
    public static func httpURL(_ name: String, default fallback: String = "", doc: String) -> Self {
        text(name, default: fallback, doc: doc) { url in
            url.isEmpty || url.hasPrefix("http://") || url.hasPrefix("https://") ? nil : "expected an http(s) URL, got '\(url)'"
        }
    }
}

extension DomainSettingKey where Value == Int {
    /// A whole number in `range` (a JSON number or its text).
    public static func integer(_ name: String, default fallback: Int, in range: ClosedRange<Int>, doc: String) -> Self {
        Self(name, type: "whole number \(range.lowerBound) to \(range.upperBound)", default: fallback, shown: "\(fallback)", doc: doc) {
            (value) throws(DomainSetupError) in
            let number: Int?
            switch value {
            case let .int(whole): number = Int(exactly: whole)
            case let .string(text): number = Int(text)
            default: throw DomainSetupError("'\(name)' expected a whole number, got \(value.kindName)")
            }
            guard let number, range.contains(number) else {
                throw DomainSetupError("'\(name)' expected a whole number from \(range.lowerBound) to \(range.upperBound), got \(value.text)")
            }
            return number
        }
    }
}

extension DomainSettingKey where Value == Duration {
    /// A duration (`250ms`, `25s`, `10m`, `1h`, or a number of seconds) greater than zero.
    public static func duration(_ name: String, default fallback: Duration, doc: String) -> Self {
        Self(name, type: "duration > 0", default: fallback, shown: DurationText.text(of: fallback), doc: doc) { (value) throws(DomainSetupError) in
            guard let parsed = DurationText.value(of: value), parsed > .zero else {
                throw DomainSetupError("'\(name)' expected a duration greater than zero like 250ms, 25s, 10m or 1h, got \(value.text)")
            }
            return parsed
        }
    }
}
