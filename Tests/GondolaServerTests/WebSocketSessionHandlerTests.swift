import CompressNIO
import Foundation
import GondolaRuntime
import HTTPTypes
import HummingbirdWebSocket
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Synchronization
import Testing

@testable import GondolaHub
@testable import GondolaServer

/// The session's WebSocket handlers (`WebSocketSessionHandler.install`) on an embedded channel,
/// frame by frame: the closing handshake from either side, messages assembled and inflated, and
/// reading held back while messages wait for the session.
@Suite struct WebSocketSessionHandlerTests {
    /// Counts the reads that reach the socket (it sits between the handler and the head).
    final class ReadCounter: ChannelOutboundHandler, Sendable {
        typealias OutboundIn = Any
        let reads = Atomic<Int>(0)

        func read(context: ChannelHandlerContext) {
            reads.add(1, ordering: .relaxed)
            context.read()
        }
    }

    struct Harness {
        let server: RunningServer
        let channel: EmbeddedChannel
        let session: ClientSession
        let reads: ReadCounter
    }

    /// A session on an embedded channel, its writer behind it, whose messages are handled on
    /// the channel's own loop (so they wait until the test runs it).
    /// With `framed`, NIO's frame encoder sits at the head, as on a real connection, so that the
    /// session's own writes (its replies, pings) reach the wire as bytes.
    static func harness(compressed: Bool = false, framed: Bool = false, configuration: ServerConfiguration = RunningServer.configuration())
        async throws -> Harness
    {
        let server = try await RunningServer.start(configuration)
        let channel = EmbeddedChannel()
        if framed { try channel.pipeline.syncOperations.addHandler(WebSocketFrameEncoder()) }
        let session = server.server.node.accept(encoding: .json)
        let agreement = DeflateAgreement(serverWindowBits: 15, serverNoContextTakeover: false, clientWindowBits: 15, clientNoContextTakeover: false)
        let reads = ReadCounter()
        try channel.pipeline.syncOperations.addHandler(reads)
        try WebSocketSessionHandler.install(
            session, on: channel, maxMessageBytes: 4096, maxInflatedBytes: 1 << 16,
            inflater: compressed ? FrameInflater(agreement: agreement, loop: channel.eventLoop) : nil, compression: nil,
            executor: EventLoopTaskExecutor(channel.embeddedEventLoop), connections: OpenConnections())
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).get()
        return Harness(server: server, channel: channel, session: session, reads: reads)
    }

    static func text(_ text: String, allocator: ByteBufferAllocator) -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: .text, data: allocator.buffer(string: text))
    }

    @Test func aClientsCloseIsAnsweredWithItsCodeAndTheChannelCloses() async throws {
        let harness = try await Self.harness()
        var data = harness.channel.allocator.buffer(capacity: 5)
        data.write(webSocketErrorCode: .normalClosure)
        data.writeString("bye")
        try harness.channel.writeInbound(WebSocketFrame(fin: true, opcode: .connectionClose, data: data))
        let answer = try #require(try harness.channel.readOutbound(as: WebSocketFrame.self))
        #expect(answer.opcode == .connectionClose)
        var payload = answer.data
        #expect(payload.readWebSocketErrorCode() == .normalClosure)
        #expect(!harness.channel.isActive)
        #expect(harness.session.isClosed)
        try await harness.server.stop()
    }

    @Test func theServersCloseWaitsForTheClientsAnswerThenCloses() async throws {
        let harness = try await Self.harness()
        harness.session.close(.noPong)
        harness.channel.embeddedEventLoop.run()
        let close = try #require(try harness.channel.readOutbound(as: WebSocketFrame.self))
        var payload = close.data
        #expect(close.opcode == .connectionClose)
        #expect(payload.readWebSocketErrorCode().map { UInt16(webSocketErrorCode: $0) } == 3012)
        #expect(harness.channel.isActive, "the client has its time to answer")
        // No answer: dropped after the close timeout.
        harness.channel.embeddedEventLoop.advanceTime(by: WebSocketCloseHandler.closeTimeout)
        #expect(!harness.channel.isActive)
        try await harness.server.stop()
    }

    /// A compressed message is bounded by its fragments too, before anything is inflated.
    @Test func compressedFragmentsPastTheInflateLimitCloseWith1009() async throws {
        let harness = try await Self.harness(compressed: true)
        let chunk = harness.channel.allocator.buffer(repeating: 0x41, count: 30_000)
        try harness.channel.writeInbound(WebSocketFrame(fin: false, rsv1: true, opcode: .text, data: chunk))
        for _ in 0..<2 { try harness.channel.writeInbound(WebSocketFrame(fin: false, opcode: .continuation, data: chunk)) }
        let close = try #require(try harness.channel.readOutbound(as: WebSocketFrame.self))
        var payload = close.data
        #expect(close.opcode == .connectionClose)
        #expect(payload.readWebSocketErrorCode() == .messageTooLarge)
        #expect(!harness.channel.isActive)
        try await harness.server.stop()
    }

    /// permessage-deflate marks only a message's first frame: the message is assembled with it,
    /// inflated and handed to the session, which refuses what is not JSON with 3501.
    @Test func aFragmentedCompressedMessageReachesTheSessionWhole() async throws {
        let harness = try await Self.harness(compressed: true)
        let client = try ZlibCompressor(algorithm: .deflate)
        var input = ByteBuffer(string: "not json at all")
        var compressed = ByteBuffer()
        compressed.reserveCapacity(client.maxSize(from: input))
        try client.deflate(from: &input, to: &compressed, flush: .sync)
        compressed.moveWriterIndex(to: compressed.writerIndex - 4)
        let half = compressed.readableBytes / 2
        let first = try #require(compressed.getSlice(at: compressed.readerIndex, length: half))
        compressed.moveReaderIndex(forwardBy: half)
        try harness.channel.writeInbound(WebSocketFrame(fin: false, rsv1: true, opcode: .text, data: first))
        try harness.channel.writeInbound(WebSocketFrame(fin: true, opcode: .continuation, data: compressed))
        harness.channel.embeddedEventLoop.run()
        let close = try #require(try harness.channel.readOutbound(as: WebSocketFrame.self))
        var payload = close.data
        #expect(close.opcode == .connectionClose)
        #expect(payload.readWebSocketErrorCode().map { UInt16(webSocketErrorCode: $0) } == 3501)
        try await harness.server.stop()
    }

    @Test func aContinuationWithoutAMessageClosesWith1002() async throws {
        let harness = try await Self.harness()
        try harness.channel.writeInbound(WebSocketFrame(fin: true, opcode: .continuation, data: harness.channel.allocator.buffer(string: "x")))
        let close = try #require(try harness.channel.readOutbound(as: WebSocketFrame.self))
        var payload = close.data
        #expect(payload.readWebSocketErrorCode() == .protocolError)
        #expect(!harness.channel.isActive)
        try await harness.server.stop()
    }

    @Test func readingStopsWhileTheLimitOfMessagesWaitsAndResumesAsTheyAreHandled() async throws {
        let harness = try await Self.harness()
        let allocator = harness.channel.allocator
        // Nothing runs the loop yet: every message waits. The first one is not JSON, so the
        // session closes once it is handled.
        try harness.channel.writeInbound(Self.text("not json", allocator: allocator))
        for _ in 1..<SessionInbox.limit {
            try harness.channel.writeInbound(Self.text("{}", allocator: allocator))
        }
        let before = harness.reads.reads.load(ordering: .relaxed)
        harness.channel.read()
        #expect(harness.reads.reads.load(ordering: .relaxed) == before, "a read with the inbox full is held")
        // The message task takes the first message: reading resumes.
        harness.channel.embeddedEventLoop.run()
        #expect(harness.reads.reads.load(ordering: .relaxed) == before + 1)
        #expect(harness.session.isClosed)
        try await harness.server.stop()
    }

    @Test func aPongWaitingBehindTheSessionCountsFromItsArrival() async throws {
        var configuration = RunningServer.configuration()
        configuration.hub.pingInterval = .milliseconds(1)
        configuration.hub.pongTimeout = .seconds(2)
        let harness = try await Self.harness(framed: true, configuration: configuration)
        let allocator = harness.channel.allocator
        let token = try await harness.server.token("alice")
        try harness.channel.writeInbound(Self.text(#"{"id":1,"connect":{"token":"\#(token)"}}"#, allocator: allocator))
        harness.channel.embeddedEventLoop.run()
        // A ping goes out now; the pong arrives, but nothing runs the loop: it waits for the
        // session as it would behind a slow command.
        harness.session.tick(now: .now, date: Date())
        try harness.channel.writeInbound(Self.text("{}", allocator: allocator))
        // Past the pong deadline on the session's clock, the pong counts from its arrival.
        harness.session.tick(now: .now + .seconds(3), date: Date())
        #expect(!harness.session.isClosed)
        // With the inbox full the server stops reading: the client's silence is not its own,
        // so the pong deadline waits; once the session takes a message it starts over.
        for _ in 1..<SessionInbox.limit {
            try harness.channel.writeInbound(Self.text("{}", allocator: allocator))
        }
        harness.session.tick(now: .now + .seconds(3), date: Date())
        harness.session.tick(now: .now + .seconds(9), date: Date())
        #expect(!harness.session.isClosed, "no pong deadline while reads are held")
        harness.channel.embeddedEventLoop.run()
        // Without anything heard after the last ping (sent at 9 s on the session's clock), its
        // deadline closes with 3012.
        harness.session.tick(now: .now + .seconds(12), date: Date())
        #expect(harness.session.isClosed)
        try await harness.server.stop()
    }
}
