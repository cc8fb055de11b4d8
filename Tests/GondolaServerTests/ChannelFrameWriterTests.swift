@testable import GondolaServer
import GondolaHub
import GondolaProtocol
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Synchronization
import Testing

/// The frame writer on an `EmbeddedChannel`: what reaches the channel, when, and
/// how it ends — without a socket, so every step is observed exactly.
@Suite struct ChannelFrameWriterTests {
    /// What a writer's `finished` reported, in order.
    final class Outcome: Sendable {
        let codes = Mutex<[DisconnectCode?]>([])
    }

    /// A writer installed on an embedded channel, with what its `finished` reported.
    final class Harness {
        let channel = EmbeddedChannel()
        let queue: OutboundQueue
        let outcome = Outcome()

        init(maxBytes: Int = 1 << 20, encoding: ProtocolEncoding = .json) throws {
            queue = OutboundQueue(maxBytes: maxBytes, maxFrameBytes: 1 << 16, encoding: encoding)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            ChannelFrameWriter.install(queue, on: channel) { [outcome] code in outcome.codes.withLock { $0.append(code) } }
        }

        /// Frames written since the last call, as text.
        func written() throws -> [String] {
            var frames: [String] = []
            while let frame = try channel.readOutbound(as: WebSocketFrame.self) {
                #expect(frame.fin)
                frames.append(String(buffer: frame.unmaskedData))
            }
            return frames
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
        let frame = try #require(try harness.channel.readOutbound(as: WebSocketFrame.self))
        #expect(frame.opcode == .binary)
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
        let channels = [EmbeddedChannel(loop: loop), EmbeddedChannel(loop: loop), EmbeddedChannel(loop: loop)]
        let queues = channels.map { _ in OutboundQueue(maxBytes: 1 << 20, maxFrameBytes: 1 << 16) }
        for (channel, queue) in zip(channels, queues) {
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            ChannelFrameWriter.install(queue, on: channel) { _ in }
        }
        OutboundQueue.deferringSignals {
            for queue in queues { queue.enqueue(Array("x".utf8)) }
        }
        // One scheduled task drains every connection: a single turn of the loop writes all three.
        loop.run()
        for channel in channels {
            #expect(try channel.readOutbound(as: WebSocketFrame.self).map { String(buffer: $0.unmaskedData) } == "x")
        }
    }
}
