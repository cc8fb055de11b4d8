import GondolaProtocol

/// The configuration values of the keys domains declare (`Domain.settingKeys`), as the
/// configuration file, a `GONDOLA_*` variable or a flag gave them (text from the last two).
/// The server's loader only routes them; each domain checks its own when it is installed.
public struct DomainSettings: Sendable {
    public var values: [String: JSON]

    public init(_ values: [String: JSON] = [:]) { self.values = values }

    /// `key` as text, or `fallback` when it was not given.
    public func string(_ key: String, default fallback: String) throws(DomainSetupError) -> String {
        guard let value = values[key] else { return fallback }
        guard case let .string(text) = value else { throw DomainSetupError("'\(key)' expected a string, got \(value.kindName)") }
        return text
    }
}
