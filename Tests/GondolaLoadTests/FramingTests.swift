import GondolaLoad
import GondolaProtocol
import Testing

/// The NATS and MQTT framing of the fan-out adapters, and the Centrifuge line reader.
@Suite struct FramingTests {
    /// Feeds `bytes` cut at `cut` and answers what the parser produced.
    func natsOperations(_ bytes: [UInt8], cut: Int) throws -> [NATSFraming.Operation] {
        var parser = NATSFraming.Parser(maxPending: 256)
        var operations: [NATSFraming.Operation] = []
        try parser.feed(bytes[..<cut]) { operations.append($0) }
        try parser.feed(bytes[cut...]) { operations.append($0) }
        return operations
    }

    @Test func natsStreamSplitAnywhere() throws {
        let stream = Array(
            "INFO {\"server_id\":\"x\"}\r\nMSG bench 1 5\r\nhello\r\nPING\r\nMSG bench 1 _INBOX.9 3\r\na\r\n\r\n+OK\r\nPONG\r\n-ERR 'Slow Consumer'\r\nMSG e 2 0\r\n\r\n"
                .utf8)
        let expected: [NATSFraming.Operation] = [
            .info, .message(payload: ArraySlice("hello".utf8)), .ping, .message(payload: ArraySlice("a\r\n".utf8)), .ok, .pong,
            .error("Slow Consumer"), .message(payload: []),
        ]
        for cut in 0...stream.count {
            let operations = try natsOperations(stream, cut: cut)
            #expect(operations.map(normalized) == expected.map(normalized), "cut at \(cut)")
        }
    }

    /// Payload slices compare by content, not by index.
    func normalized(_ operation: NATSFraming.Operation) -> NATSFraming.Operation {
        if case let .message(payload) = operation { return .message(payload: ArraySlice(Array(payload))) }
        return operation
    }

    @Test func natsEncodings() {
        #expect(String(decoding: NATSFraming.publish(subject: "bench", payload: Array("hi".utf8)), as: UTF8.self) == "PUB bench 2\r\nhi\r\n")
        let subscribe = String(decoding: NATSFraming.subscribe(subject: "bench", sid: 7), as: UTF8.self)
        #expect(subscribe.hasPrefix("CONNECT {"))
        #expect(subscribe.hasSuffix("\r\nSUB bench 7\r\nPING\r\n"))
        #expect(subscribe.contains(#""echo":false"#))
    }

    @Test func natsRefusesMalformedStreams() {
        for bad in ["BOGUS\r\n", "MSG bench 1\r\n", "MSG bench 1 x\r\n", "MSG bench 1 -3\r\n"] {
            var parser = NATSFraming.Parser()
            #expect(throws: ProtocolViolation.self, "\(bad)") { try parser.feed(Array(bad.utf8)) { _ in } }
        }
        var parser = NATSFraming.Parser(maxPending: 64)
        #expect(throws: ProtocolViolation.self) { try parser.feed(Array("MSG big 1 1000\r\n".utf8)) { _ in } }
        var line = NATSFraming.Parser(maxPending: 64)
        #expect(throws: ProtocolViolation.self) { try line.feed([UInt8](repeating: 0x41, count: 100)) { _ in } }
    }

    @Test func mqttEncodings() {
        #expect(MQTTFraming.connect(clientID: "c1") == [0x10, 14, 0, 4, 0x4D, 0x51, 0x54, 0x54, 4, 0x02, 0, 0, 0, 2, 0x63, 0x31])
        #expect(MQTTFraming.subscribe(packetID: 0x0102, topic: "t") == [0x82, 6, 1, 2, 0, 1, 0x74, 0])
        #expect(MQTTFraming.publish(topic: "t", payload: [9, 8]) == [0x30, 5, 0, 1, 0x74, 9, 8])
        // Remaining length: one byte to 127, two from 128, three from 16,384.
        for (size, header) in [(127, 2), (128, 3), (16_383, 3), (16_384, 4)] {
            let packet = MQTTFraming.publish(topic: "t", payload: [UInt8](repeating: 0, count: size - 3))
            #expect(packet.count == size + header, "\(size)")
        }
        #expect(Array(MQTTFraming.publish(topic: "t", payload: [UInt8](repeating: 0, count: 125)).prefix(3)) == [0x30, 0x80, 0x01])
    }

