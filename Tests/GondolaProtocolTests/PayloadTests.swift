import Foundation
import GondolaProtocol
import Testing

/// Payloads pass byte for byte: what a client publishes is what a subscriber of either
/// encoding reads, with its white space, number spellings and escapes; binary payloads
/// pass through Protobuf untouched and reach JSON clients as base64.
@Suite struct PayloadTests {
    /// Spellings a re-encoding would change (or, for the big integer, lose).
    static let spellings: [String] = [
        #"{"input": "x"}"#,
        "1.50",
        #""\u00e9""#,
        "12345678901234567890",
        #"{ "a" : [ 1 , 2.0e0 , -0.0 ] , "b":"\/" ,"c":"\ud83d\ude00"}"#,
        "\t[ true,\tnull ] ",
    ]

    static func publish(_ data: Payload, id: UInt32 = 7) -> Command {
        Command(id: id, .publish(channel: "room:a", data: data))
    }

    static func publication(in message: ServerMessage) -> Publication? {
        guard case let .push(push) = message, case let .publication(publication) = push.body else { return nil }
        return publication
    }

    @Test(arguments: spellings)
    func aJSONClientsPublicationReachesBothEncodingsAsWritten(_ text: String) throws {
        let frame = Array(#"{"id":7,"publish":{"channel":"room:a","data":\#(text)}}"#.utf8)
        guard case let .command(command)? = try ProtocolEncoding.json.commands(in: frame).first,
            case let .publish(_, data) = command.method
        else {
            Issue.record("not a publish")
            return
        }
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        #expect(data == Payload(try RawJSON(validating: Array(trimmed.utf8))))
        #expect(data.bytes == Array(trimmed.utf8) && data.isJSON)

        let push = Push(channel: "room:a", .publication(Publication(offset: 1, data: data)))
        let jsonFrame = ProtocolEncoding.json.encode(push)
        #expect(String(decoding: jsonFrame, as: UTF8.self).contains(#""data":\#(trimmed)"#))
        for encoding in ProtocolEncoding.allCases {
            let messages = try encoding.serverMessages(in: encoding.encode(push))
            #expect(messages.compactMap(Self.publication).map(\.data.bytes) == [Array(trimmed.utf8)], "\(encoding)")
        }
    }

    @Test(arguments: spellings)
    func aProtobufClientsJSONPayloadKeepsEveryByte(_ text: String) throws {
        let sent = Payload(received: Array(text.utf8))
        #expect(sent.isJSON)
        let decoded = try ProtocolEncoding.protobuf.commands(in: ProtocolEncoding.protobuf.encode(Self.publish(sent)))
        #expect(decoded == [.command(Self.publish(sent))])
        guard case let .command(command)? = decoded.first, case let .publish(_, data) = command.method else { return }
        #expect(data.bytes == Array(text.utf8), "surrounding white space included")
    }

    @Test func binaryBytesPassThroughProtobufAndReachJSONClientsAsBase64() throws {
        let bytes: [UInt8] = [0x00, 0xFF, 0xFE, 0x7B, 0x0A, 0x22, 0xC3, 0x28, 0x80]
        let sent = Payload(received: bytes)
        #expect(!sent.isJSON)
        let decoded = try ProtocolEncoding.protobuf.commands(in: ProtocolEncoding.protobuf.encode(Self.publish(sent)))
        #expect(decoded == [.command(Self.publish(sent))], "a Protobuf client may publish any bytes")

        let push = Push(channel: "room:a", .publication(Publication(offset: 3, data: sent)))
        let protobuf = try ProtocolEncoding.protobuf.serverMessages(in: ProtocolEncoding.protobuf.encode(push))
        #expect(protobuf.compactMap(Self.publication).map(\.data.bytes) == [bytes])

        let jsonFrame = ProtocolEncoding.json.encode(push)
        #expect(String(validating: jsonFrame, as: UTF8.self) != nil, "a JSON frame stays UTF-8 text")
        let parsed = try JSONParser.parse(jsonFrame)
        #expect(parsed["push"]?["pub"]?["data"] == .string(Data(bytes).base64EncodedString()))
        #expect(sent.value == .string("AP/+ewoiwyiA"))
    }

    @Test func aPayloadsNewlinesAreLeftOutOfJSONFramesOnly() throws {
        let text = "{\n  \"a\": [1,\n 2],\r\n  \"s\": \"x\\ny\"\n}"
        let sent = Payload(received: Array(text.utf8))
        #expect(sent.isJSON)
        let push = Push(channel: "room:a", .publication(Publication(offset: 1, data: sent)))
        let jsonFrame = ProtocolEncoding.json.encode(push)
        #expect(!jsonFrame.contains(0x0A), "a newline would end the frame's line")
        let fromJSON = try ProtocolEncoding.json.serverMessages(in: jsonFrame).compactMap(Self.publication)
        #expect(fromJSON.map(\.data.bytes) == [text.utf8.filter { $0 != 0x0A }])
        #expect(fromJSON.first?.data.value == ["a": [1, 2], "s": "x\ny"])
        let fromProtobuf = try ProtocolEncoding.protobuf.serverMessages(in: ProtocolEncoding.protobuf.encode(push)).compactMap(Self.publication)
        #expect(fromProtobuf.map(\.data.bytes) == [Array(text.utf8)])
    }

    @Test func connectionAndChannelInfoKeepTheirSpelling() throws {
        let info = ClientInfo(
            user: "ann", client: "c1", connInfo: try RawJSON(validating: Array(#"{"name": "Ann", "n": 1.0}"#.utf8)),
            chanInfo: try RawJSON(validating: Array(#"[ 12345678901234567890 ]"#.utf8)))
        let push = Push(channel: "room:a", .join(info))
        for encoding in ProtocolEncoding.allCases {
            let messages = try encoding.serverMessages(in: encoding.encode(push))
            guard case let .push(decoded)? = messages.first, case let .join(read) = decoded.body else {
                Issue.record("no join in \(encoding)")
                continue
            }
            #expect(read.connInfo?.bytes == Array(#"{"name": "Ann", "n": 1.0}"#.utf8), "\(encoding)")
            #expect(read.chanInfo?.bytes == Array(#"[ 12345678901234567890 ]"#.utf8), "\(encoding)")
        }
    }

    @Test(arguments: ["", "{", "[1,]", "{\"a\":1} x", "\"\\ud800\""])
    func aJSONClientsPayloadMustBeOneJSONValue(_ text: String) throws {
        let frame = Array(#"{"id":7,"publish":{"channel":"room:a","data":\#(text)}}"#.utf8)
        #expect(throws: ProtocolDecodingError.self) { try ProtocolEncoding.json.commands(in: frame) }
    }

    @Test func anEmptyProtobufPublicationIsRefused() throws {
        let decoded = try ProtocolEncoding.protobuf.commands(in: ProtocolEncoding.protobuf.encode(Self.publish(Payload(received: []))))
        guard case let .refused(id, error)? = decoded.first else {
            Issue.record("accepted an empty publication: \(decoded)")
            return
        }
        #expect(id == 7 && error.code == 107)
    }
}
