import Foundation
import GondolaHub
import GondolaProtocol
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Payloads over real sockets: what JSON clients, Protobuf clients and the server API
/// publish reaches subscribers of both encodings byte for byte — live, through history,
/// through recovery and, for durable namespaces, after a restart of the hub.
@Suite struct PayloadPassThroughTests {
    /// What is published, in order, and how each encoding reads it back.
    struct Sent {
        let bytes: [UInt8]
        let isJSON: Bool

        /// The payload a subscriber of `encoding` receives: the bytes; in JSON, the value
        /// without the white space around it (which a JSON frame cannot tell apart from
        /// the frame's own), and a binary payload's base64 as a JSON string.
        func received(in encoding: ProtocolEncoding) -> [UInt8] {
            guard encoding == .json else { return bytes }
            guard isJSON else { return Array("\"\(Data(bytes).base64EncodedString())\"".utf8) }
            return Array(String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespaces).utf8)
        }
    }

    static let fromJSONClient = #"{"input": "x", "price": 1.50, "e": "\u00e9"}"#
    static let fromProtobufClient = "  12345678901234567890 "
    static let binary: [UInt8] = [0x0A, 0x03, 0x66, 0x6F, 0x6F, 0x10, 0xFF, 0x01, 0x00, 0xC3]
    static let fromAPI = #"[ 1.0, -0.0, "\ud83d\ude00", {"k" : null} ]"#

    @Test(arguments: ["room", "board"])
    func everyPayloadArrivesAsPublishedLiveInHistoryAndInRecovery(namespace: String) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-payloads-\(UUID().uuidString)").path
        var server = try await RunningServer.start(RunningServer.configuration(folder: folder))
        let channel = "\(namespace):bytes"
        let json = try await server.client("ann")
        let protobuf = try await server.client("bob", encoding: .protobuf)
        var epoch = ""
        for client in [json, protobuf] {
            epoch = try await client.subscribe(SubscribeRequest(channel: channel, recoverable: true)).epoch
        }
        _ = try await json.call(.publish(channel: channel, data: Payload(received: Array(Self.fromJSONClient.utf8))))
        _ = try await protobuf.call(.publish(channel: channel, data: Payload(received: Array(Self.fromProtobufClient.utf8))))
        _ = try await protobuf.call(.publish(channel: channel, data: Payload(received: Self.binary)))
        let (status, answer) = try await server.post("/api/publish", body: #"{"channel":"\#(channel)","data":\#(Self.fromAPI)}"#)
        #expect(status == 200 && answer["error"] == nil, "\(answer.text)")
        _ = try await server.api("publish", ["channel": .string(channel), "b64data": .string(Data(Self.binary).base64EncodedString())])
        let sent = [
            Sent(bytes: Array(Self.fromJSONClient.utf8), isJSON: true),
            Sent(bytes: Array(Self.fromProtobufClient.utf8), isJSON: true),
            Sent(bytes: Self.binary, isJSON: false),
            Sent(bytes: Array(Self.fromAPI.utf8), isJSON: true),
            Sent(bytes: Self.binary, isJSON: false),
        ]

        for client in [json, protobuf] {
            let expected = sent.map { $0.received(in: client.encoding) }
            let live = try await client.awaitPayloads(channel, count: sent.count)
            #expect(live.map(\.bytes) == expected, "live, \(client.encoding)")
            #expect(try await history(client, channel).map(\.bytes) == expected, "history, \(client.encoding)")
        }

        // A subscriber that saw only the first publication recovers the rest as sent.
        for encoding in ProtocolEncoding.allCases {
            let late = try await server.client("cy-\(encoding)", encoding: encoding)
            let result = try await late.subscribe(SubscribeRequest(channel: channel, recover: true, epoch: epoch, offset: 1, recoverable: true))
            #expect(result.recovered, "\(encoding)")
            #expect(result.publications.map(\.data.bytes) == sent.dropFirst().map { $0.received(in: encoding) }, "recovery, \(encoding)")
            await late.close()
        }
        await json.close()
        await protobuf.close()

        guard namespace == "board" else {
            try await server.stop()
            return
        }
        // A durable stream reads the same bytes back from the database after a restart.
        try await server.stop()
        server = try await RunningServer.start(RunningServer.configuration(folder: folder))
        for encoding in ProtocolEncoding.allCases {
            let reader = try await server.client("dee-\(encoding)", encoding: encoding)
            _ = try await reader.subscribe(SubscribeRequest(channel: channel, recoverable: true))
            #expect(try await history(reader, channel).map(\.bytes) == sent.map { $0.received(in: encoding) }, "after a restart, \(encoding)")
            await reader.close()
        }
        try await server.stop()
    }

    @Test func theServerAPIsHistoryAnswersPayloadsAsPublished() async throws {
        let server = try await RunningServer.start()
        let (status, _) = try await server.post("/api/publish", body: #"{"channel":"room:api","data":\#(Self.fromAPI)}"#)
        #expect(status == 200)
        let (historyStatus, text) = try await postText(server, "/api/history", #"{"channel":"room:api","limit":10}"#)
        #expect(historyStatus == 200)
        #expect(text.contains(#""data":\#(Self.fromAPI)"#), "\(text)")
        try await server.stop()
    }

    @Test func aJSONClientCannotPublishWhatIsNotOneJSONValueAndNothingIsStored() async throws {
        let server = try await RunningServer.start()
        let reader = try await server.client("reader")
        _ = try await reader.subscribe(SubscribeRequest(channel: "room:bad", recoverable: true))
        let token = try await server.token("eve")
        let conversation = try await converse(
            server.webSocketURL,
            [
                .text(#"{"id":1,"connect":{"token":"\#(token)"}}"#), .awaitMessages(1),
                .text(#"{"id":2,"publish":{"channel":"room:bad","data":{"a":1,}}}"#), .awaitClose,
            ])
        #expect(conversation.closeCode == 3501)
        _ = try await reader.call(.publish(channel: "room:bad", data: Payload(["after": true])))
        #expect(try await reader.awaitPayloads("room:bad", count: 1).map(\.value) == [["after": true]])
        #expect(reader.offsets("room:bad") == [1], "the bad publication took no offset")
        await reader.close()
        try await server.stop()
    }

    @Test(arguments: [
        (#"{"channel":"room:api-bad","b64data":"not base64!"}"#, "b64data is not base64"),
        (#"{"channel":"room:api-bad","b64data":""}"#, "b64data"),
        (#"{"channel":"room:api-bad"}"#, "data is required"),
    ])
    func aBadServerAPIPayloadIsAnswered107AndPublishesNothing(_ body: String, _ named: String) async throws {
        let server = try await RunningServer.start()
        let reader = try await server.client("reader")
        _ = try await reader.subscribe(SubscribeRequest(channel: "room:api-bad", recoverable: true))
        let (status, answer) = try await server.post("/api/publish", body: body)
        #expect(status == 200 && answer["error"]?["code"] == 107, "\(answer.text)")
        #expect(answer["error"]?["message"]?.stringValue?.contains(named) == true, "\(answer.text)")
        // The next publication is the first the reader gets, at offset 1.
        _ = try await server.api("publish", ["channel": "room:api-bad", "data": ["after": true]])
        #expect(try await reader.awaitPayloads("room:api-bad", count: 1).map(\.value) == [["after": true]])
        #expect(reader.offsets("room:api-bad") == [1])
        await reader.close()
        try await server.stop()
    }

    private func history(_ client: LiveClient, _ channel: String) async throws -> [Payload] {
        let reply = try await client.call(.history(HistoryRequest(channel: channel, limit: 100)))
        guard case let .history(result) = reply.body else { throw HarnessError("history answered \(reply)") }
        return result.publications.map(\.data)
    }

    private func postText(_ server: RunningServer, _ path: String, _ body: String) async throws -> (Int, String) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)\(path)")!)
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        request.setValue(RunningServer.apiKey, forHTTPHeaderField: "X-API-Key")
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as! HTTPURLResponse).statusCode, String(decoding: data, as: UTF8.self))
    }
}
