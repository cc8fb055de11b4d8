import Foundation
@_spi(Engine) import GondolaHub
import GondolaProtocol
import Testing

@_spi(Engine) @testable import GondolaCluster

/// The Redis bus's binary messages: every kind of event comes back as sent, a payload as its
/// bytes (binary, or JSON as spelled), info byte for byte, a publication's trace parent with it; a message cut short or of another
/// version is refused; a JSON message and a JSON stream entry (from a node that writes them)
/// are still read.
@Suite struct BinaryBusMessageTests {
    static let info = ClientInfo(
        user: "ann", client: "c1", connInfo: try! RawJSON(validating: Array(#"{"seat" : 1.50}"#.utf8)),
        chanInfo: try! RawJSON(validating: Array(#"[ "x" ]"#.utf8)))

    static let events: [ClusterEvent] = [
        .publication(channel: "room:a", Publication(offset: 42, data: Payload(try! RawJSON(validating: Array(#"{ "n" : 1.0 }"#.utf8))))),
        .publication(
            channel: "binary", Publication(data: Payload(received: [0, 0xB5, 255, 10, 13, 0x7B]), info: info, tags: ["k": "v"], useDelta: true)),
        .publication(channel: "ünïcode ✓", Publication(offset: 7, data: Payload(received: []))),
        .publication(
            channel: "traced",
            Publication(
                offset: 8, data: Payload(received: [1]), useDelta: true, traceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")),
        .join(channel: "room:a", info),
        .leave(channel: "room:a", info),
        .unsubscribe(user: "ann", channel: "room:a", target: ConnectionFilter(client: "c1")),
        .disconnect(user: "ann", code: DisconnectCode(code: 4001, reason: "moved"), keeping: ["c2"], target: ConnectionFilter(session: "s2")),
        .domain(topic: "fleet", origin: "node-1", payload: ["car": "7"]),
    ]

    @Test func everyEventComesBackAsSentWithItsBytes() throws {
        let message = BinaryBusMessage.message(node: "node-a", sequence: 9, events: Self.events.map(BinaryBusMessage.encode))
        #expect(message.first == BinaryBusMessage.marker)
        let decoded = try BinaryBusMessage.decode(message)
        #expect(decoded == Self.events)
        guard case let .publication(_, spelled) = decoded[0], case let .join(_, info) = decoded[4] else {
            Issue.record("not the events sent")
            return
        }
        #expect(spelled.data.bytes == Array(#"{ "n" : 1.0 }"#.utf8))
        #expect(info.connInfo?.bytes == Array(#"{"seat" : 1.50}"#.utf8))
    }

    @Test func theStreamScriptsMessageIsTheHeaderAndTheEntryWithItsOffset() throws {
        let publication = Publication(data: Payload(received: [1, 2, 3]), info: Self.info)
        let entry = BinaryBusMessage.publicationEvent(channel: "room:a", publication, offset: 0)
        // What the append script publishes: header, "p", the offset's digits after their length, the entry's rest.
        let digits = Array("1234".utf8)
        let message = BinaryBusMessage.header(node: "n", sequence: 1) + [UInt8(ascii: "p"), UInt8(digits.count)] + digits + entry.dropFirst(2)
        var numbered = publication
        numbered.offset = 1234
        #expect(try BinaryBusMessage.decode(message) == [.publication(channel: "room:a", numbered)])
        #expect(try BinaryBusMessage.decodeEntry(entry) == .publication(channel: "room:a", publication))
    }

    @Test func aMessageCutShortOrOfAnotherVersionIsRefused() {
        let message = BinaryBusMessage.message(node: "node-a", sequence: 9, events: Self.events.map(BinaryBusMessage.encode))
        for cut in [3, 12, message.count - 1] {
            #expect(throws: BusCodecError.self) { try BinaryBusMessage.decode(Array(message.prefix(cut))) }
        }
        var future = message
        future[1] = 2
        #expect(throws: BusCodecError.self) { try BinaryBusMessage.decode(future) }
    }

    @Test func jsonMessagesAndEntriesAreStillRead() throws {
        let json = BusCodec.envelope(node: "old", sequence: 3, events: Self.events.map(BusCodec.encode))
        #expect(try BinaryBusMessage.decode(Array(json.utf8)) == Self.events)
        #expect(try BinaryBusMessage.decodeEntry(BusCodec.encode(Self.events[1])) == Self.events[1])
    }
}
