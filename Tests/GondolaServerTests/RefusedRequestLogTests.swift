import Foundation
import GondolaTestSupport
import Logging
import Testing

/// Every HTTP route's refusal is logged once with who, what and why, the domains' routes
/// included; a secret in a path stays out of the log, and the routes that log their own
/// refusals (the server API) are not logged twice.
@Suite struct RefusedRequestLogTests {
    @Test func aRefusedRequestIsLoggedWithPeerRouteStatusAndReason() async throws {
        let recorded = RecordedLog()
        var configuration = RunningServer.configuration()
        configuration.domains = ["crash"]
        let server = try await RunningServer.start(configuration, logger: recorded.logger(level: .info))
        let secret = "share-token-\(UUID().uuidString)"
        let (shared, _) = try await server.get("/api/shared/crash/\(secret)")
        #expect(shared == 404)
        let (unknown, _) = try await server.get("/no/such/page")
        #expect(unknown == 404)
        let (wrongKey, _) = try await server.post("/api/publish", body: "{}", apiKey: "wrong")
        #expect(wrongKey == 401)
        try await server.stop()

        let refused = recorded.all.filter { $0.message == "HTTP request refused" }
        let link = try #require(refused.first { $0.metadata["route"] == "/api/shared/crash/{token}" }, "\(refused.map(\.metadata))")
        #expect(link.metadata["peer"] == "127.0.0.1" && link.metadata["method"] == "GET" && link.metadata["status"] == "404")
        #expect(link.metadata["code"] == "103" && link.metadata["reason"]?.contains("this link is not valid") == true)
        #expect(refused.contains { $0.metadata["route"] == "(no route)" && $0.metadata["path"] == "/no/such/page" && $0.metadata["status"] == "404" })
        #expect(!recorded.all.contains { line in line.metadata.values.contains { $0.contains(secret) } }, "the path's token is logged")
        // The server API logs its own refusal, once.
        #expect(!refused.contains { $0.metadata["route"]?.hasPrefix("/api/{") == true })
        #expect(recorded.all.filter { $0.message == "server API call refused" }.count == 1)
    }
}
