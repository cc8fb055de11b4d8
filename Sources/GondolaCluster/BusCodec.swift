import Foundation
@_spi(Engine) import GondolaHub
import GondolaProtocol

/// How cluster events are written into PostgreSQL notifications and read back (the Redis
/// bus carries `BinaryBusMessage`s, which hold other events in this form).
///
/// A notification is `{"n":<node uid>,"s":<sequence>,"e":[event…]}`, or, for an
/// event too large for a notification (8,000 bytes), `{"n":…,"s":…,"r":<row id>}`
/// naming the row of `cluster_bus_payload` that holds the events array. Each event
/// is a small object: `{"t":"p","c":channel,"o":offset,"d":"<data as text>","i":info,"g":{tags},"f":true}`
/// (a binary payload as `"b":"<base64>"` instead of `"d"`; `"i"` and `"g"` only when present, `"f"`
/// only when the publication may go as a delta, `"tp"` its W3C `traceparent` when the publishing node traces) for a publication, `"j"`/`"l"` for join/leave with `"i"`, `"u"` with `"u"` (user) and
/// `"c"` (and `"cl"` and `"se"`, the one client and session) for an unsubscribe, `"x"` with `"u"`, `"c"`
/// (close code), `"r"` (reason), `"k"` (clients kept), `"cl"` and `"se"` for a disconnect, `"h"` with `"u"`,
/// `"cl"`, `"se"`, `"e"` (expired), `"a"` (expire at, Unix seconds) and `"i"` (info as text) for a refresh, `"d"` with `"k"` (topic),
/// `"n"` (origin node) and `"d"` (payload) for a domain's change, `"r"` with those and `"g"`
/// (region) for a regional one.
enum BusCodec {
    /// Largest notification payload written; PostgreSQL's limit is 8,000 bytes.
    static let maxPayloadBytes = 7_800

    /// `event` with the members that name the connections `target` picks (`"cl"`, `"se"`).
    private static func adding(_ target: ConnectionFilter, to event: JSON) -> JSON {
        var event = event
        if let client = target.client { event = event.adding("cl", .string(client)) }
        if let session = target.session { event = event.adding("se", .string(session)) }
        return event
    }

    static func encode(_ event: ClusterEvent) -> [UInt8] {
        let json: JSON
        switch event {
        case let .publication(channel, publication):
            let data = publication.data
            var members: [(key: String, value: JSON)] = [("t", "p")]
            if publication.offset > 0 { members.append(("o", .int(Int64(publication.offset)))) }
            members.append(("c", .string(channel)))
            members.append(
                data.isJSON ? ("d", .string(String(decoding: data.bytes, as: UTF8.self))) : ("b", .string(Data(data.bytes).base64EncodedString())))
            if let info = publication.info { members.append(("i", info.json)) }
            if !publication.tags.isEmpty { members.append(("g", PublicationTags.json(publication.tags))) }
            if publication.useDelta { members.append(("f", true)) }
            if let traceParent = publication.traceParent { members.append(("tp", .string(traceParent))) }
            json = .object(members)
        case let .join(channel, info): json = ["t": "j", "c": .string(channel), "i": info.json]
        case let .leave(channel, info): json = ["t": "l", "c": .string(channel), "i": info.json]
        case let .unsubscribe(user, channel, target):
            json = Self.adding(target, to: ["t": "u", "u": .string(user), "c": .string(channel)])
        // The options travel as a string, so their info and data keep their bytes.
        case let .subscribe(user, channel, options):
            json = ["t": "s", "u": .string(user), "c": .string(channel), "o": .string(String(decoding: options.bytes, as: UTF8.self))]
        case let .disconnect(user, code, keeping, target):
            json = Self.adding(
                target,
                to: [
                    "t": "x", "u": .string(user), "c": .int(Int64(code.code)), "r": .string(code.reason),
                    "k": .array(keeping.sorted().map(JSON.string)),
                ])
        case let .refresh(user, target, refresh):
            var event = Self.adding(target, to: ["t": "h", "u": .string(user), "e": .bool(refresh.expired)])
            if let end = refresh.expireAt { event = event.adding("a", .int(Int64(end.timeIntervalSince1970))) }
            // Info travels as a string, so its bytes are kept.
            if let info = refresh.info { event = event.adding("i", .string(String(decoding: info.bytes, as: UTF8.self))) }
            json = event
        case let .domain(topic, origin, payload): json = ["t": "d", "k": .string(topic), "n": .string(origin), "d": payload]
        case let .regional(region, topic, origin, payload):
            json = ["t": "r", "g": .string(region), "k": .string(topic), "n": .string(origin), "d": payload]
        }
        return json.bytes
    }

    /// A notification carrying already encoded events.
    static func envelope(node: String, sequence: UInt64, events: [[UInt8]]) -> String {
        var bytes = Array(#"{"n":"#.utf8) + JSON.string(node).bytes + Array(#","s":\#(sequence),"e":"#.utf8)
        bytes += eventsArray(events)
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A notification naming a `cluster_bus_payload` row.
    static func reference(node: String, sequence: UInt64, row: Int64) -> String {
        JSON.object([("n", .string(node)), ("s", .int(Int64(sequence))), ("r", .int(row))]).text
    }

    static func eventsArray(_ events: [[UInt8]]) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        for (index, event) in events.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes += event
        }
        bytes.append(UInt8(ascii: "]"))
        return bytes
    }

