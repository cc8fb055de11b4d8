import GondolaProtocol
import Testing

/// The Protobuf encoding: every command, reply and push survives a round trip,
/// and each kind of broken frame is reported the way the session needs it.
@Suite struct ProtobufCodecTests {
    let protobuf = ProtocolEncoding.protobuf

    static let payload = RawJSON(["text": "hello", "n": 3, "nested": ["a": [1, 2.5, nil, true]]])

    static var commands: [Command] {
        var connect = ConnectRequest(token: "a.b.c", data: RawJSON(["app": "ios"]), name: "swift", version: "0.8")
        connect.subs = ["news": SubscribeRequest(channel: "news", recover: true, epoch: "e1", offset: 7)]
        var subscribe = SubscribeRequest(
            channel: "chat:1", recover: true, epoch: "abc", offset: 41, data: RawJSON(["radius": 500]),
            positioned: true, recoverable: true, joinLeave: true, flag: SubscribeRequest.rejectUnrecoveredFlag, delta: "fossil")
        subscribe.token = "sub-token"
        var filtered = SubscribeRequest(channel: "quotes:1")
        filtered.tagsFilter = TagsFilter(
            op: "and",
            nodes: [
                TagsFilter(key: "ticker", cmp: "in", vals: ["AAPL", "MSFT"]), TagsFilter(op: "not", nodes: [TagsFilter(key: "halted", cmp: "ex")]),
            ])
        return [
            Command(id: 1, .connect(connect)),
            Command(id: 2, .subscribe(subscribe)),
            Command(id: 3, .unsubscribe(channel: "chat:1")),
            Command(id: 4, .publish(channel: "room:a", data: Payload(payload))),
            Command(id: 5, .presence(channel: "room:a")),
            Command(id: 6, .presenceStats(channel: "room:a")),
            Command(id: 7, .history(HistoryRequest(channel: "room:a", limit: 10, since: StreamPosition(offset: 3, epoch: "x"), reverse: true))),
            Command(id: 8, .history(HistoryRequest(channel: "room:a", limit: -1))),
            Command(id: 9, .ping),
            Command(id: 10, .rpc(method: "location.update", data: ["lat": 45.3, "lon": 6.58])),
            Command(id: 11, .rpc(method: "trip.list", data: nil)),
            Command(id: 0, .send(data: payload)),
            Command(id: 12, .refresh(token: "t.o.k")),
            Command(id: 13, .subRefresh(channel: "news:1", token: "s.u.b")),
            Command(id: 0, .pong),
            Command(id: 14, .subscribe(filtered)),
        ]
    }

    @Test func everyCommandSurvivesARoundTripInBothEncodings() throws {
        for encoding in ProtocolEncoding.allCases {
            for command in Self.commands {
                let decoded = try encoding.commands(in: encoding.encode(command))
                #expect(decoded == [.command(command)], "\(encoding) \(command.methodName)")
            }
        }
    }

    @Test func severalCommandsInOneFrameKeepTheirOrder() throws {
        let frame = protobuf.frame(Self.commands.map(protobuf.encode))
        #expect(try protobuf.commands(in: frame) == Self.commands.map(DecodedCommand.command))
    }

    static var replies: [Reply] {
        var connect = ConnectResult(client: "c1", version: "gondola 0.1.0", expires: true, ttl: 60, ping: 25, pong: true, node: "n1")
        connect.data = RawJSON(["welcome": true])
        connect.session = "s1"
        var subscribed = SubscribeResult()
        subscribed.recoverable = true
        subscribed.positioned = true
        subscribed.epoch = "ep"
        subscribed.offset = 12
        subscribed.recovered = true
        subscribed.wasRecovering = true
        subscribed.data = RawJSON(["positions": []])
        subscribed.publications = [
            Publication(offset: 11, data: Payload(payload), info: ClientInfo(user: "ann", client: "c2", connInfo: RawJSON(["name": "Ann"]))),
            Publication(offset: 12, data: Payload("plain"), tags: ["kind": "chat"]),
        ]
        return [
            Reply(id: 1, .connect(connect)),
            Reply(id: 2, .subscribe(subscribed)),
            Reply(id: 3, .unsubscribe),
            Reply(id: 4, .publish),
            Reply(
                id: 5, .presence(["c1": ClientInfo(user: "tom", client: "c1"), "c2": ClientInfo(user: "ann", client: "c2", chanInfo: RawJSON([1]))])),
            Reply(id: 6, .presenceStats(PresenceStats(numClients: 2, numUsers: 1))),
            Reply(id: 7, .history(HistoryResult(publications: subscribed.publications, epoch: "ep", offset: 12))),
            Reply(id: 8, .ping),
            Reply(id: 9, .rpc(data: RawJSON(["map": ["mode": "mountain"]]))),
            Reply(id: 10, .rpc(data: nil)),
            Reply(id: 11, .refresh(RefreshResult(client: "c1", version: "v", expires: true, ttl: 30))),
            Reply(id: 12, .subRefresh(SubRefreshResult(expires: false, ttl: 0))),
            Reply(id: 12, .error(ProtocolError.tooManyRequests)),
            Reply(id: 13, .error(ProtocolError.badRequest.with(message: "lat must be within -90...90"))),
        ]
    }

