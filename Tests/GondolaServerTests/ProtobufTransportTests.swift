import GondolaHub
import GondolaProtocol
import Testing

/// The Protobuf encoding over a real WebSocket: the handshake, shared channels with
/// JSON clients, and bad frames that close only their own connection.
@Suite struct ProtobufTransportTests {
    @Test func theSubprotocolSelectsProtobufAndFramesAreBinary() async throws {
        let server = try await RunningServer.start()
        let token = try await server.token("alice")
        let frame = ProtocolEncoding.protobuf.frame([
            ProtocolEncoding.protobuf.encode(Command(id: 1, .connect(ConnectRequest(token: token)))),
            ProtocolEncoding.protobuf.encode(Command(id: 2, .rpc(method: "server.time", data: nil))),
        ])
        let conversation = try await converse(
            server.webSocketURL, [.binary(frame), .awaitMessages(2)], encoding: .protobuf, subprotocol: "centrifuge-protobuf")
        #expect(conversation.replies.map(\.id) == [1, 2])
        guard case let .rpc(data)? = conversation.replies.last?.body else {
            Issue.record("\(conversation.replies)")
            return
        }
        #expect(data?.value["ts"] != nil)
        try await server.stop()
    }

    @Test func protobufConnectionsHaveTheSameRateAndErrorLimits() async throws {
        // A rate that refills nothing while the test runs: the burst alone decides, however
        // slowly a loaded machine gets through the flood.
        var configuration = RunningServer.configuration()
        configuration.hub.commandRate = 0.001
        let server = try await RunningServer.start(configuration)
        let protobuf = ProtocolEncoding.protobuf
        let connect = protobufCommand(1, .connect(ConnectRequest(token: try await server.token("flood"))))
        // Three frames of 300 pings: 200 pass (the burst), the rest are answered 111, then 3013.
        let floods = stride(from: 2, to: 902, by: 300).map { start in
            protobuf.frame((UInt32(start)..<UInt32(start + 300)).map { protobuf.encode(Command(id: $0, .ping)) })
        }
        let flooded = try await converse(
            server.webSocketURL, [.binary(connect), .awaitMessages(1)] + floods.map(Step.binary) + [.awaitClose],
            encoding: .protobuf, subprotocol: ProtocolEncoding.protobufSubprotocol)
        #expect(flooded.closeCode == 3013)
        let refused = flooded.replies.filter { $0.errorCode == 111 }
        #expect(!refused.isEmpty && refused.allSatisfy { $0.id > 1 })
        // Twenty error replies in a row close with 3509.
        let missing = protobuf.frame((2..<30).map { protobuf.encode(Command(id: UInt32($0), .rpc(method: "missing", data: nil))) })
        let failing = try await converse(
            server.webSocketURL, [.binary(connect), .awaitMessages(1), .binary(missing), .awaitClose],
            encoding: .protobuf, subprotocol: ProtocolEncoding.protobufSubprotocol)
        #expect(failing.closeCode == 3509)
        #expect(failing.replies.contains { $0.errorCode == 104 })
        try await server.stop()
    }

    @Test func jsonAndProtobufSubscribersGetTheSamePublications() async throws {
        let server = try await RunningServer.start()
        let json = try await server.client("ann")
        let protobuf = try await server.client("bob", encoding: .protobuf)
        for client in [json, protobuf] {
            _ = try await client.subscribe(SubscribeRequest(channel: "room:both", recoverable: true))
        }
        _ = try await protobuf.call(.publish(channel: "room:both", data: Payload(["from": "protobuf"])))
        _ = try await json.call(.publish(channel: "room:both", data: Payload(["from": "json", "n": [1, 2.5]])))
        _ = try await server.api("publish", ["channel": "room:both", "data": ["from": "api"]])
        let expected: [JSON] = [["from": "protobuf"], ["from": "json", "n": [1, 2.5]], ["from": "api"]]
        for client in [json, protobuf] {
            #expect(try await client.awaitPublications("room:both", count: 3) == expected, "\(client.encoding)")
            #expect(client.offsets("room:both") == [1, 2, 3], "\(client.encoding)")
        }
        await json.close()
        await protobuf.close()
        try await server.stop()
    }

    @Test func badProtobufFramesCloseOnlyTheirConnection() async throws {
        let server = try await RunningServer.start()
        let healthy = try await server.client("healthy", encoding: .protobuf)
        _ = try await healthy.subscribe(SubscribeRequest(channel: "room:ok"))
        let connect = protobufCommand(1, .connect(ConnectRequest(token: try await server.token("eve"))))
        // Field 20 is no method of the protocol.
        let unknownMethod: [UInt8] = [5, 0x08, 0x02, 0xA0, 0x01, 0x01]
        let cases: [([Step], String)] = [
            ([.binary(connect), .awaitMessages(1), .binary([0x80])], "truncated length prefix"),
            ([.binary(connect), .awaitMessages(1), .binary([0x09, 0x08, 0x02])], "remain in the frame"),
            ([.binary(connect), .awaitMessages(1), .binary(unknownMethod)], "unknown method"),
            ([.binary(connect), .awaitMessages(1), .text(#"{"id":2,"ping":{}}"#)], "text frame on a Protobuf connection"),
            ([.binary(protobufCommand(1, .ping))], "first command must be connect"),
            ([.binary(connect), .awaitMessages(1), .binary([UInt8](repeating: 0, count: 5000))], "exceeds max_frame_bytes 4096"),
        ]
        for (steps, reason) in cases {
            let conversation = try await converse(server.webSocketURL + "?format=protobuf", steps + [.awaitClose], encoding: .protobuf)
            #expect(conversation.closeCode == 3501, "\(reason)")
            #expect(conversation.closeReason?.contains(reason) == true, "\(conversation.closeReason ?? "no reason")")
        }
        _ = try await server.api("publish", ["channel": "room:ok", "data": ["still": "served"]])
        #expect(try await healthy.awaitPublications("room:ok", count: 1) == [["still": "served"]])
        await healthy.close()
        try await server.stop()
    }
}
