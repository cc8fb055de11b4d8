import NIOCore
import NIOWebSocket

/// A server's WebSocket frame as its bytes go on the wire (RFC 6455 §5.2): FIN, RSV1
/// when the message is compressed (RFC 7692), the opcode, the payload length in its
/// shortest form, no mask (a server never masks), then the payload, all in one buffer.
///
/// NIO's `WebSocketFrameEncoder` writes a frame's header as a buffer of its own beside the
/// payload whenever it cannot prepend it, as with a payload shared by many connections. A
/// frame encoded here once can be written to every connection that sends it as the same
/// bytes, one write each (`ChannelFrameWriter` writes past the encoder). Written by hand
/// because NIO's header writing is internal to its encoder.
struct WireFrame {
    /// The longest header: two bytes and a 64-bit length.
    static let maxHeaderBytes = 10

    /// The whole frame.
    let bytes: ByteBuffer
    let headerBytes: Int

    /// Encodes `payload` as one final frame.
    init(opcode: WebSocketOpcode, compressed: Bool = false, payload: ByteBuffer, allocator: ByteBufferAllocator) {
        var bytes = allocator.buffer(capacity: Self.maxHeaderBytes + payload.readableBytes)
        headerBytes = Self.writeHeader(opcode: opcode, compressed: compressed, length: payload.readableBytes, into: &bytes)
        bytes.writeImmutableBuffer(payload)
        self.bytes = bytes
    }

    /// Encodes `payload` as one final frame.
    init(opcode: WebSocketOpcode, payload: [UInt8], allocator: ByteBufferAllocator) {
        var bytes = allocator.buffer(capacity: Self.maxHeaderBytes + payload.count)
        headerBytes = Self.writeHeader(opcode: opcode, compressed: false, length: payload.count, into: &bytes)
        bytes.writeBytes(payload)
        self.bytes = bytes
    }

    /// Whether FIN is set (always, for frames encoded here).
    var fin: Bool { bytes.getInteger(at: bytes.readerIndex, as: UInt8.self)! & 0x80 != 0 }
    /// Whether RSV1 marks the message as compressed.
    var compressed: Bool { bytes.getInteger(at: bytes.readerIndex, as: UInt8.self)! & 0x40 != 0 }
    var opcode: WebSocketOpcode { WebSocketOpcode(encodedWebSocketOpcode: bytes.getInteger(at: bytes.readerIndex, as: UInt8.self)! & 0x0F)! }
    /// The payload, a view of the frame's bytes.
    var payload: ByteBuffer { bytes.getSlice(at: bytes.readerIndex + headerBytes, length: bytes.readableBytes - headerBytes)! }

    /// Writes the header of a final, unmasked frame of `length` payload bytes; returns its size.
    private static func writeHeader(opcode: WebSocketOpcode, compressed: Bool, length: Int, into bytes: inout ByteBuffer) -> Int {
        let first = 0x80 | (compressed ? 0x40 : 0) | UInt8(webSocketOpcode: opcode)
        switch length {
        case ..<126:
            return bytes.writeInteger(first) + bytes.writeInteger(UInt8(length))
        case ...Int(UInt16.max):
            return bytes.writeInteger(first) + bytes.writeInteger(UInt8(126)) + bytes.writeInteger(UInt16(length))
        default:
            return bytes.writeInteger(first) + bytes.writeInteger(UInt8(127)) + bytes.writeInteger(UInt64(length))
        }
    }
}
