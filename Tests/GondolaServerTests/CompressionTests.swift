import Foundation
import GondolaHub
import GondolaProtocol
import GondolaTestSupport
import Testing

/// permessage-deflate on the WebSocket endpoint over real sockets: negotiated only when
/// enabled and offered, frames from the size threshold up compressed, the same
/// publications for compressed (with and without context takeover, whether the server or
/// the client chose it) and plain clients
/// in both encodings, and bad compressed
/// input closing only its own connection.
@Suite struct CompressionTests {
    static let extensionOffer = "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits"

    static func compressingServer(minBytes: Int = 200, enabled: Bool = true, contextTakeover: Bool = false) async throws -> RunningServer {
        var configuration = RunningServer.configuration()
        configuration.webSocketCompression = enabled
        configuration.webSocketCompressionMinBytes = minBytes
        configuration.webSocketCompressionContextTakeover = contextTakeover
        return try await RunningServer.start(configuration)
    }

    /// A position-frame-like publication; frame `n` differs from `n - 1` in one traveller.
    static func frame(_ n: Int) -> JSON {
        [
            "positions": .array(
                (0..<10).map { index in
                    [
                        "user": .string("traveller-\(index)"),
                        "lat": .double(45.3 + Double(index) / 1000 + Double(index == n % 10 ? n : 0) / 100_000),
                        "lon": 6.58, "ts": .int(1_790_000_000_000 + Int64(n)),
                    ]
                })
        ]
    }

    @Test(arguments: ProtocolEncoding.allCases, [false, true])
    func compressedAndPlainClientsGetTheSamePublications(encoding: ProtocolEncoding, contextTakeover: Bool) async throws {
        let server = try await Self.compressingServer(contextTakeover: contextTakeover)
        let compressed = try await server.client("deflate", encoding: encoding, compressed: true)
        let plain = try await server.client("plain", encoding: encoding)
        // A client that asks the server to compress every message on its own.
        let alone = try await LiveClient.connect(
            server.webSocketURL, token: try await server.token("alone"), encoding: encoding, compressed: true, noContextTakeover: true)
        for client in [compressed, plain, alone] { _ = try await client.subscribe("room:z") }
        var expected: [JSON] = []
        for n in 0..<30 {
            // Small ones stay under the threshold.
            let data: JSON = n % 5 == 0 ? ["n": .int(Int64(n))] : Self.frame(n)
            expected.append(data)
            _ = try await server.server.node.publish(channel: "room:z", data: Payload(data))
        }
        // A large message from the compressing client is inflated by the server.
        let large: JSON = ["text": .string(String(repeating: "powder day ", count: 300))]
        let published = try await compressed.call(.publish(channel: "room:z", data: Payload(large)))
        guard case .publish = published.body else {
            Issue.record("\(published)")
            return
        }
        expected.append(large)
        #expect(try await compressed.awaitPublications("room:z", count: 31) == expected)
        #expect(try await plain.awaitPublications("room:z", count: 31) == expected)
        #expect(try await alone.awaitPublications("room:z", count: 31) == expected)
        try await server.stop()
    }

