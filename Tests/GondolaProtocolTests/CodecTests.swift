import GondolaProtocol
import Testing

/// Every command, reply and push survives encode → text → parse → decode unchanged.
@Suite struct CodecRoundTripTests {
    static let data = RawJSON(["text": "héllo 👋", "n": 1, "nested": ["a": [true, nil]], "empty": .object([])])
    static let info = ClientInfo(user: "alice", client: "c1", connInfo: RawJSON(["name": "Alice"]), chanInfo: RawJSON(.object([])))

    static let commands: [Command] = [
        Command(id: 1, .connect(ConnectRequest(token: "t.o.k", data: data, name: "py", version: "1.0"))),
        Command(
            id: 2,
            .subscribe(
                SubscribeRequest(
                    channel: "chat:#alice,bob", recover: true, epoch: "abc", offset: 42, data: data,
                    positioned: true, recoverable: true, joinLeave: true, flag: 3, delta: "fossil"))),
        Command(id: 3, .unsubscribe(channel: "news")),
        Command(id: 4, .publish(channel: "news", data: Payload(data))),
        Command(id: 5, .publish(channel: "news", data: Payload("just a string"))),
        Command(id: 6, .presence(channel: "room:1")),
        Command(id: 7, .presenceStats(channel: "room:1")),
        Command(id: 8, .history(HistoryRequest(channel: "room:1", limit: 10, since: StreamPosition(offset: 3, epoch: "e"), reverse: true))),
        Command(id: 9, .history(HistoryRequest(channel: "room:1", limit: -1))),
        Command(id: 10, .ping),
        Command(id: 11, .rpc(method: "server.time", data: nil)),
        Command(id: 12, .rpc(method: "profile.get", data: data.value)),
        Command(id: 0, .send(data: data)),
        Command(id: 13, .refresh(token: "new")),
        Command(id: 14, .subRefresh(channel: "news:1", token: "sub.tok.en")),
        Command(id: 0, .pong),
    ]

    @Test(arguments: commands)
    func command(_ command: Command) throws {
        let text = command.json.text
        #expect(!text.contains("\n"))
        #expect(try Command(json: JSONParser.parse(text)) == command)
    }

    static var replies: [Reply] {
        var connect = ConnectResult(client: "c1", version: "gondola", expires: true, ttl: 60, ping: 25, pong: true, node: "n1")
        connect.data = data
        var subscribe = SubscribeResult()
        subscribe.recoverable = true
        subscribe.positioned = true
        subscribe.epoch = "ep"
        subscribe.offset = 7
        subscribe.recovered = true
        subscribe.wasRecovering = true
        subscribe.delta = true
        subscribe.publications = [
            Publication(offset: 6, data: Payload(data), info: info), Publication(offset: 7, data: Payload(3), tags: ["k": "v"]),
        ]
        return [
            Reply(id: 1, .connect(connect)),
            Reply(id: 2, .subscribe(subscribe)),
            Reply(id: 3, .subscribe(SubscribeResult())),
            Reply(id: 4, .unsubscribe),
            Reply(id: 5, .publish),
            Reply(id: 6, .presence(["c1": info, "c2": ClientInfo(user: "bob", client: "c2")])),
            Reply(id: 7, .presence([:])),
            Reply(id: 8, .presenceStats(PresenceStats(numClients: 2, numUsers: 1))),
            Reply(id: 9, .history(HistoryResult(publications: subscribe.publications, epoch: "ep", offset: 7))),
            Reply(id: 10, .ping),
            Reply(id: 11, .rpc(data: data)),
            Reply(id: 12, .rpc(data: nil)),
            Reply(id: 13, .refresh(RefreshResult(client: "c1", version: "v", expires: true, ttl: 10))),
            Reply(id: 14, .subRefresh(SubRefreshResult(expires: true, ttl: 20))),
            Reply(id: 14, .error(ProtocolError.permissionDenied.with(message: "permission denied: ünïcode"))),
            Reply(id: 15, .error(.tooManyRequests)),
        ]
    }

    @Test(arguments: replies)
    func reply(_ reply: Reply) throws {
        let text = reply.json.text
        #expect(!text.contains("\n"))
        #expect(try ServerMessage(json: JSONParser.parse(text)) == .reply(reply))
    }

