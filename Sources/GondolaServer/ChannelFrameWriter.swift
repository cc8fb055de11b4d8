import GondolaHub
import GondolaProtocol
import NIOCore
import NIOWebSocket

/// Writes a session's queued frames directly to its WebSocket channel on the
/// channel's event loop: the queue signals once per burst, one drain writes every
/// pending frame and flushes once, and the drains of one loop signalled together
/// run in one task (`EventLoopDrains`). No task wakes up per message and no async
/// writer sits between the queue and the socket. A connection that negotiated
/// permessage-deflate has each frame compressed here: by its own `FrameDeflater`, or by
/// its loop's `SharedFrameDeflater`, which takes the frame's messages one by one.
///
/// Back-pressure: the drain stops while the channel is not writable (NIO's buffer
/// is past its high-water mark) and goes on when it becomes writable again (the
/// writer sits at the end of the pipeline for that event), so what waits stays in
/// the session's queue, bounded by `client_queue_max_bytes`. A queue that is
/// closed while the channel stays unwritable (a client that reads nothing, say
/// after a 3008 overflow) closes the connection after `stalledCloseTimeout`.
final class ChannelFrameWriter: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = WebSocketFrame

    /// How long a closed queue waits for an unwritable channel before the connection is dropped.
    static let stalledCloseTimeout = TimeAmount.seconds(2)

    // Only touched on `channel.eventLoop`.
    private let channel: any Channel
    private let queue: OutboundQueue
    private let opcode: WebSocketOpcode
    /// The encoding's separator, kept once: a shared deflate joins a frame's messages with it.
    private let separator: [UInt8]
    private let compression: FrameCompression?
    private var finished: (@Sendable (DisconnectCode?) -> Void)?
    private var stalledCloseScheduled = false

    private init(channel: any Channel, queue: OutboundQueue, compression: FrameCompression?, finished: @escaping @Sendable (DisconnectCode?) -> Void) {
        self.channel = channel
        self.queue = queue
        self.compression = compression
        self.opcode = queue.encoding.isBinary ? .binary : .text
        self.separator = queue.encoding.separator
        self.finished = finished
    }

    /// Starts draining `queue` into `channel`; `finished` is called once, with the
    /// queue's close code or nil when the channel went away. Call on the channel's event loop.
    static func install(
        _ queue: OutboundQueue, on channel: any Channel, compression: FrameCompression? = nil, finished: @escaping @Sendable (DisconnectCode?) -> Void
    ) {
        let writer = ChannelFrameWriter(channel: channel, queue: queue, compression: compression, finished: finished)
        do {
            try channel.pipeline.syncOperations.addHandler(writer)
        } catch {
            return writer.finish(nil)
        }
        let drains = EventLoopDrains.of(channel.eventLoop)
        queue.onReady { [writer] in drains.schedule { writer.drainNow() } }
        channel.closeFuture.whenComplete { _ in writer.drainNow() }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { drainNow() }
        context.fireChannelWritabilityChanged()
    }

    private func drainNow() {
        guard finished != nil else { return }
        guard channel.isActive else { return finish(nil) }
        var wrote = false
        while channel.isWritable, let next = nextFrame() {
            switch next {
            case let .frame(frame):
                channel.write(frame, promise: nil)
                wrote = true
            case let .close(code):
                if wrote { channel.flush() }
                return finish(code)
            }
        }
        if wrote { channel.flush() }
        if !channel.isWritable, queue.closeCode != nil, !stalledCloseScheduled {
            stalledCloseScheduled = true
            channel.eventLoop.scheduleTask(in: Self.stalledCloseTimeout) { [self] in
                if finished != nil { channel.close(promise: nil) }
            }
        }
    }

    /// The next frame to write, or the close; nil when the queue is empty.
    private func nextFrame() -> OutboundFrame? {
        if case let .shared(deflater) = compression {
            switch queue.pollMessages() {
            case nil: return nil
            case let .close(code): return .close(code)
            case let .messages(messages):
                return .frame(deflater.frame(for: messages, separator: separator, opcode: opcode, allocator: channel.allocator))
            }
        }
        switch queue.poll() {
        case nil: return nil
        case let .close(code): return .close(code)
        case let .frame(bytes):
            if case let .ownStream(deflater) = compression { return .frame(deflater.frame(for: bytes, opcode: opcode, allocator: channel.allocator)) }
            return .frame(WebSocketFrame(fin: true, opcode: opcode, data: channel.allocator.buffer(bytes: bytes)))
        }
    }

    private enum OutboundFrame {
        case frame(WebSocketFrame)
        case close(DisconnectCode)
    }

    private func finish(_ code: DisconnectCode?) {
        let finished = finished
        self.finished = nil
        finished?(code)
    }
}
