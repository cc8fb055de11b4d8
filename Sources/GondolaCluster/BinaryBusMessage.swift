@_spi(Engine) import GondolaHub
import GondolaProtocol

/// The Redis bus's messages and stream entries, in a binary form read without building a JSON
/// tree: a publication's payload travels as the bytes it was published with (no escaping, no
/// base64), so a node forwards it as it came. PostgreSQL's notifications must be text and keep
/// `BusCodec`'s JSON; a Redis message that starts with `{` is read as JSON too.
///
/// A message is a header — the marker byte `0xB5`, the format version `1`, the sending node's
/// uid (a length byte and its bytes) and the message's sequence number (8 bytes, little-endian)
/// — followed by its events, each self-delimiting:
/// - `p`, a publication: its offset as decimal digits after a length byte (no digits: none),
///   which lets the stream script put the offset it took in place; the channel and the data
///   (each a 4-byte little-endian length and the bytes), a byte saying whether the data is
///   binary, the publication's info and its tags as JSON (4-byte length, 0 when absent), and a
///   flags byte (1: may go as a delta; 2: its W3C `traceparent` follows, as a 4-byte length and
///   the bytes, written only by a node that traces);
/// - `j`, any other event: a 4-byte length and the event as `BusCodec` writes it (these are
///   rare: joins, leaves, disconnects, domain changes).
///
/// A stream entry is a publication event alone, with no digits (the entry's id is its offset).
enum BinaryBusMessage {
    static let marker: UInt8 = 0xB5
    static let version: UInt8 = 1

    /// The header of a message from `node` numbered `sequence`.
    static func header(node: String, sequence: UInt64) -> [UInt8] {
        let uid = Array(node.utf8.prefix(255))
        var bytes: [UInt8] = [marker, version, UInt8(uid.count)]
        bytes += uid
        append(sequence, bytes: 8, to: &bytes)
        return bytes
    }

    /// A message carrying events already encoded by `encode`.
    static func message(node: String, sequence: UInt64, events: [[UInt8]]) -> [UInt8] {
        var bytes = header(node: node, sequence: sequence)
        bytes.reserveCapacity(bytes.count + events.reduce(0) { $0 + $1.count })
        for event in events { bytes += event }
        return bytes
    }

    static func encode(_ event: ClusterEvent) -> [UInt8] {
        guard case let .publication(channel, publication) = event else {
            let json = BusCodec.encode(event)
            var bytes: [UInt8] = [UInt8(ascii: "j")]
            appendField(json, to: &bytes)
            return bytes
        }
        return publicationEvent(channel: channel, publication, offset: publication.offset)
    }

    /// A publication event; with `offset` 0 it has no digits (a stream entry, or one whose offset the script adds).
    static func publicationEvent(channel: String, _ publication: Publication, offset: UInt64) -> [UInt8] {
        let digits = offset > 0 ? Array(String(offset).utf8) : []
        var bytes: [UInt8] = [UInt8(ascii: "p"), UInt8(digits.count)]
        bytes += digits
        bytes.reserveCapacity(bytes.count + channel.utf8.count + publication.data.bytes.count + 32)
        appendField(Array(channel.utf8), to: &bytes)
        appendField(publication.data.bytes, to: &bytes)
        bytes.append(publication.data.isJSON ? 0 : 1)
        appendField(publication.info.map { $0.json.bytes } ?? [], to: &bytes)
        appendField(publication.tags.isEmpty ? [] : PublicationTags.json(publication.tags).bytes, to: &bytes)
        let traceParent = publication.traceParent.map { Array($0.utf8) }
        bytes.append((publication.useDelta ? 1 : 0) | (traceParent == nil ? 0 : 2))
        if let traceParent { appendField(traceParent, to: &bytes) }
        return bytes
    }

    /// The events of a message (binary, or `BusCodec`'s JSON from a node that writes it).
    static func decode(_ message: [UInt8]) throws -> [ClusterEvent] {
        guard message.first == marker else {
            guard case let .events(events) = try BusCodec.decodeNotification(bytes: message) else {
                throw BusCodecError("a Redis bus message names a PostgreSQL row")
            }
            return events
        }
        var reader = Reader(message)
        _ = try reader.byte()
        guard try reader.byte() == version else { throw BusCodecError("a bus message of an unknown version") }
        _ = try reader.take(Int(try reader.byte()))
        _ = try reader.take(8)
        var events: [ClusterEvent] = []
        while !reader.atEnd { events.append(try reader.event()) }
        return events
    }

    /// A stream entry: a publication event (binary, or JSON as earlier versions stored it).
    static func decodeEntry(_ bytes: [UInt8]) throws -> ClusterEvent {
        guard bytes.first == UInt8(ascii: "p") else { return try BusCodec.decodeEvent(bytes) }
        var reader = Reader(bytes)
        return try reader.event()
    }

    private static func appendField(_ field: [UInt8], to bytes: inout [UInt8]) {
        append(UInt64(field.count), bytes: 4, to: &bytes)
        bytes += field
    }

    private static func append(_ value: UInt64, bytes count: Int, to bytes: inout [UInt8]) {
        for index in 0..<count { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * index))) }
    }

    /// Reads fields in order, refusing a message cut short.
    private struct Reader {
        let bytes: [UInt8]
        var position = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { position == bytes.count }

        mutating func byte() throws -> UInt8 {
            guard position < bytes.count else { throw BusCodecError("a bus message cut short") }
            defer { position += 1 }
            return bytes[position]
        }

        mutating func take(_ count: Int) throws -> ArraySlice<UInt8> {
            guard count >= 0, count <= bytes.count - position else { throw BusCodecError("a bus message cut short") }
            defer { position += count }
            return bytes[position..<position + count]
        }

        mutating func field() throws -> ArraySlice<UInt8> {
            let length = try take(4).reversed().reduce(0) { $0 << 8 | Int($1) }
            return try take(length)
        }

        mutating func event() throws -> ClusterEvent {
            switch try byte() {
            case UInt8(ascii: "p"):
                let digits = try take(Int(try byte()))
                guard digits.isEmpty || digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                    let offset = digits.isEmpty ? 0 : UInt64(String(decoding: digits, as: UTF8.self))
                else { throw BusCodecError("a publication's offset is not a number") }
                let channel = String(decoding: try field(), as: UTF8.self)
                let data = Array(try field())
                let payload = try byte() == 0 ? Payload(RawJSON(trusted: data)) : Payload(received: data)
                let info = try field()
                let tags = try field()
                let flags = try byte()
                let traceParent = flags & 2 == 2 ? String(decoding: try field(), as: UTF8.self) : nil
                return .publication(
                    channel: channel,
                    Publication(
                        offset: offset, data: payload, info: info.isEmpty ? nil : try ClientInfo(json: BusCodec.parse(Array(info))),
                        tags: tags.isEmpty ? [:] : try PublicationTags.read(BusCodec.parse(Array(tags))), useDelta: flags & 1 == 1,
                        traceParent: traceParent))
            case UInt8(ascii: "j"):
                return try BusCodec.decodeEvent(Array(try field()))
            case let kind:
                throw BusCodecError("a bus event of unknown kind \(kind)")
            }
        }
    }
}
