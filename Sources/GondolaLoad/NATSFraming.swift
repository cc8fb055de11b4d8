/// The parts of the NATS client protocol the fan-out scenario uses: CONNECT, SUB,
/// PUB and PING/PONG out; INFO, MSG, PING, PONG, +OK and -ERR in.
public enum NATSFraming {
    /// CONNECT (no echo, no verbose acks), then SUB `subject` with `sid`, then PING:
    /// the PONG that answers it means the subscription is in place.
    public static func subscribe(subject: String, sid: Int) -> [UInt8] {
        Array(#"CONNECT {"verbose":false,"pedantic":false,"echo":false,"name":"gondola-load","lang":"swift","version":"1","protocol":1}"#.utf8)
            + Array("\r\nSUB \(subject) \(sid)\r\nPING\r\n".utf8)
    }

    /// CONNECT alone, for a connection that only publishes.
    public static func connect() -> [UInt8] {
        Array(#"CONNECT {"verbose":false,"pedantic":false,"echo":false,"name":"gondola-load","lang":"swift","version":"1","protocol":1}"#.utf8)
            + crlf
    }

    /// PUB `subject` with `payload`.
    public static func publish(subject: String, payload: [UInt8]) -> [UInt8] {
        Array("PUB \(subject) \(payload.count)\r\n".utf8) + payload + crlf
    }

    public static let pong = Array("PONG\r\n".utf8)
    static let crlf: [UInt8] = [0x0D, 0x0A]

    /// One server operation.
    public enum Operation: Equatable, Sendable {
        case info
        case ping
        case pong
        case ok
        case error(String)
        case message(payload: ArraySlice<UInt8>)
    }

    /// Splits a server's byte stream into operations; bytes may arrive cut anywhere.
    /// Holds at most `maxPending` bytes of an unfinished operation.
    public struct Parser: Sendable {
        private var buffer: StreamBuffer
        public let maxPending: Int

        public init(maxPending: Int = 1 << 20) {
            self.maxPending = maxPending
            buffer = StreamBuffer(limit: maxPending)
        }

        /// Feeds received bytes and hands each complete operation to `handle`.
        public mutating func feed<Bytes: Collection>(_ bytes: Bytes, _ handle: (Operation) -> Void) throws(ProtocolViolation)
        where Bytes.Element == UInt8 {
            let maxPending = maxPending
            try buffer.feed(bytes) { pending throws(ProtocolViolation) in try Self.parse(pending, maxPending: maxPending, handle) }
        }

        /// Hands out the complete operations at the front of `pending`; answers the bytes they took.
        static func parse(_ pending: [UInt8], maxPending: Int, _ handle: (Operation) -> Void) throws(ProtocolViolation) -> Int {
            var start = 0
            while let lineEnd = lineEnd(in: pending, from: start) {
                let line = pending[start..<lineEnd]
                let verb = line.prefix { $0 != 0x20 && $0 != 0x09 }
                switch Verb(verb) {
                case .msg:
                    let fields = line.split(whereSeparator: { $0 == 0x20 || $0 == 0x09 })
                    guard (4...5).contains(fields.count), let last = fields.last, let (size, end) = ByteScan.integer(in: last, at: last.startIndex),
                        end == last.endIndex
                    else {
                        throw ProtocolViolation("malformed MSG line: \(String(decoding: line.prefix(80), as: UTF8.self))")
                    }
                    let payloadStart = lineEnd + 2
                    let payloadEnd = payloadStart + Int(size)
                    guard payloadEnd + 2 - start <= maxPending else {
                        throw ProtocolViolation("message of \(size) bytes is larger than \(maxPending)")
                    }
                    guard pending.count >= payloadEnd + 2 else { return start }
                    handle(.message(payload: pending[payloadStart..<payloadEnd]))
                    start = payloadEnd + 2
                    continue
                case .ping: handle(.ping)
                case .pong: handle(.pong)
                case .ok: handle(.ok)
                case .info: handle(.info)
                case .error: handle(.error(quotedText(line.dropFirst(4))))
                case nil:
                    throw ProtocolViolation("unknown operation: \(String(decoding: line.prefix(80), as: UTF8.self))")
                }
                start = lineEnd + 2
            }
            return start
        }

        /// The operation names a server sends, matched without regard to case.
        enum Verb: String, CaseIterable {
            case msg = "MSG"
            case ping = "PING"
            case pong = "PONG"
            case ok = "+OK"
            case info = "INFO"
            case error = "-ERR"

            init?(_ bytes: ArraySlice<UInt8>) {
                let found = Self.allCases.first { verb in
                    verb.rawValue.utf8.count == bytes.count
                        && zip(verb.rawValue.utf8, bytes).allSatisfy { expected, byte in byte == expected || byte & 0xDF == expected }
                }
                guard let found else { return nil }
                self = found
            }
        }

        /// The text of an -ERR line without its spaces and quotes.
        private static func quotedText(_ bytes: ArraySlice<UInt8>) -> String {
            let isPadding = { (byte: UInt8) in byte == 0x20 || byte == 0x27 }
            let trimmed = bytes.drop(while: isPadding)
            return String(decoding: trimmed.prefix(trimmed.count - trimmed.reversed().prefix(while: isPadding).count), as: UTF8.self)
        }

        /// Index of the CR of the next CRLF at or after `start`.
        private static func lineEnd(in pending: [UInt8], from start: Int) -> Int? {
            var index = start
            while index + 1 < pending.count {
                if pending[index] == 0x0D, pending[index + 1] == 0x0A { return index }
                index += 1
            }
            return nil
        }
    }
}
