import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A WebSocket client on a plain socket, for tests that look at the wire: the
/// handshake's response headers, each frame's header bits and payload bytes as sent,
/// and frames no well-behaved client would send.
final class RawWebSocket: RawConnection {
    /// One frame as it came off the socket.
    struct Frame {
        let fin: Bool
        /// The permessage-deflate bit: the payload is compressed.
        let rsv1: Bool
        let opcode: UInt8
        let payload: [UInt8]
    }

    /// Connects to the hub on `port` and sends the upgrade request for `path` (the WebSocket
    /// endpoint unless told) with `headers` added; a small `receiveBuffer` makes a client that
    /// stops reading stall quickly.
    /// `before` is written ahead of the upgrade request, on the same connection (another HTTP request).
    init(port: Int, path: String = "/connection/websocket", headers: [String] = [], receiveBuffer: Int32? = nil, before: String = "") throws {
        try super.init(port: port, receiveBuffer: receiveBuffer)
        let handshake =
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            + headers.map { $0 + "\r\n" }.joined() + "\r\n"
        try write(Array((before + handshake).utf8))
    }

    /// Sends one text frame (FIN set, masked with a zero key), with RSV1 when `rsv1`.
    func sendText(_ payload: [UInt8], rsv1: Bool = false) throws {
        try sendFrame(opcode: 0x1, payload, rsv1: rsv1)
    }

    /// Sends one frame of `opcode` (masked with a zero key), FIN set unless `fin` is false.
    func sendFrame(opcode: UInt8, _ payload: [UInt8], fin: Bool = true, rsv1: Bool = false) throws {
        var frame: [UInt8] = [(fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else if payload.count < 65536 {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            frame.append(0x80 | 127)
            frame += (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xFF) }
        }
        try write(frame + [0, 0, 0, 0] + payload)
    }

    /// The next frame, after `responseHeaders()`; throws when the socket closes or `patience` passes.
    func nextFrame() async throws -> Frame {
        try await need(2)
        let first = buffer[0]
        let second = buffer[1]
        var length = Int(second & 0x7F)
        var start = 2
        if length == 126 {
            try await need(4)
            length = Int(buffer[2]) << 8 | Int(buffer[3])
            start = 4
        } else if length == 127 {
            try await need(10)
            length = buffer[2..<10].reduce(0) { $0 << 8 | Int($1) }
            start = 10
        }
        try await need(start + length)
        let frame = Frame(fin: first & 0x80 != 0, rsv1: first & 0x40 != 0, opcode: first & 0x0F, payload: Array(buffer[start..<(start + length)]))
        buffer.removeFirst(start + length)
        return frame
    }

    /// The close frame's code, skipping the frames before it.
    func closeCode() async throws -> Int {
        while true {
            let frame = try await nextFrame()
            if frame.opcode == 8 { return frame.payload.count >= 2 ? Int(frame.payload[0]) << 8 | Int(frame.payload[1]) : 0 }
        }
    }
}