    static let pushes: [Push] = [
        Push(channel: "news", .publication(Publication(offset: 1, data: Payload(data), info: info))),
        Push(channel: "news", .publication(Publication(data: Payload(.array([]))))),
        // To a subscription with fossil deltas: the payload as a JSON string, whole or a delta.
        Push(channel: "nearby:#alice", .publication(Publication(offset: 2, data: Payload(.string(#"{"n":1}"#))))),
        Push(channel: "nearby:#alice", .publication(Publication(offset: 3, data: Payload(.string("7\n4@0,3:2}]3yl8kU;")), delta: true))),
        Push(channel: "room:1", .join(info)),
        Push(channel: "room:1", .leave(ClientInfo(user: "bob", client: "c2"))),
        Push(channel: "room:1", .unsubscribe(code: 2000, reason: "server unsubscribe")),
        Push(channel: "", .message(data: data)),
        Push(channel: "room:1", .subscribe(SubscribeResult())),
        Push(channel: "", .disconnect(.forceDisconnect)),
    ]

    @Test(arguments: pushes)
    func push(_ push: Push) throws {
        #expect(try ServerMessage(json: JSONParser.parse(push.json.text)) == .push(push))
    }

    /// The bytes written straight for a publication are those of its `JSON` tree, for
    /// every push above and for the awkward ones: no channel, escapes in the channel,
    /// offset 0, a raw newline inside the payload, binary data.
    @Test func pushBytesAreThoseOfTheTree() throws {
        let awkward = [
            Push(channel: "", .publication(Publication(offset: 5, data: Payload(Self.data)))),
            Push(channel: "room:\"q\"\\", .publication(Publication(data: Payload(Self.data)))),
            Push(channel: "c", .publication(Publication(offset: 9, data: Payload(try RawJSON(validating: Array("{\"a\":\n1}".utf8)))))),
            Push(channel: "c", .publication(Publication(offset: 9, data: Payload(received: [0xFF, 0x00, 0x01])))),
            Push(channel: "c", .publication(Publication(offset: 9, data: Payload(Self.data), tags: ["k": "v"]))),
        ]
        for push in Self.pushes + awkward {
            #expect(push.jsonBytes == push.json.bytes, "\(push)")
            #expect(ProtocolEncoding.json.encode(push) == push.json.bytes)
        }
    }

    /// A unidirectional connection sends each push alone, as Centrifugo's unidirectional
    /// transports do: the object inside `{"push":…}`, byte for byte, and the ping as it is.
    @Test(arguments: pushes + [Push(channel: "", .connect(ConnectResult(client: "c1", version: "v")))])
    func aUnidirectionalPushIsThePushObjectAlone(_ push: Push) throws {
        let json = ProtocolEncoding.json
        let alone = json.unidirectional(json.encode(push))
        guard case let .object(members) = push.json, let inner = members.first?.value else {
            Issue.record("\(push.json)")
            return
        }
        #expect(alone == inner.bytes)
        #expect(alone.first == UInt8(ascii: "{") && !alone.starts(with: Array(#"{"push""#.utf8)))
        #expect(try json.unidirectionalMessages(in: alone) == [.push(push)])
        #expect(json.unidirectional(json.ping) == json.ping)
        #expect(ProtocolEncoding.protobuf.unidirectional(ProtocolEncoding.protobuf.encode(push)) == ProtocolEncoding.protobuf.encode(push))
    }

    @Test func serverPingIsAnEmptyObject() throws {
        #expect(try ServerMessage(json: JSONParser.parse("{}")) == .ping)
    }

    @Test func aBatchOfRepliesAndPushesDecodesInOrder() throws {
        let json = ProtocolEncoding.json
        let messages = [json.encode(Self.replies[0]), json.encode(Self.pushes[0]), json.ping, json.encode(Self.replies[3])]
        let decoded = try Frame.values(in: Frame.join(messages)).map(ServerMessage.init(json:))
        #expect(decoded == [.reply(Self.replies[0]), .push(Self.pushes[0]), .ping, .reply(Self.replies[3])])
    }

    @Test func defaultsAreLeftOut() {
        #expect(Reply(id: 3, .subscribe(SubscribeResult())).json.text == #"{"id":3,"subscribe":{}}"#)
        #expect(Command(id: 0, .pong).json.text == "{}")
    }
}

@Suite struct CommandDecodingErrorTests {
    @Test(arguments: [
        (#"{"id":1,"subscribe":{"channel":5}}"#, "subscribe.channel must be a string"),
        (#"{"id":1,"subscribe":{"channel":"a","offset":-1}}"#, "subscribe.offset must be between"),
        (#"{"id":1,"subscribe":{"channel":"a","recover":"yes"}}"#, "subscribe.recover must be a boolean"),
        (#"{"id":1,"frobnicate":{}}"#, "unknown command member 'frobnicate'"),
        (#"{"id":1,"connect":{},"subscribe":{}}"#, "a command carries one method"),
        (#"{"id":1}"#, "command 1 has no method"),
        (#"{"id":-3,"ping":{}}"#, "command.id must be between"),
        (#"{"subscribe":{"channel":"a"}}"#, "needs a positive id"),
        (#"{"id":2,"publish":{"channel":"a"}}"#, "publish.data is required"),
        (#"[1,2]"#, "command must be an object"),
        (#"{"id":1,"connect":[]}"#, "connect must be an object"),
        (#"{"id":1,"history":{"channel":"a","limit":4294967296}}"#, "history.limit must be between"),
    ])
    func namesTheBadField(_ input: String, _ expected: String) throws {
        let json = try JSONParser.parse(input)
        do {
            _ = try Command(json: json)
            Issue.record("decoded \(input)")
        } catch {
            #expect(error.message.contains(expected), "\(error.message)")
        }
    }

    @Test func acceptsInt64AsString() throws {
        let command = try Command(json: JSONParser.parse(#"{"id":1,"subscribe":{"channel":"a","offset":"18"}}"#))
        guard case let .subscribe(request) = command.method else {
            Issue.record("not a subscribe")
            return
        }
        #expect(request.offset == 18)
    }
}
