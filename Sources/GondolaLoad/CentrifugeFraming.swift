import GondolaProtocol

/// The Centrifuge commands the scenarios send and the reading of what comes back,
/// in either encoding of the protocol: JSON (text messages of newline-separated
/// lines) or Protobuf (binary messages of length-prefixed Replies).
///
/// Reading classifies each message by a light scan instead of decoding it: the
/// JSON path looks at a line's first bytes, the Protobuf path reads the Reply's
/// envelope (id, error code, push channel) and skips payloads. Payloads are JSON
/// text in both encodings, so the scenarios' markers (`"t":`, `"ts":` …) are found
/// in a Protobuf message's bytes exactly as in a JSON line.
public struct CentrifugeFraming: Sendable {
    public let encoding: ProtocolEncoding

    public init(encoding: ProtocolEncoding) { self.encoding = encoding }

    /// The WebSocket subprotocol to ask for: Protobuf is chosen by it.
    public var subprotocol: String? { encoding == .protobuf ? ProtocolEncoding.protobufSubprotocol : nil }

    /// Whether messages are sent as binary WebSocket messages.
    public var isBinary: Bool { encoding.isBinary }

    /// `connect` with `token` (id 1) followed by one `subscribe` per channel (ids 2, 3, …).
    public func connect(token: String, subscribing channels: [SubscribeRequest]) -> [UInt8] {
        var commands = [Command(id: 1, .connect(ConnectRequest(token: token)))]
        for (index, request) in channels.enumerated() {
            commands.append(Command(id: UInt32(index + 2), .subscribe(request)))
        }
        return frame(commands)
    }

    /// Commands joined into one message.
    public func frame(_ commands: [Command]) -> [UInt8] {
        encoding.frame(commands.map(encoding.encode))
    }

