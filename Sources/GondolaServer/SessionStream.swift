import GondolaHub
import GondolaProtocol
import Hummingbird
import NIOCore

/// How a streaming answer lays out the session's messages.
enum StreamFraming: Sendable {
    /// HTTP-streaming: JSON messages each followed by a newline, or Protobuf messages with
    /// their varint length prefix, back to back.
    case lines
    /// Server-Sent Events: `data: <JSON message>` and a blank line per message, after an
    /// opening `\r\n`.
    case events

    func contentType(_ encoding: ProtocolEncoding) -> String {
        switch (self, encoding) {
        case (.events, _): "text/event-stream; charset=utf-8"
        case (.lines, .json): "application/x-ndjson"
        case (.lines, .protobuf): "application/octet-stream"
        }
    }

    /// What goes on the wire for a frame of the session's queue (its messages joined by
    /// the encoding's separator; a JSON message never holds a raw newline).
    func encode(_ frame: [UInt8], encoding: ProtocolEncoding, into buffer: inout ByteBuffer) {
        switch (self, encoding) {
        case (.lines, .json):
            buffer.writeBytes(frame)
            buffer.writeInteger(Frame.separator)
        case (.lines, .protobuf):
            buffer.writeBytes(frame)
        case (.events, _):
            buffer.writeStaticString("data: ")
            var start = frame.startIndex
            while let newline = frame[start...].firstIndex(of: Frame.separator) {
                buffer.writeBytes(frame[start..<newline])
                buffer.writeStaticString("\n\ndata: ")
                start = newline + 1
            }
            buffer.writeBytes(frame[start...])
            buffer.writeStaticString("\n\n")
        }
    }
}

/// Writes one session's queue to a streaming HTTP answer until the session ends: its
/// frames as `framing` lays them out, then, when the server closed the session, a
/// disconnect push naming why (Centrifugo's HTTP transports end so; a WebSocket sends the
/// code in its close frame instead). A write the client has not taken within
/// `HTTPTransports.writeTimeout` closes the connection, which ends the session.
struct SessionStream {
    let session: ClientSession
    let framing: StreamFraming
    let channel: any Channel

    func run(writer: inout any ResponseBodyWriter, start: @Sendable (ClientSession) async -> Void) async throws {
        // However the stream ends, the session ends with it (a queue that overflowed closed
        // itself; the HTTP connection may live on for other requests).
        defer { session.transportClosed() }
        if case .events = framing { try await write(ByteBuffer(string: "\r\n"), to: &writer) }
        await start(session)
        let encoding = session.encoding
        while let item = await session.queue.next() {
            var buffer = channel.allocator.buffer(capacity: 0)
            switch item {
            case let .frame(frame):
                framing.encode(frame, encoding: encoding, into: &buffer)
                try await write(buffer, to: &writer)
            case let .close(code):
                guard code != DisconnectCode.transportClosed else { return }
                framing.encode(session.queue.encoded(Push(channel: "", .disconnect(code))), encoding: encoding, into: &buffer)
                try await write(buffer, to: &writer)
                try await writer.finish(nil)
                return
            }
        }
    }

    private func write(_ buffer: ByteBuffer, to writer: inout any ResponseBodyWriter) async throws {
        let channel = channel
        let deadline = channel.eventLoop.scheduleTask(in: HTTPTransports.writeTimeout) { channel.close(promise: nil) }
        defer { deadline.cancel() }
        try await writer.write(buffer)
    }
}
