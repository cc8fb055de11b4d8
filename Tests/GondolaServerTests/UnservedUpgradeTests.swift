import Foundation
import GondolaServer
import Testing

/// A request that asks to upgrade to HTTP/2 in clear text (`Upgrade: h2c`, as the JDK's
/// `HttpClient` and `curl --http2` send on `http://`) is answered over HTTP/1.1 on every
/// listener and route, bodies included, then its connection closes; the next connection is
/// served as usual.
@Suite struct UnservedUpgradeTests {
    static let upgradeFields = "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n"

    /// Sends `method path` with `body` and the h2c upgrade fields; answers the status and body.
    static func ask(port: Int, _ method: String, _ path: String, body: String = "", extra: String = "") async throws -> (Int, String) {
        let connection = try RawConnection(port: port)
        let head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(upgradeFields)\(extra)Content-Length: \(body.utf8.count)\r\n\r\n"
        try connection.write(Array((head + body).utf8))
        let headers = try await connection.responseHeaders()
        let status = Int(headers.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
        #expect(headers.first?.hasPrefix("HTTP/1.1 ") == true && RawConnection.header("connection", in: headers) == "close", "\(headers)")
        let received = try await connection.readToEnd()
        return (status, String(decoding: received, as: UTF8.self))
    }

    @Test func everyRouteOfBothListenersAnswersOverHTTP1() async throws {
        var configuration = RunningServer.configuration()
        configuration.internalListen = ("127.0.0.1", 0)
        let internalPort = AsyncStream.makeStream(of: Int.self)
        let server = try await RunningServer.start(configuration, onInternalServerRunning: { internalPort.continuation.yield($0) })
        var ports = internalPort.stream.makeAsyncIterator()
        let operations = try #require(await ports.next())
        let key = "X-API-Key: \(RunningServer.apiKey)\r\n"
        let (health, healthBody) = try await Self.ask(port: operations, "GET", "/health")
        #expect(health == 200 && healthBody.contains("\"ok\""), "\(healthBody)")
        let (metrics, _) = try await Self.ask(port: operations, "GET", "/metrics")
        #expect(metrics == 200)
        let (api, apiBody) = try await Self.ask(port: operations, "POST", "/api/info", body: "{}", extra: key)
        #expect(api == 200 && apiBody.contains("\"nodes\""), "\(apiBody)")
        let (refused, refusedBody) = try await Self.ask(port: operations, "POST", "/api/info", body: "{}")
        #expect(refused == 401 && refusedBody.contains("X-API-Key"), "\(refusedBody)")
        let (page, _) = try await Self.ask(port: server.port, "GET", "/host/")
        #expect(page == 200)
        let (emulation, _) = try await Self.ask(port: server.port, "POST", "/emulation", body: "{}")
        #expect(emulation == 400)
        let (missing, _) = try await Self.ask(port: server.port, "GET", "/nowhere")
        #expect(missing == 404)
        // The server goes on: a plain request on a new connection.
        let (status, _) = try await server.get("/host/")
        #expect(status == 200)
        try await server.stop()
    }
}
