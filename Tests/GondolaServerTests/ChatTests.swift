import Foundation
import GondolaProtocol
import Testing

@testable import GondolaServer

/// Chats through the real server over real sockets: ordering, idempotency,
/// membership, unread counts, paging, recovery and bad input.
@Suite struct ChatTests {
    /// A server with a running trip: host hana, travellers alice and bob (friends as
    /// trip-mates); carol shares nothing with them.
    static func start() async throws -> (RunningServer, trip: String) {
        // The default frame limit, so that a 4,000-character message fits.
        let server = try await startTravelServer { $0.maxFrameBytes = 65_536 }
        let trip = try await server.createTrip(hosts: ["hana"], travellers: ["alice", "bob"])
        return (server, trip)
    }

    static func send(_ client: LiveClient, _ chat: String, _ text: String, id: String) async throws -> JSON {
        try await client.rpc("chat.send", ["chat": .string(chat), "text": .string(text), "client_message_id": .string(id)])
    }

    @Test(arguments: ProtocolEncoding.allCases)
    func directChatKeepsOrderAndRetriesAreIdempotent(_ encoding: ProtocolEncoding) async throws {
        let (server, _) = try await Self.start()
        let alice = try await server.client("alice", encoding: encoding)
        let bob = try await server.client("bob", encoding: encoding)
        let created = try await alice.rpc("chat.create", ["members": ["bob"]])
        let chat = try #require(created["chat"]?["id"]?.stringValue)
        #expect(created["chat"]?["kind"]?.stringValue == "direct")
        #expect(created["channel"]?.stringValue == "chat:\(chat)")
        // One direct chat per pair, whoever opens it.
        #expect(try await bob.rpc("chat.create", ["members": ["alice"]])["chat"]?["id"]?.stringValue == chat)
        #expect(try await alice.rpc("chat.create", ["members": ["bob", "alice"]])["chat"]?["id"]?.stringValue == chat)

        try await bob.subscribe("chat:\(chat)")
        for index in 1...20 {
            let answer = try await Self.send(alice, chat, "message \(index)", id: "a-\(index)")
            #expect(answer["offset"]?.doubleValue == Double(index))
            #expect(answer["from"]?.stringValue == "alice")
        }
        let retry = try await Self.send(alice, chat, "message 5", id: "a-5")
        #expect(retry["offset"]?.doubleValue == 5)
        #expect(retry["repeated"] == .bool(true))
        // A marker sent after the retry: once it arrives, anything the retry published would have arrived before it.
        _ = try await Self.send(alice, chat, "marker", id: "a-marker")
        let received = try await bob.awaitPublications("chat:\(chat)", count: 21)
        #expect(received.map { $0["text"]?.stringValue } == (1...20).map { "message \($0)" } + ["marker"], "the retry published nothing")
        #expect(bob.offsets("chat:\(chat)") == Array(1...21))
        #expect(received.first?["name"]?.stringValue == "alice")
        #expect(received.first?["telegram_username"] == nil)
        await alice.close()
        await bob.close()
        try await server.stop()
    }

    /// Sends arrive together and are committed in batches: each message is stored once
    /// (a retry in the same batch included), offsets have no gaps, and a subscriber
    /// recovering in the middle gets every message exactly once, recovered or live.
    @Test func aRetryAfterARestartAnswersTheStoredMessage() async throws {
        let database = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-chat-restart-\(UUID().uuidString)/gondola.sqlite").path
        let first = try await startTravelServer { $0.database = database }
        _ = try await first.createTrip(hosts: ["hana"], travellers: ["alice", "bob"])
        let alice = try await first.client("alice")
        let chat = try #require(try await alice.rpc("chat.create", ["members": ["bob"]])["chat"]?["id"]?.stringValue)
        for index in 1...3 { _ = try await Self.send(alice, chat, "message \(index)", id: "r-\(index)") }
        try await first.stop()

        // The sends of the last minutes are read back at start: the retry of a send whose reply was lost is recognised.
        let second = try await startTravelServer { $0.database = database }
        let again = try await second.client("alice")
        let retry = try await Self.send(again, chat, "message 2", id: "r-2")
        #expect(retry["offset"]?.doubleValue == 2 && retry["repeated"] == .bool(true))
        let next = try await Self.send(again, chat, "message 4", id: "r-4")
        #expect(next["offset"]?.doubleValue == 4 && next["repeated"] == nil)
        try await second.stop()
    }

