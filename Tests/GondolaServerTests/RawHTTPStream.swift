import Foundation
import GondolaProtocol

/// A client of the HTTP transports on a plain socket, written from Centrifugo's transport
/// docs rather than with an SDK: it sends one request (an HTTP-streaming or SSE opening, a
/// unidirectional connect) and reads the chunked answer as the server's messages, JSON
/// lines or length-prefixed Protobuf (`lines`), or Server-Sent Events (`events`).
final class RawHTTPStream: RawConnection {
    enum Framing {
        case lines
        case events
    }

    let encoding: ProtocolEncoding
    let framing: Framing
    /// Whether the stream is unidirectional, its pushes sent alone (`{"connect":…}`).
    let unidirectional: Bool
    /// The response's header lines, status line first.
    private(set) var headers: [String] = []
    /// The body's bytes taken out of their chunks and not yet read as messages.
    private var body: [UInt8] = []
    private var ended = false

    /// Sends `method path` with `body` (and `headers`) and reads the response's head.
    init(
        port: Int, method: String = "POST", path: String, body: [UInt8] = [], encoding: ProtocolEncoding = .json,
        framing: Framing = .lines, headers: [String] = [], receiveBuffer: Int32? = nil
    ) async throws {
        self.encoding = encoding
        self.framing = framing
        self.unidirectional = path.hasPrefix("/connection/uni_")
        try super.init(port: port, receiveBuffer: receiveBuffer)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.count)\r\n"
        if encoding == .protobuf { head += "Content-Type: application/octet-stream\r\n" }
        head += headers.map { $0 + "\r\n" }.joined() + "\r\n"
        try write(Array(head.utf8) + body)
        self.headers = try await responseHeaders()
    }

    /// The response's status code.
    var status: Int { Int(headers.first?.split(separator: " ").dropFirst().first ?? "") ?? 0 }

    /// The next message of the stream; nil once the server ended it.
    func next() async throws -> ServerMessage? {
        while true {
            if let message = try takeMessage() { return message }
            if ended { return nil }
            guard let chunk = try await nextChunk() else {
                ended = true
                continue
            }
            body += chunk
        }
    }

    /// Messages until one satisfies `condition` (included); throws when the stream ends first.
    func messages(until condition: (ServerMessage) -> Bool) async throws -> [ServerMessage] {
        var seen: [ServerMessage] = []
        while true {
            guard let message = try await next() else { throw HarnessError("the stream ended after \(seen)") }
            seen.append(message)
            if condition(message) { return seen }
        }
    }

    /// Every message until the server ends the stream.
    func rest() async throws -> [ServerMessage] {
        var seen: [ServerMessage] = []
        while let message = try await next() { seen.append(message) }
        return seen
    }

    /// One whole message from `body`, if it holds one.
    private func takeMessage() throws -> ServerMessage? {
        switch (framing, encoding) {
        case (.lines, .json):
            guard let newline = body.firstIndex(of: 0x0A) else { return nil }
            defer { body.removeFirst(newline + 1) }
            return try decode(body[..<newline])
        case (.lines, .protobuf):
            var length = 0
            var shift = 0
            var index = 0
            while true {
                guard index < body.count else { return nil }
                let byte = body[index]
                length |= Int(byte & 0x7F) << shift
                index += 1
                if byte & 0x80 == 0 { break }
                shift += 7
            }
            guard body.count >= index + length else { return nil }
            defer { body.removeFirst(index + length) }
            return try ProtocolEncoding.protobuf.serverMessages(in: body[..<(index + length)]).first
        case (.events, _):
            while body.starts(with: [0x0D, 0x0A]) { body.removeFirst(2) }
            guard let end = body.indices.first(where: { body[$0...].starts(with: [0x0A, 0x0A]) }) else { return nil }
            let event = String(decoding: body[..<end], as: UTF8.self)
            body.removeFirst(end + 2)
            guard event.hasPrefix("data: ") else { throw HarnessError("not an SSE data event: \(event)") }
            return try decode(Array(event.utf8.dropFirst(6)))
        }
    }

    /// The JSON message in `bytes`, read as this stream's kind sends it.
    private func decode(_ bytes: some Collection<UInt8>) throws -> ServerMessage? {
        try (unidirectional ? ProtocolEncoding.json.unidirectionalMessages(in: bytes) : ProtocolEncoding.json.serverMessages(in: bytes)).first
    }

    /// The next chunk of the chunked body; nil after the last.
    private func nextChunk() async throws -> [UInt8]? {
        while true {
            if let lineEnd = buffer.indices.first(where: { buffer[$0...].starts(with: [0x0D, 0x0A]) }) {
                guard let size = Int(String(decoding: buffer[..<lineEnd], as: UTF8.self), radix: 16) else {
                    throw HarnessError("not a chunk size: \(String(decoding: buffer[..<lineEnd], as: UTF8.self))")
                }
                try await need(lineEnd + 2 + size + 2)
                let chunk = Array(buffer[(lineEnd + 2)..<(lineEnd + 2 + size)])
                buffer.removeFirst(lineEnd + 2 + size + 2)
                return size == 0 ? nil : chunk
            }
            try await fill()
        }
    }

    /// Posts `commands` for `session` on `node` to `/emulation` as the SDKs do (JSON with the
    /// commands as a string, or a Protobuf `EmulationRequest`); answers the status and body.
    static func emulate(
        port: Int, node: String, session: String, commands: [UInt8], encoding: ProtocolEncoding, headers: [String] = []
    ) async throws -> (Int, String) {
        let body: [UInt8]
        switch encoding {
        case .json:
            let request: JSON = ["node": .string(node), "session": .string(session), "data": .string(String(decoding: commands, as: UTF8.self))]
            body = request.bytes
        case .protobuf:
            body = EmulationRequest(node: node, session: session, data: .bytes(commands)).protobufBytes
        }
        let connection = try RawConnection(port: port)
        var head = "POST /emulation HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: \(body.count)\r\n"
        if encoding == .protobuf { head += "Content-Type: application/octet-stream\r\n" }
        head += headers.map { $0 + "\r\n" }.joined() + "\r\n"
        try connection.write(Array(head.utf8) + body)
        let response = try await connection.responseHeaders()
        let status = Int(response.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
        return (status, String(decoding: try await connection.responseBody(headers: response), as: UTF8.self))
    }
}
