import GondolaProtocol

/// The Centrifuge JSON commands the scenarios send, and the reading of what comes
/// back: one WebSocket message holds one or more JSON lines.
public enum CentrifugeFraming {
    /// `connect` with `token` (id 1) followed by one `subscribe` per channel (ids 2, 3, …).
    public static func connect(token: String, subscribing channels: [SubscribeRequest]) -> [UInt8] {
        var lines = [Command(id: 1, .connect(ConnectRequest(token: token))).json.bytes]
        for (index, request) in channels.enumerated() {
            lines.append(Command(id: UInt32(index + 2), .subscribe(request)).json.bytes)
        }
        return Array(lines.joined(separator: [Frame.separator]))
    }

    public static func publish(id: UInt32, channel: String, data: [UInt8]) -> [UInt8] {
        Array(#"{"id":\#(id),"publish":{"channel":"\#(channel)","data":"#.utf8) + data + Array("}}".utf8)
    }

    public static func rpc(id: UInt32, method: String, data: JSON) -> [UInt8] {
        Command(id: id, .rpc(method: method, data: RawJSON(data))).json.bytes
    }

    /// The answer to a server ping.
    public static let pong = Array("{}".utf8)

    /// One line of a server message, classified by a light scan.
    public enum Line {
        /// The server's ping (`{}`); answer with `pong`.
        case ping
        /// A reply to command `id`; `error` is its error code, if it failed; `line` is the whole line.
        case reply(id: Int64, error: Int64?, line: UnsafeRawBufferPointer.SubSequence)
        /// A publication pushed on `channel`; `line` is the whole line.
        case publication(channel: UnsafeRawBufferPointer.SubSequence, line: UnsafeRawBufferPointer.SubSequence)
        /// Any other push (join, leave, unsubscribe, disconnect).
        case otherPush
    }

    static let idMarker = Array(#"{"id":"#.utf8)
    static let errorMarker = Array(#""error":{"code":"#.utf8)
    static let pushMarker = Array(#"{"push":{"channel":""#.utf8)
    static let publicationMarker = Array(#""pub":"#.utf8)

    /// Splits `bytes` into lines and classifies each.
    public static func lines(in bytes: UnsafeRawBufferPointer, _ each: (Line) -> Void) {
        var start = bytes.startIndex
        while start < bytes.endIndex {
            var end = start
            while end < bytes.endIndex, bytes[end] != Frame.separator { end += 1 }
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
