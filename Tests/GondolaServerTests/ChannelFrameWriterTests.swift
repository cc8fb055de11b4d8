import GondolaHub
import GondolaProtocol
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Synchronization
import Testing

@testable import GondolaServer

/// The frame writer on an `EmbeddedChannel`: what reaches the channel, when, and
/// how it ends — without a socket, so every step is observed exactly.
@Suite struct ChannelFrameWriterTests {
    /// What a writer's `finished` reported, in order.
    final class Outcome: Sendable {
        let codes = Mutex<[DisconnectCode?]>([])
    }

    /// A channel with NIO's frame encoder, as an upgraded WebSocket has: the writer writes past it.
    static func webSocketChannel(loop: EmbeddedEventLoop = EmbeddedEventLoop()) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(handler: WebSocketFrameEncoder(), loop: loop)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return channel
    }

    /// The frames `channel` sent since the last call, read back from its bytes by NIO's decoder.
    static func sentFrames(_ channel: EmbeddedChannel) throws -> [WebSocketFrame] {
        let reader = EmbeddedChannel(handler: ByteToMessageHandler(WebSocketFrameDecoder()))
        while let bytes = try channel.readOutbound(as: ByteBuffer.self) { try reader.writeInbound(bytes) }
        var frames: [WebSocketFrame] = []
        while let frame = try reader.readInbound(as: WebSocketFrame.self) { frames.append(frame) }
        return frames
    }

    /// A writer installed on an embedded channel, with what its `finished` reported.
    final class Harness {
        let channel: EmbeddedChannel
        let queue: OutboundQueue
        let outcome = Outcome()

        init(maxBytes: Int = 1 << 20, encoding: ProtocolEncoding = .json) throws {
            queue = OutboundQueue(maxBytes: maxBytes, maxFrameBytes: 1 << 16, encoding: encoding)
            channel = try ChannelFrameWriterTests.webSocketChannel()
            ChannelFrameWriter.install(queue, on: channel) { [outcome] code in outcome.codes.withLock { $0.append(code) } }
        }

        /// Frames written since the last call, as text.
        func written() throws -> [String] {
            try ChannelFrameWriterTests.sentFrames(channel).map { frame in
                #expect(frame.fin && !frame.rsv1 && frame.maskKey == nil)
                return String(buffer: frame.unmaskedData)
            }
        }

        func run() { channel.embeddedEventLoop.run() }
    }

    @Test func pendingMessagesLeaveAsOneTextFrameOnTheLoop() throws {
        let harness = try Harness()
        harness.queue.enqueue(Array(#"{"id":1}"#.utf8))
        harness.queue.enqueue(Array(#"{"id":2}"#.utf8))
        #expect(try harness.written().isEmpty, "nothing is written before the loop runs")
        harness.run()
        #expect(try harness.written() == ["{\"id\":1}\n{\"id\":2}"])
        harness.queue.enqueue(Array(#"{"id":3}"#.utf8))
        harness.run()
        #expect(try harness.written() == [#"{"id":3}"#])
    }

    @Test func binaryEncodingWritesBinaryFrames() throws {
        let harness = try Harness(encoding: .protobuf)
        harness.queue.enqueue([1, 2, 3])
        harness.run()
        let frames = try ChannelFrameWriterTests.sentFrames(harness.channel)
        #expect(frames.map(\.opcode) == [.binary])
        #expect(frames.map { Array($0.unmaskedData.readableBytesView) } == [[1, 2, 3]])
    }

    @Test func anUnwritableChannelKeepsFramesQueuedUntilItDrains() throws {
        let harness = try Harness()
        harness.channel.isWritable = false
        harness.queue.enqueue(Array("a".utf8))
        harness.run()
        #expect(try harness.written().isEmpty)
        #expect(harness.queue.pendingBytes == 1)
        harness.channel.isWritable = true
        harness.channel.pipeline.fireChannelWritabilityChanged()
        #expect(try harness.written() == ["a"])
        #expect(harness.queue.pendingBytes == 0)
    }

    @Test func aCloseIsReportedAfterWhatWasPending() throws {
        let harness = try Harness()
        harness.queue.enqueue(Array("last".utf8))
        harness.queue.close(.shutdown)
        harness.run()
        #expect(try harness.written() == ["last"])
        #expect(harness.outcome.codes.withLock { $0 } == [.shutdown])
    }

    @Test func aClosedQueueOnAStalledChannelDropsTheConnection() throws {
        let harness = try Harness(maxBytes: 4)
        harness.channel.isWritable = false
        harness.queue.enqueue(Array("1234".utf8))
        harness.queue.enqueue(Array("5".utf8))
        #expect(harness.queue.closeCode == .slow)
        harness.run()
        #expect(harness.channel.isActive)
        harness.channel.embeddedEventLoop.advanceTime(by: ChannelFrameWriter.stalledCloseTimeout)
        #expect(!harness.channel.isActive)
        #expect(harness.outcome.codes.withLock { $0 } == [nil])
    }

    @Test func aChannelThatGoesAwayEndsTheWriter() throws {
        let harness = try Harness()
        try harness.channel.close().wait()
        harness.run()
        #expect(harness.outcome.codes.withLock { $0 } == [nil])
        harness.queue.enqueue(Array("late".utf8))
        harness.run()
        #expect(harness.outcome.codes.withLock { $0 }.count == 1, "finished is reported once")
    }

    @Test func drainsOfOneLoopSignalledInABatchRunInOneTask() throws {
        let loop = EmbeddedEventLoop()
        let channels = try (0..<3).map { _ in try Self.webSocketChannel(loop: loop) }
        let queues = channels.map { _ in OutboundQueue(maxBytes: 1 << 20, maxFrameBytes: 1 << 16) }
        for (channel, queue) in zip(channels, queues) { ChannelFrameWriter.install(queue, on: channel) { _ in } }
        OutboundQueue.deferringSignals {
            for queue in queues { queue.enqueue(Array("x".utf8)) }
        }
        // One scheduled task drains every connection: a single turn of the loop writes all three.
        loop.run()
        for channel in channels {
            #expect(try Self.sentFrames(channel).map { String(buffer: $0.unmaskedData) } == ["x"])
        }
    }

    @Test func framesOfEveryLengthFormReadBackWithNIOsDecoder() throws {
        let allocator = ByteBufferAllocator()
        for (length, compressed) in [(0, false), (125, true), (126, false), (65_535, true), (65_536, false), (70_000, true)] {
            let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let frame = WireFrame(opcode: .binary, compressed: compressed, payload: allocator.buffer(bytes: payload), allocator: allocator)
            #expect(frame.bytes.readableBytes - frame.headerBytes == length)
            let reader = EmbeddedChannel(handler: ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: 1 << 20)))
            try reader.writeInbound(frame.bytes)
            let decoded = try #require(try reader.readInbound(as: WebSocketFrame.self), "length \(length)")
            #expect(decoded.fin && decoded.rsv1 == compressed && decoded.opcode == .binary && decoded.maskKey == nil, "length \(length)")
            #expect(Array(decoded.unmaskedData.readableBytesView) == payload, "length \(length)")
            #expect(frame.compressed == compressed && frame.opcode == .binary && Array(frame.payload.readableBytesView) == payload)
        }
        let text = WireFrame(opcode: .text, payload: Array("hi".utf8), allocator: allocator)
        #expect(Array(text.bytes.readableBytesView) == [0x81, 0x02, 0x68, 0x69])
    }
}
