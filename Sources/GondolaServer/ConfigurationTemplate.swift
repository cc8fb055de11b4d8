import Foundation
import GondolaHub
import GondolaProtocol

/// The starting configuration `gondola genconfig` writes: the keys a first deployment sets,
/// each with a comment saying what it does, fresh secrets, and the keys a cluster adds left
/// commented out. The same entries render as YAML, TOML or JSON (which has no comments).
public enum ConfigurationTemplate {
    /// One key of the template and its value; `active: false` leaves it commented out (and
    /// out of JSON). Its comment is the key's doc line (`ConfigurationLoader.table`).
    struct Entry {
        let key: String
        let value: JSON
        var active = true

        var comment: String { ConfigurationLoader.table.first { $0.name == key }?.info.doc ?? "" }
    }

    /// The template's entries, with `tokenSecret` and `apiKey` filled in.
    static func entries(tokenSecret: String, apiKey: String) -> [Entry] {
        [
            Entry(key: "listen", value: "127.0.0.1:8000"),
            Entry(key: "internal_listen", value: "127.0.0.1:9000"),
            Entry(key: "database", value: "var/gondola.sqlite"),
            Entry(key: "token_hmac_secret", value: .string(tokenSecret)),
            Entry(key: "api_key", value: .string(apiKey)),
            Entry(key: "allowed_origins", value: .array([])),
            Entry(key: "client_connection_limit", value: .int(100_000)),
            Entry(
                key: "namespaces",
                value: .array([
                    .object([
                        ("name", "room"), ("presence", .bool(true)), ("join_leave", .bool(true)), ("history_size", .int(100)),
                        ("history_ttl", "10m"), ("force_recovery", .bool(true)), ("allow_subscribe_for_client", .bool(true)),
                        ("allow_publish_for_subscriber", .bool(true)), ("allow_history_for_subscriber", .bool(true)),
                        ("allow_presence_for_subscriber", .bool(true)),
                    ])
                ])),
            Entry(key: "engine", value: "redis", active: false),
            Entry(key: "redis_addresses", value: .array(["127.0.0.1:6379"]), active: false),
        ]
    }

    /// `text` as comment lines of at most about 100 characters, broken between words.
    static func commentLines(_ text: String) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty, line.count + word.count >= 98 {
                lines.append("# " + line)
                line = ""
            }
            line += line.isEmpty ? String(word) : " " + word
        }
        if !line.isEmpty { lines.append("# " + line) }
        return lines
    }

    /// The template in `format`, with fresh secrets.
    static func text(_ format: ConfigurationDocument.Format, now: Date = Date()) -> String {
        let entries = entries(tokenSecret: GeneratedSecrets.randomHex(), apiKey: GeneratedSecrets.randomHex())
        let header = [
            "Gondola configuration, written by `gondola genconfig` on \(now.formatted(.iso8601)).",
            "Every key is described in docs/configuration.md; `gondola checkconfig --config <file>` checks a change.",
        ]
        switch format {
        case .yaml: return yaml(entries, header: header)
        case .toml: return toml(entries, header: header)
        case .json: return json(entries)
        }
    }

    /// Writes the template for `path`'s format to `path`, readable by its owner only (it holds
    /// secrets); an existing file is left as it is and refused.
    public static func write(to path: String) throws(ConfigurationError) {
        guard let format = ConfigurationDocument.Format(path: path) else {
            throw ConfigurationError(
                "genconfig: '\(path)' has an unknown format, expected a name ending in \(ConfigurationDocument.Format.extensions)")
        }
        guard !FileManager.default.fileExists(atPath: path) else {
            throw ConfigurationError("genconfig: '\(path)' exists already; it is left as it is (remove it or name another file)")
        }
        guard FileManager.default.createFile(atPath: path, contents: Data(text(format).utf8), attributes: [.posixPermissions: 0o600]) else {
            throw ConfigurationError("genconfig: cannot write '\(path)'")
        }
    }

    private static func yaml(_ entries: [Entry], header: [String]) -> String {
        var lines = header.map { "# " + $0 }
        for entry in entries {
            lines += [""] + commentLines(entry.comment)
            let prefix = entry.active ? "" : "# "
            if case let .array(items) = entry.value, case .object = items.first {
                lines.append(prefix + entry.key + ":")
                for case let .object(members) in items {
                    for (index, member) in members.enumerated() {
                        lines.append(prefix + (index == 0 ? "  - " : "    ") + "\(member.key): \(member.value.text)")
                    }
                }
            } else {
                lines.append(prefix + "\(entry.key): \(entry.value.text)")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// TOML wants plain keys before the first table, so arrays of tables come last.
    private static func toml(_ entries: [Entry], header: [String]) -> String {
        var lines = header.map { "# " + $0 }
        var tables: [String] = []
        for entry in entries {
            let prefix = entry.active ? "" : "# "
            if case let .array(items) = entry.value, case .object = items.first {
                tables += [""] + commentLines(entry.comment)
                for case let .object(members) in items {
                    tables.append(prefix + "[[\(entry.key)]]")
                    tables += members.map { prefix + "\($0.key) = \($0.value.text)" }
                }
            } else {
                lines += [""] + commentLines(entry.comment) + [prefix + "\(entry.key) = \(entry.value.text)"]
            }
        }
        return (lines + tables).joined(separator: "\n") + "\n"
    }

    private static func json(_ entries: [Entry]) -> String {
        let members = entries.filter(\.active).map { entry in
            "  \(JSON.string(entry.key).text): " + entry.value.text
        }
        return "{\n" + members.joined(separator: ",\n") + "\n}\n"
    }
}
