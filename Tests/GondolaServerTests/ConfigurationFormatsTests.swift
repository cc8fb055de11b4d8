import Foundation
import GondolaHub
import GondolaProtocol
import Testing

@testable import GondolaServer

/// Configuration files in JSON, YAML and TOML: the same keys give the same configuration,
/// every problem is named with its key and line, a file that does not parse is named with its
/// line and column, and `genconfig`'s template loads in each format.
@Suite final class ConfigurationFormatsTests {
    /// A folder of its own for each test's files, removed after it.
    private let folder: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-config-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    deinit { try? FileManager.default.removeItem(atPath: folder) }

    private func file(_ name: String, _ text: String) throws -> String {
        let path = folder + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    private func problems(_ name: String, _ text: String) throws -> [String] {
        ConfigurationLoader.check(file: try file(name, text), environment: [:], flags: [:]).problems.map(\.description)
    }

    @Test func theSameKeysInEachFormatGiveTheSameConfiguration() throws {
        let json = """
            {
              "listen": "127.0.0.1:8100",
              "ping_interval": "20s",
              "websocket_compression": true,
              "client_connection_limit": 5000,
              "allowed_origins": ["https://app.example", "https://*.example.org"],
              "token_hmac_secret_previous": "an-old-secret-that-is-long-enough-for-hs256",
              "token_hmac_secret_previous_until": "2026-12-31T00:00:00Z",
              "location_interval": "500ms",
              "namespaces": [
                {"name": "room", "presence": true, "history_size": 50, "history_ttl": "5m", "allow_subscribe_for_client": true},
                {"name": "news", "history_size": 10, "history_ttl": "1h"}
              ]
            }
            """
        let yaml = """
            listen: 127.0.0.1:8100
            ping_interval: 20s
            websocket_compression: true
            client_connection_limit: 5000
            allowed_origins:
              - https://app.example
              - "https://*.example.org"
            token_hmac_secret_previous: an-old-secret-that-is-long-enough-for-hs256
            token_hmac_secret_previous_until: 2026-12-31T00:00:00Z
            location_interval: 500ms
            namespaces:
              - name: room
                presence: true
                history_size: 50
                history_ttl: 5m
                allow_subscribe_for_client: true
              - {name: news, history_size: 10, history_ttl: 1h}
            """
        let toml = """
            listen = "127.0.0.1:8100"
            ping_interval = "20s"
            websocket_compression = true
            client_connection_limit = 5000
            allowed_origins = ["https://app.example", "https://*.example.org"]
            token_hmac_secret_previous = "an-old-secret-that-is-long-enough-for-hs256"
            token_hmac_secret_previous_until = 2026-12-31T00:00:00Z
            location_interval = "500ms"

            [[namespaces]]
            name = "room"
            presence = true
            history_size = 50
            history_ttl = "5m"
            allow_subscribe_for_client = true

            [[namespaces]]
            name = "news"
            history_size = 10
            history_ttl = "1h"
            """
        let loaded = try [("c.json", json), ("c.yaml", yaml), ("c.toml", toml)].map { name, text in
            try ConfigurationLoader.load(file: try file(name, text), environment: [:], flags: [:])
        }
        for configuration in loaded {
            #expect(configuration.listenHost == "127.0.0.1" && configuration.listenPort == 8100)
            #expect(configuration.webSocketCompression && configuration.clientConnectionLimit == 5000)
            #expect(configuration.hub.pingInterval == .seconds(20))
            #expect(configuration.allowedOrigins.refusal(origin: "https://maps.example.org", host: "hub") == nil)
            #expect(configuration.allowedOrigins.refusal(origin: "https://other.example", host: "hub") != nil)
            #expect(configuration.tokenHMACSecretPreviousUntil == Date(timeIntervalSince1970: 1_798_675_200))
            #expect(configuration.domainSettings.values["location_interval"] == "500ms")
            #expect(configuration.hub.namespaces == loaded[0].hub.namespaces)
            #expect(configuration.hub.namespaces["room"]?.historySize == 50 && configuration.hub.namespaces["room"]?.presence == true)
            #expect(configuration.hub.namespaces["news"]?.historyTTL == .seconds(3600))
        }
    }

    @Test func everyProblemIsNamedWithItsKeyAndLine() throws {
        let yaml = """
            listen: nowhere
            database: var/x.sqlite

            ping_interval: soon
            bogus_key: 1
            token_hmac_secret: short
            """
        #expect(
            try problems("bad.yaml", yaml) == [
                "config file \(folder)/bad.yaml line 1: 'listen' expected host:port, got 'nowhere'",
                "config file \(folder)/bad.yaml line 4: 'ping_interval' expected a duration like 250ms, 25s, 10m or 1h, got \"soon\"",
                "config file \(folder)/bad.yaml line 5: unknown key 'bogus_key' (known keys: \(ConfigurationLoader.keys.joined(separator: ", ")))",
                "config file \(folder)/bad.yaml line 6: 'token_hmac_secret' must be at least 32 bytes for HS256, got 5 (leave it out to have one generated)",
            ])
        let toml = """
            # a comment first
            listen = "nowhere"
            websocket_compression = "sometimes"

            [[namespaces]]
            name = "room"
            history_size = -1
            """
        #expect(
            try problems("bad.toml", toml) == [
                "config file \(folder)/bad.toml line 2: 'listen' expected host:port, got 'nowhere'",
                "config file \(folder)/bad.toml line 3: 'websocket_compression' expected true or false, got \"sometimes\"",
                "config file \(folder)/bad.toml line 5: 'namespaces[0].history_size' must be at least 0, got -1",
            ])
        // A member of a nested object is not a top-level key: only the outer one is named.
        let json = """
            {
              "listen": "nowhere",
              "nested": {"listen": 1,
                "ping_interval": 2},
              "ping_interval": "soon"
            }
            """
        let found = try problems("bad.json", json)
        #expect(found.count == 3)
        #expect(found[0] == "config file \(folder)/bad.json line 2: 'listen' expected host:port, got 'nowhere'")
        #expect(found[1].hasPrefix("config file \(folder)/bad.json line 3: unknown key 'nested'"))
        #expect(found[2].hasPrefix("config file \(folder)/bad.json line 5: 'ping_interval' expected a duration"))
        // The same rules for the environment and flags, after the file.
        let checked = ConfigurationLoader.check(
            file: try file("fine.yaml", "listen: 127.0.0.1:8000\n"), environment: ["GONDOLA_PING_INTERVAL": "soon"], flags: ["listen": "x"])
        #expect(
            checked.problems.map(\.description) == [
                "environment variable GONDOLA_PING_INTERVAL: 'ping_interval' expected a duration like 250ms, 25s, 10m or 1h, got \"soon\"",
                "flag --listen: 'listen' expected host:port, got 'x'",
            ])
    }

    @Test func theRulesAcrossKeysRunOnceEachKeyReads() throws {
        let yaml = """
            engine: postgres
            namespaces:
              - name: room
                subscribe_proxy_name: missing
            """
        #expect(
            try problems("across.yaml", yaml) == [
                "engine 'postgres' runs a cluster and needs database to be a postgres:// URL, got 'var/gondola.sqlite'",
                "namespace 'room' subscribe_proxy_name names the proxy 'missing', which 'proxies' does not define",
            ])
        // The enabled domains' own values are checked too; a disabled domain's are not read.
        #expect(
            try problems("domains.yaml", "crash_link_template: crash://open\nbcrypt_cost: 99\n") == [
                "crash: 'crash_link_template' must contain {id}, got 'crash://open'",
                "rentals: 'bcrypt_cost' expected a whole number from 4 to 31, got 99",
            ])
        #expect(try problems("travel.yaml", "domains: [travel]\ncrash_link_template: crash://open\n").isEmpty)
        let loadError = #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.load(file: try file("two.toml", "listen = \"a\"\nping_interval = \"b\"\n"), environment: [:], flags: [:])
        }
        #expect(loadError?.description.split(separator: "\n").count == 2)
    }

    @Test func aFileThatDoesNotParseIsNamedWithItsLineAndColumn() throws {
        #expect(
            try problems("s.json", "{\n  \"listen\": 1,\n}") == [
                "config file \(folder)/s.json line 3 column 1: not valid JSON: expected a member name"
            ])
        let toml = try problems("s.toml", "listen = \"127.0.0.1:8000\"\nping_interval = \n")
        #expect(toml.count == 1 && toml[0].hasPrefix("config file \(folder)/s.toml line 2 column 17: not valid TOML: "))
        let yaml = try problems("s.yaml", "listen: 127.0.0.1:8000\nnamespaces: [\n")
        #expect(yaml.count == 1 && yaml[0].hasPrefix("config file \(folder)/s.yaml line 3 column 1: not valid YAML: "))
        let twice = try problems("d.yaml", "listen: 127.0.0.1:8000\nlisten: 127.0.0.1:8001\n")
        #expect(twice.count == 1 && twice[0].contains("keys written twice: listen"))
        #expect(
            try problems("c.ini", "listen=1") == [
                "config file \(folder)/c.ini: unknown format, expected a name ending in .json, .yaml, .yml or .toml"
            ])
        #expect(try problems("list.yaml", "- listen\n") == ["config file \(folder)/list.yaml must hold a YAML mapping of keys to values"])
        #expect(
            ConfigurationLoader.check(file: folder + "/absent.yaml", environment: [:], flags: [:]).problems.first?.description.hasPrefix(
                "cannot read config file \(folder)/absent.yaml") == true)
    }

    @Test func theTemplateLoadsInEachFormatWithFreshSecretsAndIsNeverWrittenOverAFile() throws {
        var secrets: Set<String> = []
        for format in ConfigurationDocument.Format.allCases {
            let path = folder + "/config." + format.rawValue
            try ConfigurationTemplate.write(to: path)
            let checked = ConfigurationLoader.check(file: path, environment: [:], flags: [:])
            #expect(checked.problems.isEmpty, "\(format): \(checked.problems)")
            let configuration = checked.configuration
            #expect(configuration.tokenHMACSecret.count == 64 && configuration.apiKey.count == 64)
            #expect(configuration.internalListen?.port == 9000)
            #expect(configuration.hub.namespaces["room"]?.allowSubscribeForClient == true)
            secrets.insert(configuration.tokenHMACSecret)
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
            let text = try String(contentsOfFile: path, encoding: .utf8)
            if format != .json {
                // Each key written has its doc line (`ConfigurationLoader.table`) as the comment
                // on the lines before, wrapped.
                let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
                for entry in ConfigurationTemplate.entries(tokenSecret: "", apiKey: "") where entry.active {
                    let doc = try #require(ConfigurationLoader.table.first { $0.name == entry.key }).info.doc
                    let comment = ConfigurationTemplate.commentLines(doc)
                    let keyLine = lines.firstIndex { $0.hasPrefix(entry.key + ":") || $0.hasPrefix(entry.key + " =") || $0 == "[[\(entry.key)]]" }
                    #expect(keyLine.map { Array(lines[($0 - comment.count)..<$0]) == comment } == true, "\(format) \(entry.key)")
                    #expect(comment.allSatisfy { $0.count <= 110 })
                }
            }
            #expect(throws: ConfigurationError.self) { try ConfigurationTemplate.write(to: path) }
            #expect(try String(contentsOfFile: path, encoding: .utf8) == text)
        }
        #expect(secrets.count == ConfigurationDocument.Format.allCases.count)
        #expect(throws: ConfigurationError.self) { try ConfigurationTemplate.write(to: folder + "/config.ini") }
    }
}