    static var pushes: [Push] {
        var subscribed = SubscribeResult()
        subscribed.recoverable = true
        subscribed.epoch = "e"
        subscribed.offset = 4
        return [
            Push(channel: "room:a", .publication(Publication(offset: 5, data: Payload(payload), info: ClientInfo(user: "tom", client: "c1")))),
            Push(channel: "room:a", .join(ClientInfo(user: "tom", client: "c1", connInfo: RawJSON(["n": 1])))),
            Push(channel: "room:a", .leave(ClientInfo(user: "tom", client: "c1"))),
            Push(channel: "room:a", .unsubscribe(code: UnsubscribeCode.server, reason: "server unsubscribe")),
            Push(channel: "", .message(data: payload)),
            Push(channel: "room:a", .subscribe(subscribed)),
            Push(channel: "", .disconnect(.forceDisconnect)),
            Push(channel: "", .refresh(expires: true, ttl: 600)),
            Push(channel: "nearby:#a", .publication(Publication(offset: 6, data: Payload(.string(Self.delta)), delta: true))),
        ]
    }

    static let delta = "7\n4@0,3:2}]3yl8kU;"

    @Test func aDeltaTravelsAsItsBytesInProtobufAndAsAStringInJSON() throws {
        let push = Push(channel: "nearby:#a", .publication(Publication(offset: 6, data: Payload(.string(Self.delta)), delta: true)))
        let bytes = protobuf.encode(push)
        let bare = Array(Self.delta.utf8)
        #expect(bytes.indices.contains { bytes[$0...].starts(with: bare) })
        #expect(!bytes.indices.contains { bytes[$0...].starts(with: Array("\"7".utf8)) })
        let json = String(decoding: ProtocolEncoding.json.encode(push), as: UTF8.self)
        #expect(json.contains(#""data":"7\n4@0,3:2}]3yl8kU;""#) && json.contains(#""delta":true"#))
    }

    @Test func everyReplyAndPushSurvivesARoundTripInBothEncodings() throws {
        for encoding in ProtocolEncoding.allCases {
            for reply in Self.replies {
                #expect(try encoding.serverMessages(in: encoding.encode(reply)) == [.reply(reply)], "\(encoding) \(reply)")
            }
            for push in Self.pushes {
                #expect(try encoding.serverMessages(in: encoding.encode(push)) == [.push(push)], "\(encoding) \(push)")
            }
            #expect(try encoding.serverMessages(in: encoding.ping) == [.ping])
        }
    }

    @Test func theServerPingIsAnEmptyReplyAndThePongAnEmptyCommand() throws {
        #expect(protobuf.ping == [0])
        #expect(try protobuf.commands(in: [0]) == [.command(Command(id: 0, .pong))])
    }

    @Test func anEncodedPushIsEncodedOncePerEncoding() {
        var encoded = EncodedPush(Self.pushes[0])
        let json = encoded.bytes(for: .json)
        let protobufBytes = encoded.bytes(for: .protobuf)
        #expect(json == ProtocolEncoding.json.encode(Self.pushes[0]))
        #expect(protobufBytes == protobuf.encode(Self.pushes[0]))
        #expect(encoded.bytes(for: .json) == json)
    }

    // MARK: Bad frames

