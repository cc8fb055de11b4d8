import Foundation
import GondolaProtocol
import Testing

/// Every RPC and server API method decodes its request as its contract says: a member the
/// contract does not list is refused with 107 naming it, at the top and inside the objects
/// the contract describes, and the refused call changes nothing.
@Suite struct RequestContractTests {
    @Test func anUnknownRPCMemberIsRefusedNamingItAndChangesNothing() async throws {
        let server = try await startTravelServer()
        _ = try await server.createTrip(hosts: ["ann"], travellers: ["bob"])
        let ann = try await server.client("ann")
        let chat = try #require(try await ann.rpc("chat.create", ["members": ["bob"]])["chat"]?["id"]?.stringValue)
        let refused: [(String, JSON, String)] = [
            ("chat.send", ["chat": .string(chat), "text": "hi", "client_message_id": "m1", "colour": "red"], "unknown field 'colour'"),
            ("map.route", ["to": ["lat": 45.3, "lon": 6.58, "altitude": 1800]], "unknown field 'to.altitude'"),
            ("trip.list", ["all": true, "page": 2], "unknown fields 'all', 'page'"),
            ("location.update", ["lat": 45.3, "lon": 6.58, "bearing": 90], "unknown field 'bearing'"),
        ]
        for (method, data, message) in refused {
            do {
                _ = try await ann.rpc(method, data)
                Issue.record("\(method) accepted \(data.text)")
            } catch let failure as RPCFailure {
                #expect(failure.code == 107 && failure.message.contains(message), "\(method): \(failure)")
            }
        }
        let history = try await ann.rpc("chat.history", ["chat": .string(chat)])
        #expect(history["messages"] == .array([]), "the refused message was not stored")
        _ = try await ann.rpc("chat.send", ["chat": .string(chat), "text": "hi", "client_message_id": "m1"])
        #expect(try await ann.rpc("trip.list")["trips"]?.arrayValue.count == 1, "the connection keeps serving")
        await ann.close()
        try await server.stop()
    }

    @Test func anUnknownServerAPIMemberIsRefusedNamingItAndPublishesNothing() async throws {
        let server = try await RunningServer.start()
        let (_, refused) = try await server.post("/api/publish", body: #"{"channel":"room:a","data":{"n":1},"skip_histroy":true}"#)
        #expect(refused["error"]?["code"]?.doubleValue == 107)
        #expect(refused["error"]?["message"]?.stringValue == "bad request: unknown field 'skip_histroy'", "\(refused.text)")
        let (_, nested) = try await server.post("/api/history", body: #"{"channel":"room:a","since":{"offset":0,"epoch":"","era":1}}"#)
        #expect(nested["error"]?["message"]?.stringValue == "bad request: unknown field 'since.era'", "\(nested.text)")
        let history = try await server.api("history", ["channel": "room:a", "limit": -1])
        #expect(history["publications"] == nil || history["publications"] == .array([]), "nothing was published: \(history.text)")
        let long = String(repeating: "é", count: 62)
        for (body, message) in [
            (#"{"user":"ann","disconnect":{"code":2999,"reason":"x"}}"#, "disconnect.code must be between 3000 and 4999, got 2999"),
            (#"{"user":"ann","disconnect":{"code":4001,"reason":"\#(long)"}}"#, "disconnect.reason is 124 bytes, more than 123"),
            (#"{"user":"ann","label_filter":{"op":"eq"}}"#, "unknown field 'label_filter'"),
            (#"{"user":"ann","session":7}"#, "session must be a string, got number"),
        ] {
            let (_, answer) = try await server.post("/api/disconnect", body: body)
            #expect(
                answer["error"]?["code"]?.doubleValue == 107 && answer["error"]?["message"]?.stringValue == "bad request: \(message)",
                "\(answer.text)")
        }
        let published = try await server.api("publish", ["channel": "room:a", "data": ["n": 1]])
        #expect(published["offset"]?.doubleValue == 1)
        try await server.stop()
    }
}