    @Test func mqttStreamSplitAnywhere() throws {
        let big = [UInt8](repeating: 7, count: 300)
        let stream: [UInt8] =
            [0x20, 2, 0, 0] + [0x90, 3, 0, 1, 0] + MQTTFraming.publish(topic: "bench", payload: big)
            + [0x32, 8, 0, 1, 0x74, 0, 5, 1, 2, 3] + [0xD0, 0] + [0x20, 2, 0, 5] + [0x90, 3, 0, 2, 0x80] + [0xB0, 2, 0, 1]
        let expected: [MQTTFraming.Packet] = [
            .connectAccepted, .subscribed(packetID: 1, granted: [0]), .publish(topic: "bench", payload: ArraySlice(big)),
            .publish(topic: "t", payload: [1, 2, 3]), .pingResponse, .connectRefused(code: 5), .subscribed(packetID: 2, granted: [0x80]),
            .other(type: 11),
        ]
        for cut in 0...stream.count {
            var parser = MQTTFraming.Parser()
            var packets: [MQTTFraming.Packet] = []
            try parser.feed(stream[..<cut]) { packets.append($0) }
            try parser.feed(stream[cut...]) { packets.append($0) }
            let normalized = packets.map { packet -> MQTTFraming.Packet in
                if case let .publish(topic, payload) = packet { return .publish(topic: topic, payload: ArraySlice(Array(payload))) }
                return packet
            }
            #expect(normalized == expected, "cut at \(cut)")
        }
    }

