import Foundation
import GondolaProtocol
import Logging
import Testing

@testable import GondolaServer

/// `log_format`, `log_level` and `log_levels`: read from each source, bad values refused by
/// name, a component's logger at its own level, and JSON lines that a collector can parse.
@Suite struct LogSettingsTests {
    @Test func theKeysAreReadFromTheEnvironmentAndBadValuesAreRefusedNamingThem() throws {
        let loaded = try ConfigurationLoader.load(
            file: nil, environment: ["GONDOLA_LOG_FORMAT": "json", "GONDOLA_LOG_LEVEL": "warning", "GONDOLA_LOG_LEVELS": "hub=debug, cluster=error"],
            flags: [:])
        #expect(loaded.logging.format == .json && loaded.logging.level == .warning)
        #expect(loaded.logging.componentLevels == ["hub": .debug, "cluster": .error])
        #expect(try ConfigurationLoader.load(file: nil, environment: [:], flags: [:]).logging.format == .text)
        for (key, value, expected) in [
            ("GONDOLA_LOG_FORMAT", "xml", "'log_format' expected one of text, json, got 'xml'"),
            ("GONDOLA_LOG_LEVEL", "loud", "'log_level' expected one of trace, debug, info, notice, warning, error, critical, got 'loud'"),
            ("GONDOLA_LOG_LEVELS", "nowhere=debug", "'log_levels' names no component 'nowhere' (components: server, http, connections"),
            ("GONDOLA_LOG_LEVELS", "hub=loud", "'log_levels.hub' expected one of trace, debug"),
            ("GONDOLA_LOG_LEVELS", "hub", "'log_levels' expected component levels such as hub=debug, got 'hub'"),
        ] {
            let problems = ConfigurationLoader.check(file: nil, environment: [key: value], flags: [:]).problems.map(\.description)
            #expect(problems.count == 1 && problems[0].hasPrefix("environment variable \(key): \(expected)"), "\(problems)")
        }
    }

    @Test func aComponentLogsAtItsOwnLevelWithItsNameAndTheOthersAtTheLoggersLevel() {
        var settings = LogSettings()
        settings.componentLevels = ["hub": .debug]
        var root = Logger(label: "gondola", factory: { JSONLineLogHandler(label: $0) })
        root.logLevel = .warning
        let hub = root.component("hub", settings)
        let cluster = root.component("cluster", settings)
        #expect(hub.logLevel == .debug && hub[metadataKey: "component"] == "hub")
        #expect(cluster.logLevel == .warning && cluster[metadataKey: "component"] == "cluster")
        #expect(root.logLevel == .warning && root[metadataKey: "component"] == nil)
    }

    @Test func aJSONLineCarriesTheEventAndItsMetadataWithTheirShapes() throws {
        let event = LogEvent(
            level: .warning, message: "refused \"origin\"\nnext line", metadata: nil, source: "GondolaServer", file: #fileID, function: #function,
            line: #line)
        let metadata: Logger.Metadata = [
            "component": "connections", "origin": "https://evil.example", "limits": ["a", "b"], "peer": ["host": "127.0.0.1", "port": "5"],
        ]
        let line = JSONLineLogHandler.line(event, label: "gondola", metadata: metadata, now: Date(timeIntervalSince1970: 1_798_675_200.25))
        #expect(line.hasSuffix("\n") && line.dropLast().contains("\n") == false)
        let parsed = try JSONParser.parse(String(line.dropLast()))
        guard case let .object(members) = parsed else {
            Issue.record("not an object: \(line)")
            return
        }
        #expect(members.map(\.key) == ["time", "level", "component", "message", "label", "limits", "origin", "peer"])
        #expect(parsed["time"] == "2026-12-31T00:00:00.250Z")
        #expect(parsed["level"] == "warning" && parsed["component"] == "connections" && parsed["label"] == "gondola")
        #expect(parsed["message"] == "refused \"origin\"\nnext line")
        #expect(parsed["limits"] == ["a", "b"] && parsed["peer"] == ["host": "127.0.0.1", "port": "5"])
    }
}

/// A configuration never shows its secrets, however it is printed: service-lifecycle's debug
/// line about the running services printed the configuration inside them, secrets included.
@Suite struct ConfigurationRedactionTests {
    @Test func noWayOfPrintingAConfigurationShowsItsSecrets() throws {
        var configuration = RunningServer.configuration()
        configuration.database = "postgres://gondola:pg-password-1@db.example:5432/gondola"
        let check = ConfigurationCheck(configuration: configuration, problems: [], values: ["api_key": "k"])
        var dumped = ""
        dump(check, to: &dumped)
        for text in [
            "\(configuration)", String(reflecting: configuration), "\([configuration])", "\(check)", String(reflecting: check), dumped,
            "\((server: 1, check: check))",
        ] {
            for secret in [RunningServer.secret, RunningServer.apiKey, "pg-password-1"] {
                #expect(!text.contains(secret), "\(text)")
            }
        }
        #expect("\(configuration)".contains("db.example:5432"))
    }
}