    @Test(arguments: ProtocolEncoding.allCases)
    func concurrentSendsRetriesAndARecoveryInTheMiddle(_ encoding: ProtocolEncoding) async throws {
        let (server, _) = try await Self.start()
        let alice = try await server.client("alice", encoding: encoding)
        let bob = try await server.client("bob", encoding: encoding)
        let again = try await server.client("bob", encoding: encoding)
        let chat = try #require(try await alice.rpc("chat.create", ["members": ["bob"]])["chat"]?["id"]?.stringValue)
        let first = try await bob.subscribe(SubscribeRequest(channel: "chat:\(chat)"))
        let count = 200
        let answers = try await withThrowingTaskGroup(of: (String, Double?).self) { group in
            for index in 0..<count {
                for _ in 0..<2 {  // every message sent twice at once, as a retry racing the original
                    group.addTask { ("c\(index)", try await Self.send(alice, chat, "burst \(index)", id: "c\(index)")["offset"]?.doubleValue) }
                }
                if index == count / 2 {
                    group.addTask {
                        var request = SubscribeRequest(channel: "chat:\(chat)")
                        request.recover = true
                        request.epoch = first.epoch
                        let result = try await again.subscribe(request)
                        #expect(result.recovered)
                        return ("recovered", Double(result.publications.count))
                    }
                }
            }
            var answers: [String: Set<Double>] = [:]
            for try await (id, offset) in group { answers[id, default: []].insert(offset ?? -1) }
            return answers
        }
        #expect(answers.filter { $0.key != "recovered" }.allSatisfy { $0.value.count == 1 }, "a retry answers the same offset")
        #expect(Set(answers.filter { $0.key != "recovered" }.values.compactMap(\.first)) == Set((1...count).map(Double.init)))
        // A marker behind the burst: once both subscribers have it, every publication of the burst has arrived.
        _ = try await Self.send(alice, chat, "marker", id: "c-marker")
        _ = try await bob.awaitPublications("chat:\(chat)", count: count + 1)
        #expect(bob.offsets("chat:\(chat)") == (1...count + 1).map(UInt64.init), "each message once, in order")
        let recovered = Int(answers["recovered"]?.first ?? -1)
        _ = try await again.awaitPublications("chat:\(chat)", count: count + 1 - recovered)
        let live = again.offsets("chat:\(chat)")
        #expect(live == (recovered + 1...count + 1).map(UInt64.init), "recovered \(recovered), then live \(live.first ?? 0)…")
        for client in [alice, bob, again] { await client.close() }
        try await server.stop()
    }

