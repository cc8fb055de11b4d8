import Foundation
import GondolaHub
import GondolaProtocol
import Testing

@testable import GondolaServer

/// A user who holds a valid token is a user from their first connect, and a user the
/// server API names can be referred to before they ever connect.
@Suite struct KnownUsersTests {
    @Test func aUserWhoOnlyConnectedCanBeAddedAndIsNamedFromTheTokensInfo() async throws {
        let server = try await startTravelServer()
        // bob's token comes from the app's own backend, with his name in `info`; he calls nothing.
        let token = try await ConnectionTokens(secret: RunningServer.secret).mint(user: "bob", info: ["name": "Bob Builder"])
        let bob = try await LiveClient.connect(server.webSocketURL, token: token)
        let carl = try await server.client("carl")
        let alice = try await server.client("alice")
        #expect(try await alice.rpc("friend.add", ["user": "bob"])["friends"] == false)
        #expect(try await alice.rpc("friend.add", ["user": "carl"])["friends"] == false, "named after the id without info")
        #expect(try await alice.rpc("profile.get", ["user": "bob"])["name"] == "Bob Builder")
        #expect(try await alice.rpc("profile.get", ["user": "carl"])["name"] == "carl")
        // A name the user chose is kept when a later token names them otherwise.
        _ = try await bob.rpc("profile.update", ["name": "Bobby"])
        await bob.close()
        let again = try await LiveClient.connect(
            server.webSocketURL,
            token: try await ConnectionTokens(secret: RunningServer.secret).mint(user: "bob", info: ["name": "Robert"]))
        #expect(try await alice.rpc("profile.get", ["user": "bob"])["name"] == "Bobby")
        // Nobody is still nobody.
        do {
            _ = try await alice.rpc("friend.add", ["user": "nobody"])
            Issue.record("a user who never connected nor was named was accepted")
        } catch let failure as RPCFailure {
            #expect(failure.code == 107)
        }
        for client in [again, carl, alice] { await client.close() }
        try await server.stop()
    }

    @Test func aUserTheServerAPINamesIsKnownBeforeTheyConnect() async throws {
        let server = try await startTravelServer()
        let trip = try await server.createTrip(hosts: ["hana"], travellers: ["dora"])
        let hana = try await server.client("hana")
        #expect(try await hana.rpc("profile.get", ["user": "dora"])["user"] == "dora")
        #expect(try await hana.rpc("friend.add", ["user": "dora"])["source"] == "trip")
        let chat = try await hana.rpc("chat.create", ["members": ["dora"]])
        #expect(chat["chat"]?["id"]?.stringValue?.isEmpty == false)
        #expect(try await hana.rpc("trip.members", ["trip": .string(trip)])["members"]?.arrayValue.count == 2)
        await hana.close()
        try await server.stop()
    }
}
