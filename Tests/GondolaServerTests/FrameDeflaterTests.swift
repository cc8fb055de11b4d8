@testable import GondolaServer
import CompressNIO
import HTTPTypes
import HummingbirdWebSocket
import NIOCore
import NIOWebSocket
import Testing

/// The outgoing compressor of a permessage-deflate connection, read back with zlib's
/// own inflater the way a client reads it: every message restores exactly, context
/// takeover and its absence as negotiated, small messages left alone.
@Suite struct FrameDeflaterTests {
    static let settings = WebSocketCompression(minBytes: 64, level: 1, windowBits: 15, memoryLevel: 8)

    /// The deflater for a handshake with one `Sec-WebSocket-Extensions` field per offer.
    static func deflater(offers: String..., settings: WebSocketCompression = settings) -> FrameDeflater? {
        let headers = HTTPFields(offers.map { HTTPField(name: .secWebSocketExtensions, value: $0) })
        return settings.acceptedOffer(in: headers).flatMap { FrameDeflater(offer: $0, settings: settings) }
    }

    /// Position-frame-like messages; consecutive ones share most of their bytes.
    static let messages: [[UInt8]] = (0..<40).map { n in
        let entries = (0..<12).map { index in
            #"{"user":"traveller-\#(index)","lat":\#(45.3 + Double(index * 7 + n % 5) / 10_000),"lon":6.58,"ts":\#(1_790_000_000_000 + n * 250)}"#
        }
        return Array(#"{"push":{"channel":"nearby:u1","pub":{"data":{"moved":[\#(entries.joined(separator: ","))]}}}}"#.utf8)
    }

    /// Inflates one message's payload with `inflater`, as RFC 7692 says: the dropped sync-flush tail appended.
    static func inflate(_ frame: WebSocketFrame, with inflater: ZlibDecompressor) throws -> [UInt8] {
        var input = frame.data
        input.writeBytes([0x00, 0x00, 0xFF, 0xFF])
        var output = ByteBuffer()
        output.reserveCapacity(1 << 16)
        try inflater.inflate(from: &input, to: &output)
        return Array(output.readableBytesView)
    }

    @Test func withContextTakeoverEveryMessageRestoresAndLaterOnesReuseTheEarlier() throws {
        let deflater = try #require(Self.deflater(offers: "permessage-deflate; client_max_window_bits"))
        let alone = try #require(Self.deflater(offers: "permessage-deflate; server_no_context_takeover"))
        let inflater = try ZlibDecompressor(algorithm: .deflate)
        for (index, message) in Self.messages.enumerated() {
            let frame = deflater.frame(for: message, opcode: .text, allocator: ByteBufferAllocator())
            #expect(frame.rsv1 && frame.fin && frame.opcode == .text)
            #expect(try Self.inflate(frame, with: inflater) == message)
            // After the first, a message finds much of itself in the ones before it.
            let withoutHistory = alone.frame(for: message, opcode: .text, allocator: ByteBufferAllocator()).data.readableBytes
            if index > 0 {
                #expect(frame.data.readableBytes * 3 < withoutHistory * 2, "\(frame.data.readableBytes) vs \(withoutHistory) bytes alone")
            }
        }
    }

    @Test func serverNoContextTakeoverMakesEachMessageInflateOnItsOwn() throws {
        let deflater = try #require(Self.deflater(offers: "permessage-deflate; server_no_context_takeover"))
        for message in Self.messages {
            let frame = deflater.frame(for: message, opcode: .binary, allocator: ByteBufferAllocator())
            #expect(frame.rsv1 && frame.opcode == .binary)
            #expect(try Self.inflate(frame, with: try ZlibDecompressor(algorithm: .deflate)) == message)
        }
    }

    @Test(arguments: [9, 12])
    func aClientsWindowCapIsHonoured(bits: Int) throws {
        let deflater = try #require(Self.deflater(offers: "permessage-deflate; server_max_window_bits=\(bits)"))
        let inflater = try ZlibDecompressor(algorithm: .deflate, windowSize: Int32(bits))
        for message in Self.messages {
            let frame = deflater.frame(for: message, opcode: .text, allocator: ByteBufferAllocator())
            #expect(try Self.inflate(frame, with: inflater) == message)
        }
    }

    @Test func messagesUnderTheThresholdGoAsTheyAreAndLeaveTheContextAlone() throws {
        let deflater = try #require(Self.deflater(offers: "permessage-deflate"))
        let inflater = try ZlibDecompressor(algorithm: .deflate)
        for (index, message) in Self.messages.prefix(10).enumerated() {
            let small = Array(#"{"n":\#(index)}"#.utf8)
            let plain = deflater.frame(for: small, opcode: .text, allocator: ByteBufferAllocator())
            #expect(!plain.rsv1 && Array(plain.data.readableBytesView) == small)
            let frame = deflater.frame(for: message, opcode: .text, allocator: ByteBufferAllocator())
            #expect(frame.rsv1)
            #expect(try Self.inflate(frame, with: inflater) == message)
        }
    }

    @Test(arguments: ["permessage-deflate; server_max_window_bits=8", "permessage-deflate; server_max_window_bits=16",
                      "permessage-deflate; server_max_window_bits=wide", "permessage-deflate; client_max_window_bits=20",
                      "x-webkit-deflate-frame", ""])
    func anOfferItCannotHonourOrNoOfferLeavesTheConnectionUncompressed(offer: String) {
        #expect(Self.deflater(offers: offer) == nil)
    }

    @Test func anOfferThatCannotBeHonouredIsPassedOverForTheNext() throws {
        let deflater = try #require(Self.deflater(offers: "permessage-deflate; server_max_window_bits=8",
                                                  "permessage-deflate; server_no_context_takeover"))
        for message in Self.messages.prefix(5) {
            let frame = deflater.frame(for: message, opcode: .text, allocator: ByteBufferAllocator())
            #expect(try Self.inflate(frame, with: try ZlibDecompressor(algorithm: .deflate)) == message)
        }
    }

    @Test func theFirstOfSeveralOffersIsTheOneHonoured() throws {
        let deflater = try #require(Self.deflater(offers: "permessage-deflate; server_no_context_takeover", "permessage-deflate"))
        for message in Self.messages.prefix(5) {
            let frame = deflater.frame(for: message, opcode: .text, allocator: ByteBufferAllocator())
            #expect(try Self.inflate(frame, with: try ZlibDecompressor(algorithm: .deflate)) == message)
        }
    }
}
