import GondolaHub

/// The command line's configuration: any key of the tables (`ConfigurationLoader.table`) as
/// `--<key-with-dashes> <value>` or `--<key-with-dashes>=<value>`, so that every key has its
/// flag without one being declared for it.
public enum ConfigurationFlags {
    /// The keys and values `arguments` give; an unknown key, a flag without its value, a key
    /// given twice or a stray word is refused naming it.
    public static func parse(_ arguments: [String]) throws(ConfigurationError) -> [String: String] {
        var values: [String: String] = [:]
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            let (flag, inline) = split(argument)
            guard let key = ConfigurationKeyInfo.key(ofFlag: flag) else {
                throw ConfigurationError("'\(argument)' is not a flag; configuration flags are --<key> <value> (`gondola keys` lists the keys)")
            }
            guard ConfigurationLoader.keys.contains(key) else {
                throw ConfigurationError("flag \(flag): unknown key '\(key)' (`gondola keys` lists the keys)")
            }
            guard let value = inline ?? remaining.popFirst() else { throw ConfigurationError("flag \(flag) needs a value") }
            guard values.updateValue(value, forKey: key) == nil else { throw ConfigurationError("flag \(flag) is given twice") }
        }
        return values
    }

    /// `--key=value` as the flag and its value; `--key` alone as the flag.
    private static func split(_ argument: String) -> (flag: String, value: String?) {
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }
}
