import Foundation
import GondolaProtocol
import Logging

/// A configuration value that cannot be used, naming the key and the value.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Reads one configuration value as the type its key needs. Text from the
/// environment or a flag is accepted wherever a number or boolean is expected.
public struct ValueReader: Sendable {
    /// The key as errors name it (`log_levels.hub`, `namespaces[0].presence`).
    public let key: String
    public let value: JSON
    /// Where the value came from: a file's line, an environment variable or a flag.
    public let source: String

    public init(key: String, value: JSON, source: String) {
        (self.key, self.value, self.source) = (key, value, source)
    }

    public func error(_ message: String) -> ConfigurationError {
        ConfigurationError("\(source): '\(key)' \(message)")
    }

    public func string() throws(ConfigurationError) -> String {
        guard case let .string(text) = value else { throw error("expected a string, got \(value.kindName)") }
        return text
    }

    /// The path of a file this process can read.
    public func readableFile() throws(ConfigurationError) -> String {
        let path = try string()
        guard FileManager.default.isReadableFile(atPath: path) else { throw error("names '\(path)', which is not a readable file") }
        return path
    }

    /// An array of objects with only `keys` as members (a JSON text from the environment or a flag).
    public func objects(keys: Set<String>) throws(ConfigurationError) -> [ConfigObject] {
        var array = value
        if case let .string(text) = value {
            do {
                array = try JSONParser.parse(text)
            } catch {
                throw self.error("must be a JSON array of objects: \(error)")
            }
        }
        guard case let .array(entries) = array else { throw error("expected an array of objects, got \(value.kindName)") }
        return try entries.enumerated().map { (index, entry) throws(ConfigurationError) in
            guard case let .object(members) = entry else { throw error("[\(index)] expected an object, got \(entry.kindName)") }
            if let unknown = members.first(where: { !keys.contains($0.key) }) {
                throw ConfigurationError("\(source): unknown key '\(key)[\(index)].\(unknown.key)'")
            }
            return ConfigObject(members: Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 }), source: source)
        }
    }

    /// An array of strings, or (from the environment or a flag) a comma-separated list of `what`.
    public func list(of what: String) throws(ConfigurationError) -> [String] {
        switch value {
        case let .string(text): return text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        case let .array(entries):
            return try entries.map { (entry) throws(ConfigurationError) in
                guard case let .string(name) = entry else { throw error("expected \(what), got \(entry.kindName)") }
                return name
            }
        default: throw error("expected an array of \(what) or a comma-separated list, got \(value.kindName)")
        }
    }

    /// `host:port` with a port in 0...65535 (0: any free port).
    public func hostAndPort() throws(ConfigurationError) -> (String, Int) {
        let text = try string()
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port),
            !text[..<colon].isEmpty
        else {
            throw error("expected host:port, got '\(text)'")
        }
        return (String(text[..<colon]), port)
    }

    public func nonEmptyString() throws(ConfigurationError) -> String {
        let text = try string()
        guard !text.isEmpty else { throw error("must not be empty") }
        return text
    }

    /// An `http://` or `https://` URL.
    public func httpURL() throws(ConfigurationError) -> String {
        let url = try nonEmptyString()
        guard url.hasPrefix("http://") || url.hasPrefix("https://") else { throw error("expected an http(s) URL, got '\(url)'") }
        return url
    }

    /// A date as RFC 3339 text (`2026-12-31T00:00:00Z`) or Unix seconds.
    public func date() throws(ConfigurationError) -> Date {
        switch value {
        case let .int(seconds): return Date(timeIntervalSince1970: Double(seconds))
        case let .string(text):
            if let seconds = Int64(text) { return Date(timeIntervalSince1970: Double(seconds)) }
            if let date = try? Date(text, strategy: .iso8601) { return date }
            throw error("expected an RFC 3339 date such as 2026-12-31T00:00:00Z or Unix seconds, got '\(text)'")
        default: throw error("expected an RFC 3339 date or Unix seconds, got \(value.text)")
        }
    }

    /// A swift-log level by name (`trace` … `critical`).
    public func logLevel() throws(ConfigurationError) -> Logger.Level {
        let text = try string()
        guard let level = Logger.Level(rawValue: text) else {
            throw error("expected one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")), got '\(text)'")
        }
        return level
    }

    /// An object's members, or (from the environment or a flag) `name=value` pairs separated by commas.
    public func pairs(of what: String) throws(ConfigurationError) -> [(String, JSON)] {
        switch value {
        case let .object(members): return members.map { ($0.key, $0.value) }
        case let .string(text):
            return try text.split(separator: ",").map { (pair) throws(ConfigurationError) in
                let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard parts.count == 2, !parts[0].isEmpty else { throw error("expected \(what), got '\(pair)'") }
                return (parts[0], .string(parts[1]))
            }
        default: throw error("expected an object of \(what) or name=value pairs, got \(value.kindName)")
        }
    }

    public func bool() throws(ConfigurationError) -> Bool {
        switch value {
        case let .bool(flag): return flag
        case .string("true"), .string("1"): return true
        case .string("false"), .string("0"): return false
        default: throw error("expected true or false, got \(value.text)")
        }
    }

    /// A list of delta type names (`["fossil"]`); an unknown name is refused by name.
    public func deltaTypes() throws(ConfigurationError) -> Set<DeltaType> {
        guard case let .array(entries) = value else { throw error("expected an array of delta types, got \(value.kindName)") }
        var types: Set<DeltaType> = []
        for entry in entries {
            guard case let .string(name) = entry, let type = DeltaType(rawValue: name) else {
                throw error("has \(entry.text), not a delta type (known: \(DeltaType.knownNames))")
            }
            types.insert(type)
        }
        return types
    }

    public func integer(min: Int) throws(ConfigurationError) -> Int {
        let number: Int?
        switch value {
        case let .int(int): number = Int(exactly: int)
        case let .string(text): number = Int(text)
        default: number = nil
        }
        guard let number else { throw error("expected a whole number, got \(value.text)") }
        guard number >= min else { throw error("must be at least \(min), got \(number)") }
        return number
    }

    public func integer(min: Int, max: Int) throws(ConfigurationError) -> Int {
        let number = try integer(min: min)
        guard number <= max else { throw error("must be at most \(max), got \(number)") }
        return number
    }

    public func duration(allowZero: Bool) throws(ConfigurationError) -> Duration {
        guard let parsed = DurationText.value(of: value) else { throw error("expected a duration like 250ms, 25s, 10m or 1h, got \(value.text)") }
        guard allowZero || parsed > .zero else { throw error("must be greater than zero") }
        return parsed
    }
}

/// One object of a configuration array (`proxies`, `rpc_proxies`).
public struct ConfigObject: Sendable {
    public let members: [String: JSON]
    public let source: String

    /// The non-empty text member `key`; `path` names the object in errors.
    public func string(_ key: String, path: String) throws(ConfigurationError) -> String {
        guard let value = members[key] else { throw ConfigurationError("\(source): \(path).\(key) is required") }
        return try ValueReader(key: "\(path).\(key)", value: value, source: source).nonEmptyString()
    }
}
