import Foundation
import GondolaProtocol
import GondolaServer
import GondolaTravel
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
        configuration.domainSettings.values["host_page"] = .string(Self.pageFolder)
        configuration.devLogin = true
        configuration.domainSettings.values["map_tiles_url"] = "https://tiles.example/{z}/{x}/{y}.png"
        configuration.domainSettings.values["telegram_bot_username"] = "gondola_bot"
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

    /// The travel domain checks its keys when the server starts (`TravelSettings`): the
    /// configuration loads, the start stops naming the key.
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
                _ = try TravelSettings(try ConfigurationLoader.load(file: file, environment: [:], flags: [:]).domainSettings)
                Issue.record("accepted \(json)")
            } catch {
                #expect("\(error)".contains(expected), "\(error)")
            }
        }
    }
}