    @Test(arguments: [(true, true), (true, false), (false, true)])
    func framesAreCompressedOnlyWhenEnabledAndOffered(enabled: Bool, offered: Bool) async throws {
        let server = try await Self.compressingServer(enabled: enabled)
        let client = try RawWebSocket(port: server.port, headers: offered ? [Self.extensionOffer] : [])
        let negotiated = try await client.responseHeaders().contains { $0.lowercased().hasPrefix("sec-websocket-extensions: permessage-deflate") }
        #expect(negotiated == (enabled && offered))
        let token = try await server.token("raw")
        // One reply at a time (each under the compression threshold, so sent as it is): the
        // subscribe reply has left before the publications, which then come in frames of their own.
        for (id, command) in [(1, #"{"id":1,"connect":{"token":"\#(token)"}}"#), (2, #"{"id":2,"subscribe":{"channel":"room:w"}}"#)] {
            try client.sendText(Array(command.utf8))
            var reply = try await client.nextFrame()
            while !String(decoding: reply.payload, as: UTF8.self).contains(#""id":\#(id)"#) { reply = try await client.nextFrame() }
        }
        let node = server.server.node

        // Under the threshold: sent as it is.
        _ = try await node.publish(channel: "room:w", data: Payload(["n": 1]))
        var small = try await client.nextFrame()
        while small.rsv1 || !String(decoding: small.payload, as: UTF8.self).contains(#""n":1"#) { small = try await client.nextFrame() }
        // From the threshold up: compressed when negotiated.
        let frame = Payload(Self.frame(1))
        _ = try await node.publish(channel: "room:w", data: frame)
        let large = try await client.nextFrame()
        #expect(large.rsv1 == negotiated)
        if negotiated {
            #expect(large.payload.count < frame.bytes.count / 2, "\(large.payload.count) compressed bytes for \(frame.bytes.count)")
        } else {
            #expect(String(decoding: large.payload, as: UTF8.self).contains(frame.description))
        }
        try await server.stop()
    }

    @Test(arguments: ["server_max_window_bits=8", "server_max_window_bits=16", "client_max_window_bits=20", "server_max_window_bits=wide"])
    func anOfferWithWindowsZlibCannotUseIsDeclinedAndServedUncompressed(parameter: String) async throws {
        let server = try await Self.compressingServer()
        let healthy = try await server.client("healthy", compressed: true)
        _ = try await healthy.subscribe("room:windows")
        let client = try RawWebSocket(port: server.port, headers: ["Sec-WebSocket-Extensions: permessage-deflate; \(parameter)"])
        let headers = try await client.responseHeaders()
        #expect(headers.first?.contains("101") == true, "\(headers)")
        #expect(!headers.contains { $0.lowercased().hasPrefix("sec-websocket-extensions") }, "\(headers)")
        let token = try await server.token("odd-windows")
        try client.sendText(Array((#"{"id":1,"connect":{"token":"\#(token)"}}"# + "\n" + #"{"id":2,"subscribe":{"channel":"room:windows"}}"#).utf8))
        let node = server.server.node
        try await eventually("both subscribers on room:windows") { node.channels()["room:windows"] == 2 }
        _ = try await node.publish(channel: "room:windows", data: Payload(Self.frame(4)))
        var frame = try await client.nextFrame()
        while !String(decoding: frame.payload, as: UTF8.self).contains("positions") { frame = try await client.nextFrame() }
        #expect(!frame.rsv1)
        #expect(try await healthy.awaitPublications("room:windows", count: 1) == [Self.frame(4)])
        try await server.stop()
    }

    @Test(arguments: [true, false])
    func aCompressedFrameThatDoesNotInflateClosesOnlyItsConnection(negotiated: Bool) async throws {
        let server = try await Self.compressingServer(enabled: negotiated)
        let healthy = try await server.client("healthy", compressed: true)
        _ = try await healthy.subscribe("room:bad")
        let bad = try RawWebSocket(port: server.port, headers: [Self.extensionOffer])
        _ = try await bad.responseHeaders()
        // RSV1 on bytes that are not a deflate stream (or on a connection without the extension).
        try bad.sendText([0xFF, 0xFE, 0xFD, 0x00, 0x13, 0x37], rsv1: true)
        // A stream that does not inflate is answered with 1007 (data inconsistent with the
        // message), a reserved bit without the extension with 1002 (protocol error).
        let code = try await bad.closeCode()
        #expect(code == (negotiated ? 1007 : 1002), "closed with \(code)")
        _ = try await server.server.node.publish(channel: "room:bad", data: Payload(Self.frame(2)))
        #expect(try await healthy.awaitPublications("room:bad", count: 1) == [Self.frame(2)])
        try await server.stop()
    }

    @Test func aMessageThatInflatesPastTheLimitClosesOnlyItsConnection() async throws {
        let server = try await Self.compressingServer()
        let healthy = try await server.client("healthy", compressed: true)
        _ = try await healthy.subscribe("room:bomb")
        let bomb = try await server.client("bomb", compressed: true)
        // 1 MiB of spaces deflates to about a kilobyte; the endpoint inflates at most 64 KiB.
        _ = try? await bomb.call(.publish(channel: "room:bomb", data: Payload(.string(String(repeating: " ", count: 1 << 20)))))
        try await eventually("the inflation bomb's connection closed") { bomb.isClosed }
        _ = try await server.server.node.publish(channel: "room:bomb", data: Payload(Self.frame(3)))
        #expect(try await healthy.awaitPublications("room:bomb", count: 1) == [Self.frame(3)])
        try await server.stop()
    }
}
