import GondolaHub
import GondolaProtocol
import HummingbirdWebSocket
import NIOCore
import NIOWebSocket

/// Carries one client session over a WebSocket: a reader that assembles messages
/// (text for JSON, binary for Protobuf) and hands them to the session, and a writer
/// that drains the session's queue, one frame per batch of pending messages, straight
/// onto the connection's channel (`ChannelFrameWriter`, compressing with the
/// connection's deflater when it negotiated permessage-deflate); the close frame goes
/// through the WebSocket writer.
struct WebSocketTransport {
    let session: ClientSession
    /// Largest message (after joining fragments) the reader accepts.
    let maxFrameBytes: Int
    /// The outgoing compressor of a connection that negotiated permessage-deflate.
    let deflater: FrameDeflater?

    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, channel: any Channel) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await read(inbound)
                session.transportClosed()
            }
            let close = await ChannelFrameWriter.drain(session.queue, into: channel, deflater: deflater)
            if let close, close.code >= 3000 {
                try? await outbound.close(.unknown(close.code), reason: Self.closeReason(close.reason))
            }
            session.transportClosed()
            group.cancelAll()
        }
    }

    private func read(_ inbound: WebSocketInboundStream) async {
        var message: [UInt8] = []
        do {
            for try await frame in inbound {
                switch frame.opcode {
                case .binary, .text:
                    guard (frame.opcode == .binary) == session.encoding.isBinary else {
                        session.handleFrameOfWrongKind()
                        return
                    }
                    message = Array(frame.data.readableBytesView)
                case .continuation:
                    message.append(contentsOf: frame.data.readableBytesView)
                }
                if message.count > maxFrameBytes {
                    session.handleOversizedFrame(bytes: message.count, limit: maxFrameBytes)
                    return
                }
                guard frame.fin else { continue }
                await session.handle(frame: message)
                message.removeAll(keepingCapacity: true)
                if session.isClosed { return }
            }
        } catch {
            return
        }
    }

    /// A close reason must fit in a control frame's 123 bytes.
    static func closeReason(_ reason: String) -> String {
        var utf8 = Array(reason.utf8.prefix(123))
        while String(validating: utf8, as: UTF8.self) == nil { utf8.removeLast() }
        return String(decoding: utf8, as: UTF8.self)
    }
}
