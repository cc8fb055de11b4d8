import Foundation
import GondolaProtocol
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The server API's `batch`: commands answered in order, each failing on its own, payloads
/// passed byte for byte, and `parallel` answering every command in its place.
@Suite struct ServerAPIBatchTests {
    @Test func commandsAreAnsweredInOrderAndFailAlone() async throws {
        let server = try await RunningServer.start()
        let body = #"""
            {"commands": [
              {"publish": {"channel": "room:batch", "data": {"n" :  1}}},
              {"publish": {"channel": "nowhere:batch", "data": 1}},
              {"nosuch": {}},
              {"publish": {"channel": "room:batch", "data": 2, "colour": "red"}},
              {"batch": {"commands": []}},
              {"publish": {}, "history": {}},
              {"history": {"channel": "room:batch", "limit": -1}}
            ]}
            """#
        let (status, answer) = try await server.post("/api/batch", body: body)
        #expect(status == 200 && answer["result"] == nil, "\(answer.text)")
        let replies = answer["replies"]?.arrayValue ?? []
        #expect(replies.count == 7, "\(answer.text)")
        guard replies.count == 7 else { return try await server.stop() }
        #expect(replies[0]["publish"]?["offset"]?.doubleValue == 1)
        #expect(replies[1]["error"]?["code"]?.doubleValue == 102)
        #expect(replies[2]["error"]?["code"]?.doubleValue == 104)
        #expect(replies[3]["error"]?["message"]?.stringValue == "bad request: unknown field 'colour'")
        #expect(replies[4]["error"]?["code"]?.doubleValue == 104, "no batch inside a batch")
        #expect(replies[5]["error"]?["message"]?.stringValue == "bad request: commands[5] must hold one method, got 2")
        let publications = replies[6]["history"]?["publications"]?.arrayValue ?? []
        #expect(publications.count == 1, "only the first publish went through: \(replies[6].text)")
        let raw = try await Self.text(of: server, "/api/history", body: #"{"channel":"room:batch","limit":-1}"#)
        #expect(raw.contains(#""data":{"n" :  1}"#), "the payload passed byte for byte: \(raw)")
        try await server.stop()
    }

    @Test func aParallelBatchAnswersEveryCommandInItsPlace() async throws {
        let server = try await RunningServer.start()
        let count = 60
        let commands = (0..<count).map { n -> JSON in ["publish": ["channel": .string("room:parallel-\(n % 3)"), "data": ["n": .int(Int64(n))]]] }
        let (_, answer) = try await server.post("/api/batch", body: JSON.object([("commands", .array(commands)), ("parallel", true)]).text)
        let replies = answer["replies"]?.arrayValue ?? []
        #expect(replies.count == count, "\(answer.text.prefix(300))")
        for channel in 0..<3 {
            let offsets = stride(from: channel, to: count, by: 3).compactMap {
                replies.indices.contains($0) ? replies[$0]["publish"]?["offset"]?.doubleValue : nil
            }
            #expect(Set(offsets) == Set((1...count / 3).map(Double.init)), "room:parallel-\(channel) took each offset once: \(offsets)")
        }
        let (_, refused) = try await server.post("/api/batch", body: #"{"commands": {"publish": {}}}"#)
        #expect(refused["error"]?["code"]?.doubleValue == 107, "\(refused.text)")
        try await server.stop()
    }

    /// The answer's bytes as the server wrote them.
    static func text(of server: RunningServer, _ path: String, body: String) async throws -> String {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)\(path)")!)
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        request.setValue(RunningServer.apiKey, forHTTPHeaderField: "X-API-Key")
        let (data, _) = try await URLSession.shared.data(for: request)
        return String(decoding: data, as: UTF8.self)
    }
}
