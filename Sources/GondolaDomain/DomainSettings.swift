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

    /// `key` as a whole number in `range` (a JSON number or its text), or `fallback`.
    public func integer(_ key: String, default fallback: Int, in range: ClosedRange<Int>) throws(DomainSetupError) -> Int {
        let number: Int?
        switch values[key] {
        case nil: return fallback
        case let .int(value)?: number = Int(exactly: value)
        case let .string(text)?: number = Int(text)
        case let value?: throw DomainSetupError("'\(key)' expected a whole number, got \(value.kindName)")
        }
        guard let number, range.contains(number) else {
            throw DomainSetupError("'\(key)' expected a whole number from \(range.lowerBound) to \(range.upperBound), got \(values[key]!.text)")
        }
        return number
    }

    /// `key` as a duration (`250ms`, `25s`, `10m`, `1h`, or a number of seconds), greater
    /// than zero, or `fallback`.
    public func duration(_ key: String, default fallback: Duration) throws(DomainSetupError) -> Duration {
        guard let value = values[key] else { return fallback }
        guard let parsed = DurationText.value(of: value), parsed > .zero else {
            throw DomainSetupError("'\(key)' expected a duration greater than zero like 250ms, 25s, 10m or 1h, got \(values[key]!.text)")
        }
        return parsed
    }
}