    @Test func onlyMembersMayCreateSendReadAndSubscribe() async throws {
        let (server, trip) = try await Self.start()
        let alice = try await server.client("alice")
        let carol = try await server.client("carol")
        await #expect(throws: RPCFailure.self) { try await carol.rpc("chat.create", ["members": ["alice"]]) }
        let chat = try #require(try await alice.rpc("chat.create", ["members": ["bob"]])["chat"]?["id"]?.stringValue)
        for (method, data) in [
            ("chat.send", ["chat": JSON.string(chat), "text": "hi", "client_message_id": "c1"] as JSON),
            ("chat.history", ["chat": .string(chat)]), ("chat.read", ["chat": .string(chat), "offset": 0]),
            ("chat.send", ["chat": .string(ChatServiceNames.tripChat(trip)), "text": "hi", "client_message_id": "c2"]),
            ("chat.send", ["chat": "no-such-chat", "text": "hi", "client_message_id": "c3"]),
        ] {
            do {
                _ = try await carol.rpc(method, data)
                Issue.record("\(method) by an outsider succeeded")
            } catch let failure as RPCFailure {
                #expect(failure.code == 103, "\(method): \(failure)")
            }
        }
        do {
            try await carol.subscribe("chat:\(chat)")
        } catch let failure as RPCFailure {
            #expect(failure.code == 103)
        }
        // A member of a non-friend group is refused, naming them.
        do {
            _ = try await alice.rpc("chat.create", ["members": ["bob", "carol"], "title": "Ski"])
            Issue.record("a group with a stranger was created")
        } catch let failure as RPCFailure {
            #expect(failure.code == 103 && failure.message.contains("members[1]"), "\(failure)")
        }
        #expect(!carol.isClosed, "refusals leave the connection open")
        await alice.close()
        await carol.close()
        try await server.stop()
    }

    @Test(arguments: [
        (["text": "hi", "client_message_id": "x"] as JSON, "chat"),
        (["chat": "C", "client_message_id": "x"] as JSON, "text"),
        (["chat": "C", "text": "", "client_message_id": "x"] as JSON, "text"),
        (["chat": "C", "text": "   ", "client_message_id": "x"] as JSON, "text"),
        (["chat": "C", "text": .string(String(repeating: "é", count: 4_001)), "client_message_id": "x"] as JSON, "text"),
        (["chat": "C", "text": 42, "client_message_id": "x"] as JSON, "text"),
        (["chat": "C", "text": "hi"] as JSON, "client_message_id"),
        (["chat": "C", "text": "hi", "client_message_id": .string(String(repeating: "x", count: 65))] as JSON, "client_message_id"),
    ])
    func badSendsAnswer107NamingTheField(data: JSON, field: String) async throws {
        let (server, _) = try await Self.start()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let chat = try #require(try await alice.rpc("chat.create", ["members": ["bob"]])["chat"]?["id"]?.stringValue)
        let request = data.adding("chat", data["chat"] == nil ? .null : .string(chat))
        do {
            _ = try await alice.rpc("chat.send", request)
            Issue.record("accepted \(request.text)")
        } catch let failure as RPCFailure {
            #expect(failure.code == 107 && failure.message.contains(field), "\(failure)")
        }
        #expect(try await alice.rpc("chat.history", ["chat": .string(chat)])["messages"]?.arrayValue.isEmpty == true, "nothing stored")
        #expect(try await Self.send(bob, chat, "still here", id: "b1")["offset"]?.doubleValue == 1, "another client is still served")
        await alice.close()
        await bob.close()
        try await server.stop()
    }

    @Test func unreadCountsReadMarkersAndHistoryPages() async throws {
        let (server, _) = try await Self.start()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let chat = try #require(try await alice.rpc("chat.create", ["members": ["bob"]])["chat"]?["id"]?.stringValue)
        for index in 1...120 { _ = try await Self.send(alice, chat, "m\(index)", id: "m\(index)") }
        _ = try await Self.send(bob, chat, "reply", id: "b1")

        func entry(_ client: LiveClient) async throws -> JSON? {
            try await client.rpc("chat.list")["chats"]?.arrayValue.first { $0["id"]?.stringValue == chat }
        }
        #expect(try await entry(bob)?["unread"]?.doubleValue == 120, "own messages are not unread")
        #expect(try await entry(alice)?["unread"]?.doubleValue == 1)
        #expect(try await entry(bob)?["last_message"]?["text"]?.stringValue == "reply")
        #expect(try await bob.rpc("chat.read", ["chat": .string(chat), "offset": 100])["read_offset"]?.doubleValue == 100)
        #expect(try await entry(bob)?["unread"]?.doubleValue == 20)
        #expect(try await bob.rpc("chat.read", ["chat": .string(chat), "offset": 50])["read_offset"]?.doubleValue == 100, "markers never go back")
        await #expect(throws: RPCFailure.self) { try await bob.rpc("chat.read", ["chat": .string(chat), "offset": 500]) }

        var before: JSON = .null
        var pages: [[Double]] = []
        while true {
            let page = try await bob.rpc("chat.history", ["chat": .string(chat), "limit": 50, "before": before])
            let offsets = page["messages"]?.arrayValue.compactMap { $0["offset"]?.doubleValue } ?? []
            pages.append(offsets)
            guard page["more"] == .bool(true), let first = offsets.first else { break }
            before = .double(first)
        }
        let expected: [[Double]] = [Array(72...121), Array(22...71), Array(1...21)].map { $0.map(Double.init) }
        #expect(pages == expected)
        await #expect(throws: RPCFailure.self) { try await bob.rpc("chat.history", ["chat": .string(chat), "limit": 101]) }
        await alice.close()
        await bob.close()
        try await server.stop()
    }

