import Foundation
import GondolaProtocol
import GondolaTestSupport
import Testing

/// The WebSocket layer the sessions run on (NIO's frame codec and the session's channel
/// handler), over real sockets with a client that writes raw frames: pings, fragments,
/// the closing handshake, frames RFC 6455 forbids, upgrades to other paths, and
/// connections that hold no task while idle.
@Suite struct WebSocketLayerTests {
    /// A connected raw client: handshake read, `connect` answered.
    static func connected(_ server: RunningServer, user: String) async throws -> RawWebSocket {
        let client = try RawWebSocket(port: server.port)
        let status = try await client.responseHeaders().first ?? ""
        #expect(status.contains("101"), "\(status)")
        let token = try await server.token(user)
        try client.sendText(Array(#"{"id":1,"connect":{"token":"\#(token)"}}"#.utf8))
        let reply = try await client.nextFrame()
        #expect(String(decoding: reply.payload, as: UTF8.self).contains(#""id":1"#))
        return client
    }

    @Test func aPingIsAnsweredWithItsPayload() async throws {
        let server = try await RunningServer.start(RunningServer.configuration())
        let client = try await Self.connected(server, user: "pinger")
        try client.sendFrame(opcode: 0x9, Array("are you there".utf8))
        let pong = try await client.nextFrame()
        #expect(pong.opcode == 0xA)
        #expect(pong.payload == Array("are you there".utf8))
        try await server.stop()
    }

    @Test func aMessageSentInFragmentsIsHandledWhole() async throws {
        let server = try await RunningServer.start(RunningServer.configuration())
        let client = try RawWebSocket(port: server.port)
        _ = try await client.responseHeaders()
        let token = try await server.token("fragments")
        let message = Array((#"{"id":1,"connect":{"token":"\#(token)"}}"# + "\n" + #"{"id":2,"rpc":{"method":"server.time"}}"#).utf8)
        let third = message.count / 3
        try client.sendFrame(opcode: 0x1, Array(message[..<third]), fin: false)
        // A ping may come between the fragments of a message.
        try client.sendFrame(opcode: 0x9, [7])
        try client.sendFrame(opcode: 0x0, Array(message[third..<(2 * third)]), fin: false)
        try client.sendFrame(opcode: 0x0, Array(message[(2 * third)...]))
        var texts: [String] = []
        while !texts.contains(where: { $0.contains(#""id":2"#) }) {
            let frame = try await client.nextFrame()
            if frame.opcode == 0xA { #expect(frame.payload == [7]) } else { texts.append(String(decoding: frame.payload, as: UTF8.self)) }
        }
        let replies = texts.joined(separator: "\n")
        #expect(replies.contains(#""id":1,"connect""#), "\(replies)")
        #expect(replies.contains(#""ts""#), "\(replies)")
        try await server.stop()
    }

    /// Frames no conforming client sends, each written after `connect`.
    static let brokenFrames: [(name: String, frames: [(opcode: UInt8, payload: [UInt8], fin: Bool)])] = [
        ("a continuation with no message started", [(0x0, Array("{}".utf8), true)]),
        ("a new message inside a fragmented one", [(0x1, Array("{".utf8), false), (0x1, Array("{}".utf8), true)]),
        ("a fragmented ping", [(0x9, [1], false)]),
        ("a reserved opcode", [(0x3, [1], true)]),
    ]

    @Test(arguments: 0..<brokenFrames.count)
    func aFrameRFC6455ForbidsClosesOnlyItsConnectionWith1002(_ index: Int) async throws {
        let (name, frames) = Self.brokenFrames[index]
        let server = try await RunningServer.start(RunningServer.configuration())
        let healthy = try await server.client("healthy")
        _ = try await healthy.subscribe("room:broken")
        let client = try await Self.connected(server, user: "breaker")
        for frame in frames { try client.sendFrame(opcode: frame.opcode, frame.payload, fin: frame.fin) }
        #expect(try await client.closeCode() == 1002, "\(name)")
        _ = try await client.readToEnd()
        _ = try await server.server.node.publish(channel: "room:broken", data: Payload(.string("still here")))
        #expect(try await healthy.awaitPublications("room:broken", count: 1) == [.string("still here")])
        try await server.stop()
    }

    @Test func aClientsCloseIsEchoedAndItsConnectionEnds() async throws {
        let server = try await RunningServer.start(RunningServer.configuration())
        let client = try await Self.connected(server, user: "leaver")
        try client.sendFrame(opcode: 0x8, [0x03, 0xE8] + Array("bye".utf8))
        do {
            #expect(try await client.closeCode() == 1000)
        } catch {
            Issue.record("no close frame in answer: \(error)")
            throw error
        }
        _ = try await client.readToEnd()
        try await eventually("every connection closed") { server.server.openConnections == 0 }
        try await server.stop()
    }

    @Test func anUpgradeToAnotherPathIsRefusedWith404NamingTheEndpoint() async throws {
        let server = try await RunningServer.start(RunningServer.configuration())
        let client = try RawWebSocket(port: server.port, path: "/socket")
        let headers = try await client.responseHeaders()
        #expect(headers.first?.contains("404") == true, "\(headers)")
        let body = try JSONParser.parse(try await client.readToEnd())
        #expect(body["error"]?["code"] == 104)
        #expect(body["error"]?["message"]?.stringValue?.contains("/connection/websocket") == true, "\(body)")
        try await server.stop()
    }

    /// NIO upgrades only a connection's first request: an upgrade asked after another request
    /// on the same connection is redirected to itself with the connection closed, so that the
    /// client asks again on a new one.
    @Test func anUpgradeAfterAnotherRequestIsRedirectedToANewConnection() async throws {
        let server = try await RunningServer.start(RunningServer.configuration())
        let client = try RawWebSocket(
            port: server.port, path: "/connection/websocket?format=json",
            before: "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let health = try await client.responseHeaders()
        #expect(health.first?.contains("200") == true, "\(health)")
        #expect(String(decoding: try await client.responseBody(headers: health), as: UTF8.self).contains("ok"))
        let redirect = try await client.responseHeaders()
        #expect(redirect.first?.contains("307") == true, "\(redirect)")
        #expect(redirect.contains { $0.lowercased() == "location: /connection/websocket?format=json" }, "\(redirect)")
        #expect(redirect.contains { $0.lowercased() == "connection: close" }, "\(redirect)")
        try await server.stop()
    }

    /// Messages are handled by a task that lives only while messages wait: once twenty
    /// subscribed clients fall quiet, none of their connections holds one.
    @Test func idleConnectionsHoldNoTask() async throws {
        let server = try await RunningServer.start(RunningServer.configuration())
        var clients: [LiveClient] = []
        for index in 0..<20 {
            let client = try await server.client("idle-\(index)")
            _ = try await client.subscribe("room:idle")
            clients.append(client)
        }
        #expect(server.server.openConnections == 20)
        try await eventually("no connection holding a task") { server.server.connectionsHandlingMessages == 0 }
        // They are still served: a publication reaches every one.
        _ = try await server.server.node.publish(channel: "room:idle", data: Payload(.string("wake")))
        for client in clients { #expect(try await client.awaitPublications("room:idle", count: 1) == [.string("wake")]) }
        for client in clients { await client.close() }
        try await server.stop()
    }
}
