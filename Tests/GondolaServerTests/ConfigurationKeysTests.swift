import Foundation
import GondolaHub
import GondolaProtocol
import GondolaServer
import Testing

/// Each configuration key is declared once, in its part's table: the loader, the flags, the
/// reload, `genconfig` and docs/configuration.md all come from the tables.
@Suite struct ConfigurationKeysTests {
    static let docsFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs").path

    @Test func theDocsHoldTheTablesTheCodeDeclares() throws {
        let path = Self.docsFolder + "/" + ConfigurationDocs.page
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(try ConfigurationDocs.render(text) == text, "\(path) differs from the key tables: run `swift run gondola keys --write-docs docs`")
        for key in ConfigurationLoader.keys { #expect(text.contains("| `\(key)` |"), "\(key) has a row in \(path)") }
    }

    @Test func everyKeyIsDeclaredOnceWithItsTypeDefaultAndDocLine() {
        let names = ConfigurationLoader.table.map(\.name)
        #expect(
            Set(names).count == names.count,
            "a key in two tables: \(Dictionary(grouping: names, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted())")
        for key in ConfigurationLoader.table.map(\.info) {
            #expect(!key.type.isEmpty && !key.defaultValue.isEmpty && key.doc.count > 10, "\(key.name) says what it takes and does")
            #expect(key.name.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "_" }, "\(key.name) is a snake_case name")
        }
        let options = NamespaceOptions.keys.map(\.name)
        #expect(Set(options).count == options.count && !options.contains("name"))
    }

    @Test func aTypedRowsDefaultIsTheSettingsOwn() {
        let row = { (name: String) in ConfigurationLoader.table.first { $0.name == name }?.info }
        #expect(row("ping_interval")?.defaultValue == DurationText.text(of: HubConfiguration().pingInterval))
        #expect(row("max_channels_per_client")?.defaultValue == "\(HubConfiguration().maxChannelsPerClient)")
        #expect(row("node_name")?.defaultValue == HubConfiguration().nodeName)
        #expect(row("location_rate")?.defaultValue == "5" && row("location_rate")?.type == "whole number 1 to 1000000")
        #expect(row("history_meta_ttl") == nil && NamespaceOptions.keys.first { $0.name == "history_meta_ttl" }?.info.defaultValue == "720h")
    }

    @Test(arguments: [
        (["--ping-interval", "5s", "--command-rate=7"], ["ping_interval": "5s", "command_rate": "7"]),
        (["--location-rate", "9", "--log-levels", "hub=debug"], ["location_rate": "9", "log_levels": "hub=debug"]),
        ([String](), [String: String]()),
    ])
    func everyKeyIsAFlag(arguments: [String], expected: [String: String]) throws {
        #expect(try ConfigurationFlags.parse(arguments) == expected)
    }

    @Test(arguments: [
        (["--bogus", "1"], "flag --bogus: unknown key 'bogus'"),
        (["--listen"], "flag --listen needs a value"),
        (["--listen", "a:1", "--listen=b:2"], "flag --listen is given twice"),
        (["listen", "a:1"], "'listen' is not a flag"),
    ])
    func aBadFlagIsRefusedNamingIt(arguments: [String], message: String) {
        #expect {
            try ConfigurationFlags.parse(arguments)
        } throws: { error in
            (error as? ConfigurationError)?.description.contains(message) == true
        }
    }

    @Test func aFlagReadsAsItsKeyWouldFromTheFile() throws {
        let flags = try ConfigurationFlags.parse(["--websocket-compression-level", "6", "--client-connection-limit=12", "--admin-web-path", "x"])
        let configuration = try ConfigurationLoader.load(file: nil, environment: [:], flags: flags)
        #expect(configuration.webSocketCompressionLevel == 6 && configuration.clientConnectionLimit == 12 && configuration.admin.webPath == "x")
        #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.load(file: nil, environment: [:], flags: try ConfigurationFlags.parse(["--websocket-compression-level", "10"]))
        }
    }

    @Test func aReloadTakesTheKeysTheTablesMarkReloadable() {
        let live = ConfigurationReload.liveKeys
        #expect(live.isSuperset(of: ["namespaces", "token_hmac_secret", "allowed_origins", "proxy_rpc_endpoint", "command_rate"]))
        #expect(live.isDisjoint(with: ["listen", "max_frame_bytes", "database", "engine", "node_name", "resorts"]))
    }
}