    @Test func brokenFramingFailsTheWholeFrame() {
        let valid = protobuf.encode(Command(id: 1, .ping))
        let cases: [(String, [UInt8])] = [
            ("truncated varint", [0x80]),
            ("truncated varint after a valid command", valid + [0xFF, 0xFF]),
            ("length past the frame", [0x05, 0x08, 0x01]),
            ("varint longer than ten bytes", [UInt8](repeating: 0xFF, count: 11) + [0x01]),
        ]
        for (name, frame) in cases {
            #expect(throws: ProtocolDecodingError.self, "\(name)") { try protobuf.commands(in: frame) }
        }
    }

    @Test func malformedCommandsAreReportedInPlace() throws {
        func framed(_ message: [UInt8]) -> [UInt8] { [UInt8(message.count)] + message }
        let cases: [(String, [UInt8])] = [
            // field 20 (varint), not a method of the protocol
            ("unknown method number", framed([0x08, 0x01, 0xA0, 0x01, 0x01])),
            ("not Protobuf at all", framed([0xFF, 0xFF, 0xFF])),
            ("wrong wire type for id", framed([0x0A, 0x00])),
            ("two methods", framed([0x08, 0x01, 0x5A, 0x00, 0x3A, 0x00])),
            ("an id and no method", framed([0x08, 0x07])),
            ("subscribe without an id", framed([0x2A, 0x00])),
        ]
        for (name, frame) in cases {
            let decoded = try protobuf.commands(in: frame)
            #expect(decoded.count == 1, "\(name)")
            guard case .malformed = decoded.first else {
                Issue.record("\(name): decoded as \(decoded)")
                continue
            }
        }
    }

    @Test func aPublicationMayBeAnyBytesWhileASendPayloadMustBeJSON() throws {
        // publish {channel: "a", data: "{oops"} written by hand: binary data, passed on as it is.
        let publish: [UInt8] = [0x0A, 0x01, 0x61, 0x12, 0x05] + Array("{oops".utf8)
        let message: [UInt8] = [0x08, 0x04, 0x3A, UInt8(publish.count)] + publish
        let published = try protobuf.commands(in: [UInt8(message.count)] + message)
        #expect(published == [.command(Command(id: 4, .publish(channel: "a", data: Payload(received: Array("{oops".utf8)))))])
        // send {data: "{oops"}: read by the server's handlers, so it must be JSON.
        let send: [UInt8] = [0x0A, 0x05] + Array("{oops".utf8)
        let sendMessage: [UInt8] = [0x08, 0x04, 0x62, UInt8(send.count)] + send
        let decoded = try protobuf.commands(in: [UInt8(sendMessage.count)] + sendMessage)
        guard case let .refused(id, error)? = decoded.first else {
            Issue.record("decoded as \(decoded)")
            return
        }
        #expect(id == 4)
        #expect(error.code == 107)
        #expect(error.message.contains("send.data"))
    }

    @Test func anRPCWhoseDataIsNotJSONIsRefusedWith107AndGoodDataArrivesParsed() throws {
        // rpc {data: "{oops", method: "m"} written by hand: the encoder only writes JSON.
        let rpc: [UInt8] = [0x0A, 0x05] + Array("{oops".utf8) + [0x12, 0x01, 0x6D]
        let message: [UInt8] = [0x08, 0x05, 0x6A, UInt8(rpc.count)] + rpc
        let decoded = try protobuf.commands(in: [UInt8(message.count)] + message)
        guard case let .refused(id, error)? = decoded.first else {
            Issue.record("decoded as \(decoded)")
            return
        }
        #expect(id == 5 && error.code == 107 && error.message.contains("rpc.data"))
        let good = protobuf.frame([protobuf.encode(Command(id: 6, .rpc(method: "m", data: ["lat": 45.5, "tags": ["a"]])))])
        #expect(try protobuf.commands(in: good) == [.command(Command(id: 6, .rpc(method: "m", data: ["lat": 45.5, "tags": ["a"]])))])
    }

    @Test func anEmptyPublishPayloadIsRefused() throws {
        let message: [UInt8] = [0x08, 0x02, 0x3A, 0x03, 0x0A, 0x01, 0x61]
        let decoded = try protobuf.commands(in: [UInt8(message.count)] + message)
        #expect(decoded == [.refused(id: 2, ProtocolError.badRequest.with(message: "publish.data is required"))])
    }
}