    @Test func groupAndTripChats() async throws {
        let (server, trip) = try await Self.start()
        let alice = try await server.client("alice")
        let hana = try await server.client("hana")
        let carol = try await server.client("carol")
        let group = try await alice.rpc("chat.create", ["members": ["bob", "hana"], "title": "Lift crew"])
        #expect(group["chat"]?["kind"]?.stringValue == "group")
        #expect(group["chat"]?["members"]?.arrayValue.compactMap { $0["user"]?.stringValue } == ["alice", "bob", "hana"])

        let tripChat = ChatServiceNames.tripChat(trip)
        let listed = try await hana.rpc("chat.list")["chats"]?.arrayValue.compactMap { $0["id"]?.stringValue } ?? []
        #expect(Set(listed) == [tripChat, group["chat"]?["id"]?.stringValue ?? ""])
        try await alice.subscribe("chat:\(tripChat)")
        _ = try await Self.send(hana, tripChat, "Meet at the lift at 9", id: "h1")
        #expect(try await alice.awaitPublications("chat:\(tripChat)", count: 1).first?["text"]?.stringValue == "Meet at the lift at 9")
        #expect(try await carol.rpc("chat.list")["chats"]?.arrayValue.isEmpty == true)
        await #expect(throws: RPCFailure.self) { try await carol.subscribe("chat:\(tripChat)") }
        for client in [alice, hana, carol] { await client.close() }
        try await server.stop()
    }

    @Test func reconnectingSubscriberRecoversMissedMessages() async throws {
        let (server, _) = try await Self.start()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let chat = try #require(try await alice.rpc("chat.create", ["members": ["bob"]])["chat"]?["id"]?.stringValue)
        let first = try await bob.subscribe(SubscribeRequest(channel: "chat:\(chat)"))
        #expect(first.recoverable, "chat streams are always recoverable")
        for index in 1...3 { _ = try await Self.send(alice, chat, "early \(index)", id: "e\(index)") }
        _ = try await bob.awaitPublications("chat:\(chat)", count: 3)
        await bob.close()
        for index in 1...4 { _ = try await Self.send(alice, chat, "missed \(index)", id: "x\(index)") }

        let again = try await server.client("bob")
        var request = SubscribeRequest(channel: "chat:\(chat)")
        request.recover = true
        request.epoch = first.epoch
        request.offset = 3
        let result = try await again.subscribe(request)
        #expect(result.recovered)
        #expect(result.publications.map(\.offset) == [4, 5, 6, 7])
        #expect(result.publications.compactMap { $0.data.value["text"]?.stringValue } == (1...4).map { "missed \($0)" })
        // The server API cannot write a malformed message into a chat's stream.
        await #expect(throws: RPCFailure.self) { try await server.api("publish", ["channel": .string("chat:\(chat)"), "data": ["text": "x"]]) }
        await alice.close()
        await again.close()
        try await server.stop()
    }
}

/// Chat ids the tests need to spell.
enum ChatServiceNames {
    static func tripChat(_ trip: String) -> String { "trip-\(trip)" }
}