    /// What a notification holds: its events, or the row to read them from.
    enum Notification {
        case events([ClusterEvent])
        case reference(Int64)
    }

    static func decodeNotification(_ payload: String) throws -> Notification {
        try decodeNotification(bytes: Array(payload.utf8))
    }

    /// `decodeNotification` of a message's bytes as they came (a Redis message).
    static func decodeNotification(bytes payload: [UInt8]) throws -> Notification {
        let json = try parse(payload)
        if case let .int(row)? = json["r"] { return .reference(row) }
        guard let events = json["e"] else {
            throw BusCodecError("notification without events: \(String(decoding: payload.prefix(200), as: UTF8.self))")
        }
        return .events(try decodeEvents(events))
    }

    /// Bus JSON parsed with every client's `conn_info` and `chan_info` kept as written, so
    /// the info of a publication, join or leave reaches other nodes' clients byte for byte.
    static func parse(_ bytes: [UInt8]) throws -> JSON {
        try JSONParser.parse(bytes, keepingRaw: ["conn_info", "chan_info"])
    }

    /// One event as `encode` wrote it.
    static func decodeEvent(_ bytes: [UInt8]) throws -> ClusterEvent {
        try decode(parse(bytes))
    }

    static func decodeEvents(_ json: JSON) throws -> [ClusterEvent] {
        guard case let .array(entries) = json else { throw BusCodecError("events must be an array") }
        return try entries.map(decode)
    }

    private static func decode(_ json: JSON) throws -> ClusterEvent {
        func string(_ key: String) throws -> String {
            guard case let .string(value)? = json[key] else { throw BusCodecError("event without \(key): \(json.text.prefix(200))") }
            return value
        }
        /// A member older nodes do not write: nil when absent.
        func optionalString(_ key: String) throws -> String? {
            guard let value = json[key] else { return nil }
            guard case let .string(text) = value else { throw BusCodecError("event's \(key) is not a string: \(json.text.prefix(200))") }
            return text
        }
        func info() throws -> ClientInfo {
            guard let info = json["i"] else { throw BusCodecError("event without info") }
            return try ClientInfo(json: info)
        }
        func target() throws -> ConnectionFilter {
            ConnectionFilter(client: try optionalString("cl"), session: try optionalString("se"))
        }
        switch try string("t") {
        case "p":
            // Data travels as a string (binary data as base64), so its bytes come back exactly as published.
            let data: Payload
            if case let .string(base64)? = json["b"] {
                guard let bytes = Data(base64Encoded: base64) else { throw BusCodecError("binary data that is not base64") }
                data = Payload(received: [UInt8](bytes))
            } else {
                data = Payload(RawJSON(trusted: Array(try string("d").utf8)))
            }
            var offset: UInt64 = 0
            if case let .int(value)? = json["o"] { offset = UInt64(value) }
            let tags = try json["g"].map { (tags) throws in try PublicationTags.read(tags) } ?? [:]
            return .publication(
                channel: try string("c"),
                Publication(
                    offset: offset, data: data, info: json["i"] == nil ? nil : try info(), tags: tags, useDelta: json["f"] == .bool(true),
                    traceParent: try optionalString("tp")))
        case "j": return .join(channel: try string("c"), try info())
        case "l": return .leave(channel: try string("c"), try info())
        case "u": return .unsubscribe(user: try string("u"), channel: try string("c"), target: try target())
        case "s": return .subscribe(user: try string("u"), channel: try string("c"), options: try RawJSON(validating: Array(try string("o").utf8)))
        case "x":
            // Events from a node before codes travelled carry the user alone: a force disconnect.
            guard case let .int(code)? = json["c"], let closeCode = UInt16(exactly: code) else {
                return .disconnect(user: try string("u"), code: .forceDisconnect, keeping: [])
            }
            let keeping: [String] =
                if case let .array(clients)? = json["k"] { clients.compactMap { if case let .string(id) = $0 { id } else { nil } } } else { [] }
            return .disconnect(
                user: try string("u"), code: DisconnectCode(code: closeCode, reason: try string("r")), keeping: Set(keeping),
                target: try target())
        case "h":
            var refresh = ConnectionRefresh(expired: json["e"] == .bool(true))
            if case let .int(seconds)? = json["a"] { refresh.expireAt = Date(timeIntervalSince1970: Double(seconds)) }
            if let info = try optionalString("i") { refresh.info = try RawJSON(validating: Array(info.utf8)) }
            return .refresh(user: try string("u"), target: try target(), refresh)
        case "d":
            guard let payload = json["d"] else { throw BusCodecError("domain event without payload") }
            return .domain(topic: try string("k"), origin: try string("n"), payload: payload)
        case "r":
            guard let payload = json["d"] else { throw BusCodecError("regional event without payload") }
            return .regional(region: try string("g"), topic: try string("k"), origin: try string("n"), payload: payload)
        case let other: throw BusCodecError("unknown event type '\(other)'")
        }
    }
}

/// A notification that does not hold what the bus writes.
struct BusCodecError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
