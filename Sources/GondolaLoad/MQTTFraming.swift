/// The parts of MQTT 3.1.1 the fan-out scenario uses, at QoS 0: CONNECT,
/// SUBSCRIBE and PUBLISH out; CONNACK, SUBACK, PUBLISH and PINGRESP in.
public enum MQTTFraming {
    /// The WebSocket subprotocol MQTT brokers expect.
    public static let subprotocol = "mqtt"

    /// CONNECT with a clean session and keep-alive off (0), so an idle
    /// subscriber needs no pings.
    public static func connect(clientID: String) -> [UInt8] {
        var body: [UInt8] = [0x00, 0x04] + Array("MQTT".utf8) + [0x04, 0x02, 0x00, 0x00]
        appendString(clientID, to: &body)
        return packet(type: 0x10, body: body)
    }

    /// SUBSCRIBE to one topic filter at QoS 0.
    public static func subscribe(packetID: UInt16, topic: String) -> [UInt8] {
        var body: [UInt8] = [UInt8(packetID >> 8), UInt8(packetID & 0xFF)]
        appendString(topic, to: &body)
        body.append(0x00)
        return packet(type: 0x82, body: body)
    }

    /// PUBLISH at QoS 0 (no packet id, no acknowledgement).
    public static func publish(topic: String, payload: [UInt8]) -> [UInt8] {
        var body: [UInt8] = []
        appendString(topic, to: &body)
        body.append(contentsOf: payload)
        return packet(type: 0x30, body: body)
    }

    /// A fixed header (type and flags, remaining length) followed by `body`.
    static func packet(type: UInt8, body: [UInt8]) -> [UInt8] {
        var bytes = [type]
        var length = body.count
        repeat {
            var byte = UInt8(length % 128)
            length /= 128
            if length > 0 { byte |= 0x80 }
            bytes.append(byte)
        } while length > 0
        return bytes + body
    }

    static func appendString(_ text: String, to bytes: inout [UInt8]) {
        let utf8 = Array(text.utf8)
        bytes.append(UInt8(utf8.count >> 8))
        bytes.append(UInt8(utf8.count & 0xFF))
        bytes.append(contentsOf: utf8)
    }

    /// One packet from the broker.
    public enum Packet: Equatable, Sendable {
        /// CONNACK with return code 0.
        case connectAccepted
        /// CONNACK with another return code.
        case connectRefused(code: UInt8)
        /// SUBACK: the granted QoS of each filter (0x80 = refused).
        case subscribed(packetID: UInt16, granted: [UInt8])
        case publish(topic: String, payload: ArraySlice<UInt8>)
        case pingResponse
        /// Any other packet type (by its number), which the scenario ignores.
        case other(type: UInt8)
    }

    /// Splits a broker's byte stream into packets; bytes may arrive cut anywhere.
    /// Holds at most `maxPacket` bytes of an unfinished packet.
    public struct Parser: Sendable {
        private var buffer: StreamBuffer
        public let maxPacket: Int

        public init(maxPacket: Int = 1 << 20) {
            self.maxPacket = maxPacket
            buffer = StreamBuffer(limit: maxPacket + 5)
        }

        /// Feeds received bytes and hands each complete packet to `handle`.
        public mutating func feed<Bytes: Collection>(_ bytes: Bytes, _ handle: (Packet) -> Void) throws(ProtocolViolation)
        where Bytes.Element == UInt8 {
            let maxPacket = maxPacket
            try buffer.feed(bytes) { pending throws(ProtocolViolation) in try Self.parse(pending, maxPacket: maxPacket, handle) }
        }

        /// Hands out the complete packets at the front of `pending`; answers the bytes they took.
        static func parse(_ pending: [UInt8], maxPacket: Int, _ handle: (Packet) -> Void) throws(ProtocolViolation) -> Int {
            var start = 0
            while start < pending.count {
                var length = 0
                var multiplier = 1
                var index = start + 1
                while true {
                    guard index < pending.count else { return start }
                    let byte = pending[index]
                    length += Int(byte & 0x7F) * multiplier
                    index += 1
                    if byte & 0x80 == 0 { break }
                    multiplier *= 128
                    guard multiplier <= 128 * 128 * 128 else { throw ProtocolViolation("remaining length longer than four bytes") }
                }
                guard length <= maxPacket else { throw ProtocolViolation("packet of \(length) bytes is larger than \(maxPacket)") }
                guard pending.count >= index + length else { return start }
                handle(try decode(header: pending[start], body: pending[index..<index + length]))
                start = index + length
            }
            return start
        }

        static func decode(header: UInt8, body: ArraySlice<UInt8>) throws(ProtocolViolation) -> Packet {
            let type = header >> 4
            switch type {
            case 2:
                guard body.count == 2 else { throw ProtocolViolation("CONNACK of \(body.count) bytes") }
                let code = body[body.startIndex + 1]
                return code == 0 ? .connectAccepted : .connectRefused(code: code)
            case 9:
                guard body.count >= 3 else { throw ProtocolViolation("SUBACK of \(body.count) bytes") }
                let id = UInt16(body[body.startIndex]) << 8 | UInt16(body[body.startIndex + 1])
                return .subscribed(packetID: id, granted: Array(body.dropFirst(2)))
            case 3:
                guard body.count >= 2 else { throw ProtocolViolation("PUBLISH of \(body.count) bytes") }
                let topicLength = Int(body[body.startIndex]) << 8 | Int(body[body.startIndex + 1])
                let qos = (header >> 1) & 0x03
                let payloadStart = body.startIndex + 2 + topicLength + (qos > 0 ? 2 : 0)
                guard payloadStart <= body.endIndex else { throw ProtocolViolation("PUBLISH topic runs past the packet") }
                let topic = String(decoding: body[body.startIndex + 2..<body.startIndex + 2 + topicLength], as: UTF8.self)
                return .publish(topic: topic, payload: body[payloadStart...])
            case 13:
                return .pingResponse
            default:
                return .other(type: type)
            }
        }
    }
}
