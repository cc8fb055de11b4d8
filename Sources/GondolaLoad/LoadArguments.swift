/// Parsing of the command line's values, with errors that name the bad value.
public enum LoadArguments {
    /// `120s`, `2m`, `500ms`, `1h` or a number of seconds.
    public static func duration(_ text: String, option: String) throws -> Duration {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
        for (suffix, seconds) in units where text.hasSuffix(suffix) {
            if let value = Double(text.dropLast(suffix.count)), value >= 0, value.isFinite {
                return .milliseconds(Int64((value * seconds * 1000).rounded()))
            }
        }
        if let value = Double(text), value >= 0, value.isFinite { return .milliseconds(Int64((value * 1000).rounded())) }
        throw LoadError("\(option) must be a duration like 120s, 2m or 500ms, got '\(text)'")
    }

    /// `1/s`, `0.5/s`, `30/m` or a bare number per second; must be positive.
    public static func rate(_ text: String, option: String) throws -> Double {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        let per: Double? =
            switch parts.count == 2 ? String(parts[1]) : "s" {
            case "s": 1
            case "m": 60
            case "h": 3600
            default: nil
            }
        guard parts.count <= 2, let per, let value = Double(parts[0]), value > 0, value.isFinite else {
            throw LoadError("\(option) must be a positive rate like 1/s, 0.5/s or 30/m, got '\(text)'")
        }
        return value / per
    }

    /// One of an enumeration's raw values.
    public static func choice<Choice: CaseIterable & RawRepresentable>(_ text: String, option: String) throws -> Choice
    where Choice.RawValue == String {
        guard let choice = Choice(rawValue: text) else {
            throw LoadError("\(option) must be one of \(Choice.allCases.map(\.rawValue).joined(separator: ", ")), got '\(text)'")
        }
        return choice
    }

    /// A share between 0 and 1.
    public static func share(_ value: Double, option: String) throws -> Double {
        guard (0...1).contains(value) else { throw LoadError("\(option) must be between 0 and 1, got \(value)") }
        return value
    }
}
