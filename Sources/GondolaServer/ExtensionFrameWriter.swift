import GondolaHub
import GondolaProtocol
import HummingbirdWebSocket
import NIOCore
import NIOWebSocket
import Synchronization

/// Writes a session's queued frames through the WebSocket writer, so that the
/// extensions negotiated for the connection (permessage-deflate) process each frame;
/// used instead of `ChannelFrameWriter`, which writes to the channel directly, for
/// connections that negotiated one. One drain runs per burst of queued messages, each
/// pending batch joined into one frame as the queue hands it out.
///
/// Back-pressure comes from the writer, which waits while the channel is not writable;
/// what waits stays in the session's queue (bounded by `client_queue_max_bytes`). A
/// queue closed while a write waits (a client that reads nothing, say after a 3008
/// overflow) closes the connection after `ChannelFrameWriter.stalledCloseTimeout`.
enum ExtensionFrameWriter {
    /// Drains `queue` into `outbound` until the queue delivers its close (answered) or
    /// the connection goes away (nil).
    static func drain(_ queue: OutboundQueue, into outbound: WebSocketOutboundWriter, channel: any Channel) async -> DisconnectCode? {
        let opcode: WebSocketOpcode = queue.encoding.isBinary ? .binary : .text
        let (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let flags = Flags()
        defer { flags.finished.store(true, ordering: .relaxed) }
        queue.onReady {
            signal.yield()
            guard queue.closeCode != nil, !flags.stallWatched.exchange(true, ordering: .relaxed) else { return }
            channel.eventLoop.scheduleTask(in: ChannelFrameWriter.stalledCloseTimeout) {
                if !flags.finished.load(ordering: .relaxed) { channel.close(promise: nil) }
            }
        }
        for await _ in signals {
            while let item = queue.poll() {
                switch item {
                case let .frame(bytes):
                    do {
                        try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: opcode, data: ByteBuffer(bytes: bytes))))
                    } catch {
                        return nil
                    }
                case let .close(code):
                    return code
                }
            }
        }
        return nil
    }

    /// Whether the drain has ended, and whether a stalled close is already scheduled.
    private final class Flags: Sendable {
        let finished = Atomic(false)
        let stallWatched = Atomic(false)
    }
}
