import CompressNIO
import HTTPTypes
import HummingbirdWebSocket
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

@testable import GondolaServer

/// The outgoing compressors of a permessage-deflate connection, read back with zlib's
/// own inflater the way a client reads it: every message restores exactly, context
/// takeover and its absence as negotiated, small messages left alone.
@Suite struct FrameDeflaterTests {
    static let settings = WebSocketCompression(minBytes: 64, level: 1, windowBits: 15, memoryLevel: 8, contextTakeover: true)

    /// The outgoing compression of a handshake with one `Sec-WebSocket-Extensions` field per
    /// offer, on `loop`.
    static func outgoing(offers: [String], settings: WebSocketCompression = settings, loop: any EventLoop = EmbeddedEventLoop()) -> FrameCompression?
    {
        let headers = HTTPFields(offers.map { HTTPField(name: .secWebSocketExtensions, value: $0) })
        return settings.agreement(for: headers).flatMap { settings.outgoing($0.agreement, on: loop) }
    }

    /// The connection's own deflater for these offers (context takeover), nil when it gets none.
    static func deflater(offers: String..., settings: WebSocketCompression = settings) -> FrameDeflater? {
        guard case let .ownStream(deflater)? = outgoing(offers: offers, settings: settings) else { return nil }
        return deflater
    }

    /// The loop's shared deflater for these offers (no context takeover), nil when it gets none.
    static func shared(offers: String..., settings: WebSocketCompression = settings, loop: any EventLoop = EmbeddedEventLoop())
        -> SharedFrameDeflater?
    {
        guard case let .shared(deflater)? = outgoing(offers: offers, settings: settings, loop: loop) else { return nil }
        return deflater
    }