    @Test func mqttRefusesMalformedStreams() {
        let bad: [[UInt8]] = [[0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], [0x20, 1, 0], [0x90, 2, 0, 1], [0x30, 3, 0, 9, 0x74]]
        for bytes in bad {
            var parser = MQTTFraming.Parser()
            #expect(throws: ProtocolViolation.self, "\(bytes)") { try parser.feed(bytes) { _ in } }
        }
        var small = MQTTFraming.Parser(maxPacket: 100)
        #expect(throws: ProtocolViolation.self) {
            try small.feed(MQTTFraming.publish(topic: "t", payload: [UInt8](repeating: 0, count: 200))) { _ in }
        }
    }

    /// The same five messages in either encoding: a ping, a reply, an error reply,
    /// a publication and another push.
    static func serverFrame(_ encoding: ProtocolEncoding) -> [UInt8] {
        var subscribed = SubscribeResult()
        subscribed.recoverable = true
        let messages: [[UInt8]] = [
            encoding.ping,
            encoding.encode(Reply(id: 2, .subscribe(subscribed))),
            encoding.encode(Reply(id: 12, .error(.tooManyRequests))),
            encoding.encode(Push(channel: "nearby:#u1", .publication(Publication(offset: 3, data: Payload(["t": 5]))))),
            encoding.encode(Push(channel: "room", .join(ClientInfo(user: "u", client: "c")))),
        ]
        return encoding.frame(messages)
    }

    @Test(arguments: ProtocolEncoding.allCases)
    func centrifugeMessagesAreClassified(_ encoding: ProtocolEncoding) {
        var lines: [String] = []
        var stamps: [Int64] = []
        Self.serverFrame(encoding).withUnsafeBytes { bytes in
            CentrifugeFraming(encoding: encoding).lines(in: bytes) { line in
                switch line {
                case .ping: lines.append("ping")
                case let .reply(id, error, _): lines.append("reply \(id) \(error.map(String.init) ?? "ok")")
                case let .publication(channel, line):
                    lines.append("pub " + String(decoding: channel, as: UTF8.self))
                    ByteScan.integers(after: Array(#"{"t":"#.utf8), in: line) { stamps.append($0) }
                case .otherPush: lines.append("push")
                }
            }
        }
        #expect(lines == ["ping", "reply 2 ok", "reply 12 111", "pub nearby:#u1", "push"])
        #expect(stamps == [5], "payload markers are found in either encoding")
    }

    /// A delta subscription's publications as the load generator reads them: the text it
    /// applies (JSON's data string, Protobuf's data bytes) and the delta flag.
    @Test(arguments: ProtocolEncoding.allCases)
    func deltaPublicationsYieldTheirDataAndFlag(_ encoding: ProtocolEncoding) throws {
        let base = Array(#"{"positions":[{"user":"ann","lat":45.3}]}"#.utf8)
        let target = Array(#"{"positions":[{"user":"ann","lat":45.4}]}"#.utf8)
        let delta = FossilDelta.encode(from: base, to: target, keepingUTF8: true)
        // Whole: data as text in JSON, as it is in Protobuf (what the server sends a delta subscription).
        let plain = Publication(offset: 1, data: Payload(try RawJSON(validating: base)))
        let whole = encoding == .json ? plain.withDataAsText : plain
        let changed = Publication(offset: 2, data: Payload(.string(String(decoding: delta, as: UTF8.self))), delta: true)
        var read: [(data: [UInt8], delta: Bool)] = []
        let framing = CentrifugeFraming(encoding: encoding)
        for publication in [whole, changed] {
            let frame = encoding.frame([encoding.encode(Push(channel: "nearby:#u1", .publication(publication)))])
            frame.withUnsafeBytes { bytes in
                framing.lines(in: bytes) { line in
                    guard case let .publication(_, line) = line, let found = framing.deltaPublication(in: line) else { return }
                    read.append(found)
                }
            }
        }
        #expect(read.map(\.delta) == [false, true])
        #expect(read.first?.data == base && read.last?.data == delta)
    }

    @Test func aBrokenProtobufMessageEndsTheReading() {
        var frame = Self.serverFrame(.protobuf)
        frame.append(contentsOf: [0x05, 0x08])  // declares 5 bytes, 1 follows
        var count = 0
        frame.withUnsafeBytes { bytes in CentrifugeFraming(encoding: .protobuf).lines(in: bytes) { _ in count += 1 } }
        #expect(count == 5)
    }

    @Test(arguments: ProtocolEncoding.allCases)
    func commandsAreWhatTheServerDecodes(_ encoding: ProtocolEncoding) throws {
        let framing = CentrifugeFraming(encoding: encoding)
        let connect = try encoding.commands(in: framing.connect(token: "t", subscribing: [SubscribeRequest(channel: "a")]))
        #expect(
            connect == [
                .command(Command(id: 1, .connect(ConnectRequest(token: "t")))), .command(Command(id: 2, .subscribe(SubscribeRequest(channel: "a")))),
            ])
        let payload = FanoutScenario.payload(stamp: 7, size: 40)
        let publish = try encoding.commands(in: framing.publish(id: 11, channel: "bench", data: payload))
        #expect(publish == [.command(Command(id: 11, .publish(channel: "bench", data: Payload(try RawJSON(validating: payload)))))])
        #expect(try encoding.commands(in: framing.pong) == [.command(Command(id: 0, .pong))])
        #expect(
            try encoding.commands(in: framing.rpc(id: 12, method: "m", data: ["a": 1])) == [
                .command(Command(id: 12, .rpc(method: "m", data: ["a": 1])))
            ])
    }

    @Test func fanoutPayloadsHaveTheExactSizeAndCarryTheirStamp() {
        for size in [32, 64, 128, 1000] {
            let payload = FanoutScenario.payload(stamp: 1_234_567_890_123, size: size)
            #expect(payload.count == size)
            var stamps: [Int64] = []
            ByteScan.integers(after: Array(#"{"t":"#.utf8), in: payload) { stamps.append($0) }
            #expect(stamps == [1_234_567_890_123])
        }
    }
}
