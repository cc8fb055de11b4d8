import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A WebSocket client on a plain socket, for tests that look at the wire: the
/// handshake's response headers, each frame's header bits and payload bytes as sent,
/// and frames no well-behaved client would send. Reads never block a thread (the
/// server under test runs on the same cooperative pool): they poll and sleep.
final class RawWebSocket {
    /// One frame as it came off the socket.
    struct Frame {
        let fin: Bool
        /// The permessage-deflate bit: the payload is compressed.
        let rsv1: Bool
        let opcode: UInt8
        let payload: [UInt8]
    }

    let socket: Int32
    private var buffer: [UInt8] = []
    /// Bytes read so far, handshake included (for failure messages).
    private var received = 0

    /// Connects to the hub on `port` and sends the upgrade request for `path` (the WebSocket
    /// endpoint unless told) with `headers` added; a small `receiveBuffer` makes a client that
    /// stops reading stall quickly.
    /// `before` is written ahead of the upgrade request, on the same connection (another HTTP request).
    init(port: Int, path: String = "/connection/websocket", headers: [String] = [], receiveBuffer: Int32? = nil, before: String = "") throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw HarnessError("connect failed: \(errno)") }
        let handshake =
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            + headers.map { $0 + "\r\n" }.joined() + "\r\n"
        try write(Array((before + handshake).utf8))
    }

    deinit { close(socket) }

    func write(_ bytes: [UInt8]) throws {
        let sent = bytes.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, 0) }
        guard sent == bytes.count else { throw HarnessError("send failed: \(errno)") }
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

    /// The rest of what the server sends until it closes the connection (after `responseHeaders()`).
    func readToEnd() async throws -> [UInt8] {
        while true {
            do {
                try await fill()
            } catch let error as HarnessError where error.description == "connection closed" {
                defer { buffer = [] }
                return buffer
            }
        }
    }

    /// The handshake response's header lines (status line first).
    func responseHeaders() async throws -> [String] {
        while true {
            if let end = buffer.indices.first(where: { buffer[$0...].starts(with: Array("\r\n\r\n".utf8)) }) {
                let head = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeFirst(end + 4)
                return head.components(separatedBy: "\r\n")
            }
            try await fill()
        }
    }

    /// The body of a response whose headers `responseHeaders()` answered, by its Content-Length.
    func responseBody(headers: [String]) async throws -> [UInt8] {
        let length =
            headers.lazy.compactMap { line -> Int? in
                let parts = line.split(separator: ":", maxSplits: 1)
                guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                return Int(parts[1].trimmingCharacters(in: .whitespaces))
            }.first ?? 0
        try await need(length)
        defer { buffer.removeFirst(length) }
        return Array(buffer[..<length])
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

    private func need(_ count: Int) async throws {
        while buffer.count < count { try await fill() }
    }

    /// How long a read waits for bytes: generous, since the whole suite shares two cores.
    static let patience = Duration.seconds(15)

    /// Reads what has arrived, waiting up to `patience` for something to.
    private func fill() async throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let deadline = ContinuousClock.now + Self.patience
        while true {
            let read = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if read > 0 {
                buffer += chunk[..<read]
                received += read
                return
            }
            guard read < 0, errno == EAGAIN || errno == EWOULDBLOCK else {
                throw HarnessError(read == 0 ? "connection closed" : "read failed: \(errno)")
            }
            guard ContinuousClock.now < deadline else {
                throw HarnessError("nothing to read for \(Self.patience), after \(received) bytes (\(buffer.count) unread)")
            }
            try await Task.sleep(for: .milliseconds(2))
        }
    }
}
