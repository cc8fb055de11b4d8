import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A client connection on a plain socket, for tests that look at the wire: it sends bytes
/// as given and reads what the server sends into `buffer`. Reads never block a thread (the
/// server under test runs on the same cooperative pool): they poll and sleep, up to
/// `patience` for the next bytes.
class RawConnection {
    let socket: Int32
    /// What was read and not yet taken.
    var buffer: [UInt8] = []
    /// Bytes read so far (for failure messages).
    private var received = 0

    /// Connects to the hub on `port`; a small `receiveBuffer` makes a client that stops reading stall quickly.
    init(port: Int, receiveBuffer: Int32? = nil) throws {
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
    }

    deinit { close(socket) }

    func write(_ bytes: [UInt8]) throws {
        let sent = bytes.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, 0) }
        guard sent == bytes.count else { throw HarnessError("send failed: \(errno)") }
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

    /// The response's header lines (status line first).
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

    /// The value of header `name` among `headers`, if present.
    static func header(_ name: String, in headers: [String]) -> String? {
        headers.lazy.compactMap { line -> String? in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == name.lowercased() else { return nil }
            return parts[1].trimmingCharacters(in: .whitespaces)
        }.first
    }

    /// The body of a response whose headers `responseHeaders()` answered, by its Content-Length.
    func responseBody(headers: [String]) async throws -> [UInt8] {
        let length = Self.header("content-length", in: headers).flatMap { Int($0) } ?? 0
        try await need(length)
        defer { buffer.removeFirst(length) }
        return Array(buffer[..<length])
    }

    /// Reads until `buffer` holds `count` bytes.
    func need(_ count: Int) async throws {
        while buffer.count < count { try await fill() }
    }

    /// How long a read waits for bytes: generous, since the whole suite shares two cores.
    static let patience = Duration.seconds(15)

    /// Reads what has arrived, waiting up to `patience` for something to.
    func fill() async throws {
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
