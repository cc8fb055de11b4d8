import Foundation
import GondolaHub
import GondolaProtocol
import Testing

@testable import GondolaServer

/// A reload (`GondolaServer.reload`, what SIGHUP runs): the keys it puts in force and those it
/// names as needing a restart, token keys that every holder of the verifier sees at once, and a
/// configuration with a problem refused whole.
@Suite struct ConfigurationReloadTests {
    private static let newSecret = "another-secret-of-at-least-32-bytes!"

    @Test func changedKeysAreTheOnesGivenDifferentlyAddedOrLeftOut() {
        #expect(ConfigurationReload.changedKeys(from: ["a": 1, "b": 2, "c": "x"], to: ["b": 3, "c": "x", "d": true]) == ["a", "b", "d"])
    }

    @Test func copiesOfAVerifierAdoptNewKeysTogether() async throws {
        let tokens = try await ConnectionTokens(secret: RunningServer.secret)
        let copy = tokens
        let newer = try await ConnectionTokens(secret: Self.newSecret)
        let oldToken = try await tokens.mint(user: "ana")
        tokens.adopt(newer)
        #expect(try await copy.verify(try await newer.mint(user: "ana")).user == "ana")
        await #expect(throws: TokenError.self) { try await copy.verify(oldToken) }
        // What the verifier signs now is signed with the new secret.
        #expect(try await newer.verify(try await copy.mint(user: "bo")).user == "bo")
    }

    @Test func aReloadPutsTheLiveKeysInForceAndNamesTheOthers() async throws {
        let running = RunningServer.configuration()
        let server = try await RunningServer.start(running)
        let before = ConfigurationCheck(configuration: running, problems: [], values: ["listen": "127.0.0.1:0"])
        var changed = running
        changed.hub.namespaces["news"] = NamespaceOptions(name: "news")
        changed.tokenHMACSecret = Self.newSecret
        changed.clientConnectionLimit = 7
        changed.listenPort = 9
        let after = ConfigurationCheck(
            configuration: changed, problems: [],
            values: [
                "listen": "127.0.0.1:9", "namespaces": [["name": "news"]], "token_hmac_secret": .string(Self.newSecret), "client_connection_limit": 7,
            ])
        let outcome = try await server.server.reload(after, running: before)
        #expect(outcome.applied == ["client_connection_limit", "namespaces", "token_hmac_secret"])
        #expect(outcome.needRestart == ["listen"] && outcome.endedSubscriptions == 0)
        #expect(server.server.node.configuration.namespace("news") != nil)
        let newToken = try await ConnectionTokens(secret: Self.newSecret).mint(user: "cy")
        #expect(try await server.server.tokens.verify(newToken).user == "cy")
        #expect(server.server.admission.refusal(origin: nil, host: nil, open: 7)?.status == .serviceUnavailable)

        // A configuration with a problem changes nothing.
        var broken = changed
        broken.hub.namespaces["news"] = nil
        let refused = ConfigurationCheck(configuration: broken, problems: [ConfigurationError("'ping_interval' expected a duration")], values: [:])
        await #expect(throws: ConfigurationError.self) { try await server.server.reload(refused, running: after) }
        #expect(server.server.node.configuration.namespace("news") != nil)
        try await server.stop()
    }
}
