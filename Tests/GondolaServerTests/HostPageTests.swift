import Foundation
import GondolaProtocol
import GondolaServer
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite struct HostPageTests {
    /// The repository's host page.
    static let pageFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("web/host").path

    @Test func thePageItsModulesAndItsConfigurationAreServed() async throws {
        var configuration = RunningServer.configuration()
        configuration.hostPage = Self.pageFolder
        configuration.devLogin = true
        configuration.mapTilesURL = "https://tiles.example/{z}/{x}/{y}.png"
        configuration.telegramBotUsername = "gondola_bot"
        let server = try await RunningServer.start(configuration)
        let (status, html) = try await server.get("/host/")
        #expect(status == 200 && html.contains("<title>Gondola — host</title>") && html.contains(#"<label for="dev-user">"#))
        let (moduleStatus, module) = try await server.get("/host/centrifuge.js")
        #expect(moduleStatus == 200 && module.contains("export class CentrifugeClient"))
        let (configStatus, text) = try await server.get("/host/config.json")
        let config = try JSONParser.parse(text)
        #expect(configStatus == 200 && config["dev_login"] == true && config["map_tiles_url"] == "https://tiles.example/{z}/{x}/{y}.png")
        #expect(config["telegram_bot"] == nil, "no Login Widget without a bot token to check its logins")
        #expect(try await server.get("/host/../Package.swift").0 == 404)
        #expect(try await server.get("/host/nothing.js").0 == 404)
        try await server.stop()
    }

    @Test func badPageSettingsAreNamed() {
        for (json, expected) in [
            (#"{"map_tiles_url":"ftp://tiles/{z}/{x}/{y}"}"#, "'map_tiles_url' expected an http(s) tile URL"),
            (#"{"map_tiles_url":"https://tiles.example/tile.png"}"#, "with {z}, {x} and {y}"),
            (#"{"telegram_bot_username":"@bot"}"#, "expected a bot's username"),
            (#"{"host_page":""}"#, "host_page"),
        ] {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("host-\(UUID().uuidString).json").path
            FileManager.default.createFile(atPath: file, contents: Data(json.utf8))
            do {
                _ = try ConfigurationLoader.load(file: file, environment: [:], flags: [:])
                Issue.record("accepted \(json)")
            } catch {
                #expect(error.description.contains(expected), "\(error.description)")
            }
        }
    }
}