    /// Position-frame-like messages; consecutive ones share most of their bytes.
    static let messages: [[UInt8]] = (0..<40).map { n in
        let entries = (0..<12).map { index in
            #"{"user":"traveller-\#(index)","lat":\#(45.3 + Double(index * 7 + n % 5) / 10_000),"lon":6.58,"ts":\#(1_790_000_000_000 + n * 250)}"#
        }
        return Array(#"{"push":{"channel":"nearby:u1","pub":{"data":{"moved":[\#(entries.joined(separator: ","))]}}}}"#.utf8)
    }

    /// Inflates one message's payload with `inflater`, as RFC 7692 says: the dropped sync-flush tail appended.
    static func inflate(_ frame: WireFrame, with inflater: ZlibDecompressor) throws -> [UInt8] {
        var input = frame.payload
        input.writeBytes([0x00, 0x00, 0xFF, 0xFF])
        var output = ByteBuffer()
        output.reserveCapacity(1 << 16)
        try inflater.inflate(from: &input, to: &output)
        return Array(output.readableBytesView)
    }

    @Test func withContextTakeoverEveryMessageRestoresAndLaterOnesReuseTheEarlier() throws {
        let deflater = try #require(Self.deflater(offers: "permessage-deflate; client_max_window_bits"))
        let alone = try #require(Self.shared(offers: "permessage-deflate; server_no_context_takeover"))
        let inflater = try ZlibDecompressor(algorithm: .deflate)
        for (index, message) in Self.messages.enumerated() {
            let frame = deflater.frame(for: message, opcode: .text, allocator: ByteBufferAllocator())
            #expect(frame.compressed && frame.fin && frame.opcode == .text)
            #expect(try Self.inflate(frame, with: inflater) == message)
            // After the first, a message finds much of itself in the ones before it.
            let withoutHistory = alone.frame(for: [message], separator: [0x0A], opcode: .text, allocator: ByteBufferAllocator()).payload.readableBytes
            if index > 0 {
                #expect(frame.payload.readableBytes * 3 < withoutHistory * 2, "\(frame.payload.readableBytes) vs \(withoutHistory) bytes alone")
            }
        }
    }

    @Test func serverNoContextTakeoverMakesEachMessageInflateOnItsOwn() throws {
        let deflater = try #require(Self.shared(offers: "permessage-deflate; server_no_context_takeover"))
        for message in Self.messages {
            let frame = deflater.frame(for: [message], separator: [], opcode: .binary, allocator: ByteBufferAllocator())
            #expect(frame.compressed && frame.opcode == .binary)
            #expect(try Self.inflate(frame, with: try ZlibDecompressor(algorithm: .deflate)) == message)
        }
    }

    @Test func withoutContextTakeoverTheServerDeclaresItForBothSidesWhateverTheOffer() throws {
        let settings = WebSocketCompression(minBytes: 64, level: 1, windowBits: 15, memoryLevel: 8, contextTakeover: false)
        let headers = HTTPFields([HTTPField(name: .secWebSocketExtensions, value: "permessage-deflate; client_max_window_bits")])
        let (agreement, header) = try #require(settings.agreement(for: headers))
        #expect(agreement.serverNoContextTakeover && agreement.clientNoContextTakeover)
        #expect(header.contains("server_no_context_takeover") && header.contains("client_no_context_takeover"), "\(header)")
        let (kept, keptHeader) = try #require(Self.settings.agreement(for: headers))
        #expect(!kept.serverNoContextTakeover && !kept.clientNoContextTakeover)
        #expect(!keptHeader.contains("no_context_takeover"), "\(keptHeader)")
    }

    @Test func aMessageFannedOutIsDeflatedOnceAndEveryConnectionOfTheLoopSendsTheSameBytes() throws {
        let loop = EmbeddedEventLoop()
        let first = try #require(Self.shared(offers: "permessage-deflate; server_no_context_takeover", loop: loop))
        let second = try #require(Self.shared(offers: "permessage-deflate; server_no_context_takeover", loop: loop))
        #expect(first === second, "one deflater per loop and settings")
        let message = Self.messages[0]
        let frames = (0..<3).map { _ in first.frame(for: [message], separator: [0x0A], opcode: .text, allocator: ByteBufferAllocator()) }
        let storages = frames.map { $0.bytes.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) } }
        #expect(Set(storages).count == 1, "each frame is a view of the one deflated form")
        #expect(try Self.inflate(frames[2], with: try ZlibDecompressor(algorithm: .deflate)) == message)
        // Equal bytes in another array are deflated again, to the same bytes.
        let copy = Array(message[...])
        let again = first.frame(for: [copy], separator: [0x0A], opcode: .text, allocator: ByteBufferAllocator())
        #expect(again.bytes == frames[0].bytes)
        let otherLoop = try #require(Self.shared(offers: "permessage-deflate; server_no_context_takeover"))
        #expect(otherLoop !== first)
    }

    @Test(arguments: [[UInt8]([0x0A]), []])
    func aFrameOfSeveralMessagesInflatesToThemJoined(separator: [UInt8]) throws {
        let deflater = try #require(Self.shared(offers: "permessage-deflate; server_no_context_takeover"))
        // A client that keeps its inflate context across messages reads them too.
        let inflater = try ZlibDecompressor(algorithm: .deflate)
        for count in [2, 3, 7] {
            let messages = Array(Self.messages.prefix(count))
            let frame = deflater.frame(for: messages, separator: separator, opcode: .text, allocator: ByteBufferAllocator())
            #expect(frame.compressed)
            let joined = messages.dropFirst().reduce(messages[0]) { $0 + separator + $1 }
            #expect(try Self.inflate(frame, with: inflater) == joined)
        }
        let small = [Array(#"{"n":1}"#.utf8), Array(#"{"n":2}"#.utf8)]
        let plain = deflater.frame(for: small, separator: separator, opcode: .text, allocator: ByteBufferAllocator())
        #expect(!plain.compressed && Array(plain.payload.readableBytesView) == small[0] + separator + small[1])
    }

    @Test(arguments: [9, 12])
    func aClientsWindowCapIsHonoured(bits: Int) throws {
        let deflater = try #require(Self.deflater(offers: "permessage-deflate; server_max_window_bits=\(bits)"))
        let shared = try #require(Self.shared(offers: "permessage-deflate; server_no_context_takeover; server_max_window_bits=\(bits)"))
        let inflater = try ZlibDecompressor(algorithm: .deflate, windowSize: Int32(bits))
        for message in Self.messages {
            let frame = deflater.frame(for: message, opcode: .text, allocator: ByteBufferAllocator())
            #expect(try Self.inflate(frame, with: inflater) == message)
            let alone = shared.frame(for: [message], separator: [0x0A], opcode: .text, allocator: ByteBufferAllocator())
            #expect(try Self.inflate(alone, with: try ZlibDecompressor(algorithm: .deflate, windowSize: Int32(bits))) == message)
        }
    }

    @Test func messagesUnderTheThresholdGoAsTheyAreAndLeaveTheContextAlone() throws {
        let deflater = try #require(Self.deflater(offers: "permessage-deflate"))
        let inflater = try ZlibDecompressor(algorithm: .deflate)
        for (index, message) in Self.messages.prefix(10).enumerated() {
            let small = Array(#"{"n":\#(index)}"#.utf8)
            let plain = deflater.frame(for: small, opcode: .text, allocator: ByteBufferAllocator())
            #expect(!plain.compressed && Array(plain.payload.readableBytesView) == small)
            let frame = deflater.frame(for: message, opcode: .text, allocator: ByteBufferAllocator())
            #expect(frame.compressed)
            #expect(try Self.inflate(frame, with: inflater) == message)
        }
    }

    @Test(arguments: [
        "permessage-deflate; server_max_window_bits=8", "permessage-deflate; server_max_window_bits=16",
        "permessage-deflate; server_max_window_bits=wide", "permessage-deflate; client_max_window_bits=20",
        "x-webkit-deflate-frame", "",
    ])
    func anOfferItCannotHonourOrNoOfferLeavesTheConnectionUncompressed(offer: String) {
        #expect(Self.outgoing(offers: [offer]) == nil)
    }

    @Test func anOfferThatCannotBeHonouredIsPassedOverForTheNext() throws {
        let deflater = try #require(
            Self.shared(
                offers: "permessage-deflate; server_max_window_bits=8",
                "permessage-deflate; server_no_context_takeover"))
        for message in Self.messages.prefix(5) {
            let frame = deflater.frame(for: [message], separator: [0x0A], opcode: .text, allocator: ByteBufferAllocator())
            #expect(try Self.inflate(frame, with: try ZlibDecompressor(algorithm: .deflate)) == message)
        }
    }

    @Test func theFirstOfSeveralOffersIsTheOneHonoured() throws {
        #expect(Self.shared(offers: "permessage-deflate; server_no_context_takeover", "permessage-deflate") != nil)
        #expect(Self.deflater(offers: "permessage-deflate", "permessage-deflate; server_no_context_takeover") != nil)
    }
}

/// The incoming side: a client without context takeover shares its loop's inflate stream
/// with the other such connections, and every message still restores.
@Suite struct FrameInflaterTests {
    /// `message` compressed as a client does: raw deflate, sync flush, the tail dropped.
    static func clientFrame(_ message: [UInt8], with compressor: ZlibCompressor) throws -> ByteBuffer {
        var input = ByteBuffer(bytes: message)
        var output = ByteBuffer()
        output.reserveCapacity(compressor.maxSize(from: input))
        try compressor.deflate(from: &input, to: &output, flush: .sync)
        output.moveWriterIndex(to: output.writerIndex - 4)
        return output
    }

    @Test func connectionsWithoutContextTakeoverShareTheLoopsStreamAndEachMessageRestores() throws {
        let loop = EmbeddedEventLoop()
        let agreement = DeflateAgreement(serverWindowBits: 15, serverNoContextTakeover: true, clientWindowBits: 15, clientNoContextTakeover: true)
        let inflaters = try (0..<2).map { _ in try #require(FrameInflater(agreement: agreement, loop: loop)) }
        let clients = try (0..<2).map { _ in try ZlibCompressor(algorithm: .deflate) }
        for (index, message) in FrameDeflaterTests.messages.prefix(12).enumerated() {
            let side = index % 2
            try clients[side].reset()
            let frame = try Self.clientFrame(message, with: clients[side])
            let inflated = try inflaters[side].inflate(frame, maxBytes: 1 << 16, allocator: ByteBufferAllocator())
            #expect(Array(inflated.readableBytesView) == message)
        }
        // A message that does not inflate leaves the shared stream ready for the next connection's.
        #expect(throws: (any Error).self) {
            try inflaters[0].inflate(ByteBuffer(bytes: [0xFF, 0xFF, 0xFF]), maxBytes: 1 << 16, allocator: ByteBufferAllocator())
        }
        try clients[1].reset()
        let next = try inflaters[1].inflate(
            try Self.clientFrame(FrameDeflaterTests.messages[0], with: clients[1]), maxBytes: 1 << 16, allocator: ByteBufferAllocator())
        #expect(Array(next.readableBytesView) == FrameDeflaterTests.messages[0])
    }

    @Test func aClientThatKeepsItsContextHasAStreamOfItsOwn() throws {
        let agreement = DeflateAgreement(serverWindowBits: 15, serverNoContextTakeover: false, clientWindowBits: 15, clientNoContextTakeover: false)
        let inflater = try #require(FrameInflater(agreement: agreement, loop: EmbeddedEventLoop()))
        let client = try ZlibCompressor(algorithm: .deflate)
        for message in FrameDeflaterTests.messages.prefix(8) {
            let inflated = try inflater.inflate(try Self.clientFrame(message, with: client), maxBytes: 1 << 16, allocator: ByteBufferAllocator())
            #expect(Array(inflated.readableBytesView) == message)
        }
    }
}
