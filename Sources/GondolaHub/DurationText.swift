import GondolaProtocol

/// Durations written as a number and a unit: `250ms`, `25s`, `10m`, `1h`.
public enum DurationText {
    public static func parse(_ text: String) -> Duration? {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
        for (suffix, scale) in units where text.hasSuffix(suffix) {
            let number = text.dropLast(suffix.count)
            if suffix == "s", number.hasSuffix("m") { continue }
            guard let value = Double(number), value >= 0, value.isFinite else { return nil }
            return .milliseconds(Int64((value * scale * 1000).rounded()))
        }
        return nil
    }

    /// A duration as a configuration value holds it: text (`parse`), or a number of seconds;
    /// nil for anything else or a negative number.
    public static func value(of json: JSON) -> Duration? {
        switch json {
        case let .int(seconds): seconds >= 0 ? .seconds(seconds) : nil
        case let .double(seconds): seconds >= 0 ? .milliseconds(Int64(seconds * 1000)) : nil
        case let .string(text): parse(text)
        default: nil
        }
    }

    /// `duration` as the configuration writes it: the largest unit that holds it whole
    /// (`720h`, `10m`, `25s`, `250ms`).
    public static func text(of duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        guard milliseconds % 1000 == 0 else { return "\(milliseconds)ms" }
        let seconds = milliseconds / 1000
        if seconds > 0, seconds % 3600 == 0 { return "\(seconds / 3600)h" }
        if seconds > 0, seconds % 60 == 0 { return "\(seconds / 60)m" }
        return "\(seconds)s"
    }
}
