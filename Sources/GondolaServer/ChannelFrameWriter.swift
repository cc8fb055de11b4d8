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
/// Frames go out as their wire bytes (`WireFrame`), written through the context of NIO's
/// WebSocket frame encoder, that is past it (or from the pipeline's end when it has no such
/// encoder): one buffer and one write per frame, and a frame shared by a loop's connections
/// is the same buffer for each of them. Control frames (pongs, the close) still go through
/// the encoder, in the same order on the same channel.
///
/// Back-pressure: the drain stops while the channel is not writable (NIO's buffer
/// is past its high-water mark) and goes on when it becomes writable again (the
/// writer sits at the end of the pipeline for that event), so what waits stays in
/// the session's queue, bounded by `client_queue_max_bytes`. A queue that is
/// closed while the channel stays unwritable (a client that reads nothing, say
/// after a 3008 overflow) closes the connection after `stalledCloseTimeout`.
final class ChannelFrameWriter: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame

    /// How long a closed queue waits for an unwritable channel before the connection is dropped.
    static let stalledCloseTimeout = TimeAmount.seconds(2)

    // Only touched on `channel.eventLoop`.
    private let channel: any Channel
    /// The frame encoder's context: what is written here goes on towards the socket, past the encoder.
    private let wire: ChannelHandlerContext?
    private let queue: OutboundQueue
    private let opcode: WebSocketOpcode
    /// The encoding's separator, kept once: a shared deflate joins a frame's messages with it.
    private let separator: [UInt8]
    private let compression: FrameCompression?
    private var finished: (@Sendable (DisconnectCode?) -> Void)?
    private var stalledCloseScheduled = false

    private init(
        channel: any Channel, wire: ChannelHandlerContext?, queue: OutboundQueue, compression: FrameCompression?,
        finished: @escaping @Sendable (DisconnectCode?) -> Void
    ) {
        self.channel = channel
        self.wire = wire
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
        let wire = try? channel.pipeline.syncOperations.context(handlerType: WebSocketFrameEncoder.self)
        let writer = ChannelFrameWriter(channel: channel, wire: wire, queue: queue, compression: compression, finished: finished)
        do {
            try channel.pipeline.syncOperations.addHandler(writer)
        } catch {
            return writer.finish(nil)
        }
        let drains = EventLoopDrains.of(channel.eventLoop)
        let bound = NIOLoopBound(writer, eventLoop: channel.eventLoop)
        queue.onReady { drains.schedule { bound.value.drainNow() } }
        channel.closeFuture.whenComplete { _ in bound.value.drainNow() }
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
                if let wire { wire.write(NIOAny(frame.bytes), promise: nil) } else { channel.write(frame.bytes, promise: nil) }
                wrote = true
            case let .close(code):
                if wrote { channel.flush() }
                return finish(code)
            }
        }
        if wrote { channel.flush() }
        if !channel.isWritable, queue.closeCode != nil, !stalledCloseScheduled {
            stalledCloseScheduled = true
            channel.eventLoop.assumeIsolated().scheduleTask(in: Self.stalledCloseTimeout) { [self] in
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
            return .frame(WireFrame(opcode: opcode, payload: bytes, allocator: channel.allocator))
        }
    }

    private enum OutboundFrame {
        case frame(WireFrame)
        case close(DisconnectCode)
    }

    private func finish(_ code: DisconnectCode?) {
        let finished = finished
        self.finished = nil
        finished?(code)
    }
}