    /// `publish` of `data`, a JSON payload the caller wrote.
    public func publish(id: UInt32, channel: String, data: [UInt8]) -> [UInt8] {
        switch encoding {
        case .json:
            return Array(#"{"id":\#(id),"publish":{"channel":"\#(channel)","data":"#.utf8) + data + Array("}}".utf8)
        case .protobuf:
            // The payload's bytes as they are; checking them is the server's job.
            return encoding.encode(Command(id: id, .publish(channel: channel, data: Payload(received: data))))
        }
    }

    public func rpc(id: UInt32, method: String, data: JSON) -> [UInt8] {
        encoding.encode(Command(id: id, .rpc(method: method, data: data)))
    }

    /// The answer to a server ping.
    public var pong: [UInt8] { encoding.encode(Command(id: 0, .pong)) }

    /// One message of a server frame, classified by a light scan.
    public enum Line {
        /// The server's ping; answer with `pong`.
        case ping
        /// A reply to command `id`; `error` is its error code, if it failed; `line` is the whole message.
        case reply(id: Int64, error: Int64?, line: UnsafeRawBufferPointer.SubSequence)
        /// A publication pushed on `channel`; `line` is the whole message.
        case publication(channel: UnsafeRawBufferPointer.SubSequence, line: UnsafeRawBufferPointer.SubSequence)
        /// Any other push (join, leave, unsubscribe, disconnect).
        case otherPush
    }

    /// Splits a server frame into its messages and classifies each.
    public func lines(in bytes: UnsafeRawBufferPointer, _ each: (Line) -> Void) {
        switch encoding {
        case .json: Self.jsonLines(in: bytes, each)
        case .protobuf: ProtobufEnvelope.messages(in: bytes, each)
        }
    }

    /// A publication of a subscription with deltas: its data as the SDK applies it (in JSON
    /// the text of the `data` string, in Protobuf the `data` field's bytes) and whether it
    /// is a delta; nil when `line` is not such a publication.
    public func deltaPublication(in line: UnsafeRawBufferPointer.SubSequence) -> (data: [UInt8], delta: Bool)? {
        switch encoding {
        case .json:
            guard let message = try? JSONParser.parse(line), let publication = message["push"]?["pub"],
                case let .string(text)? = publication["data"]
            else { return nil }
            return (Array(text.utf8), publication["delta"] == .bool(true))
        case .protobuf:
            return ProtobufEnvelope.publication(in: line).map { (Array($0.data), $0.delta) }
        }
    }

    static let idMarker = Array(#"{"id":"#.utf8)
    static let errorMarker = Array(#""error":{"code":"#.utf8)
    static let pushMarker = Array(#"{"push":{"channel":""#.utf8)
    static let publicationMarker = Array(#""pub":"#.utf8)

    private static func jsonLines(in bytes: UnsafeRawBufferPointer, _ each: (Line) -> Void) {
        let separator = Frame.separator
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: separator) ?? bytes.endIndex
            let line = bytes[start..<end]
            start = end + 1
            if line.count == 2, line.first == 0x7B, line.last == 0x7D {
                each(.ping)
            } else if line.starts(with: idMarker) {
                guard let (id, _) = ByteScan.integer(in: line, at: line.startIndex + idMarker.count) else { continue }
                let error = ByteScan.find(errorMarker, in: line, from: line.startIndex).flatMap {
                    ByteScan.integer(in: line, at: $0 + errorMarker.count)?.value
                }
                each(.reply(id: id, error: error, line: line))
            } else if line.starts(with: pushMarker) {
                let channelStart = line.startIndex + pushMarker.count
                var channelEnd = channelStart
                while channelEnd < line.endIndex, line[channelEnd] != 0x22 { channelEnd += 1 }
                let isPublication = ByteScan.find(publicationMarker, in: line, from: channelEnd) != nil
                each(isPublication ? .publication(channel: line[channelStart..<channelEnd], line: line) : .otherPush)
            }
        }
    }
}

/// Reads the envelope of length-prefixed Protobuf Replies: the id (field 1), the
/// error's code (field 2, its field 1), and a push's channel (field 4, its field 2)
/// and whether it carries a publication (its field 4). Payload bytes are skipped.
/// A message it cannot read ends the frame's reading.
enum ProtobufEnvelope {
    typealias Bytes = UnsafeRawBufferPointer.SubSequence

    static func messages(in bytes: UnsafeRawBufferPointer, _ each: (CentrifugeFraming.Line) -> Void) {
        var index = bytes.startIndex
        while index < bytes.endIndex {
            guard let length = varint(bytes[...], at: &index), length <= UInt64(bytes.endIndex - index) else { return }
            let message = bytes[index..<(index + Int(length))]
            index += Int(length)
            guard let line = classify(message) else { return }
            each(line)
        }
    }

    static func classify(_ message: Bytes) -> CentrifugeFraming.Line? {
        if message.isEmpty { return .ping }
        var id: Int64 = 0
        var error: Int64?
        var push: Bytes?
        let complete = fields(of: message) { number, value, content in
            switch number {
            case 1: id = Int64(truncatingIfNeeded: value)
            case 2: error = content.flatMap { code(in: $0) } ?? 0
            case 4: push = content
            default: break
            }
        }
        guard complete else { return nil }
        if let push, id == 0 {
            var channel: Bytes?
            var isPublication = false
            guard
                fields(
                    of: push,
                    { number, _, content in
                        if number == 2 { channel = content }
                        if number == 4 { isPublication = true }
                    })
            else { return nil }
            return isPublication ? .publication(channel: channel ?? message[message.startIndex..<message.startIndex], line: message) : .otherPush
        }
        return .reply(id: id, error: error, line: message)
    }

    /// A push's publication (Reply field 4, Push field 4): its data (field 4) and delta flag (field 8).
    static func publication(in message: Bytes) -> (data: Bytes, delta: Bool)? {
        var push: Bytes?
        var publication: Bytes?
        var data: Bytes?
        var delta = false
        guard fields(of: message, { number, _, content in if number == 4 { push = content } }), let push,
            fields(of: push, { number, _, content in if number == 4 { publication = content } }), let publication,
            fields(
                of: publication,
                { number, value, content in
                    if number == 4 { data = content }
                    if number == 8 { delta = value != 0 }
                })
        else { return nil }
        return (data ?? publication[publication.startIndex..<publication.startIndex], delta)
    }

    private static func code(in error: Bytes) -> Int64? {
        var code: Int64?
        _ = fields(of: error) { number, value, _ in if number == 1 { code = Int64(truncatingIfNeeded: value) } }
        return code
    }

    /// Calls `each` with every field: its number, its varint value (wire type 0)
    /// and its content (wire type 2). False when the message is not well formed.
    private static func fields(of message: Bytes, _ each: (UInt64, UInt64, Bytes?) -> Void) -> Bool {
        var index = message.startIndex
        while index < message.endIndex {
            guard let key = varint(message, at: &index) else { return false }
            switch key & 7 {
            case 0:
                guard let value = varint(message, at: &index) else { return false }
                each(key >> 3, value, nil)
            case 2:
                guard let length = varint(message, at: &index), length <= UInt64(message.endIndex - index) else { return false }
                each(key >> 3, 0, message[index..<(index + Int(length))])
                index += Int(length)
            case 1:
                guard message.endIndex - index >= 8 else { return false }
                index += 8
            case 5:
                guard message.endIndex - index >= 4 else { return false }
                index += 4
            default:
                return false
            }
        }
        return true
    }

    private static func varint(_ bytes: Bytes, at index: inout Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while index < bytes.endIndex, shift < 64 {
            let byte = bytes[index]
            index += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        return nil
    }
}
