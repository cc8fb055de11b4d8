import CompressNIO
import NIOCore
import NIOWebSocket

/// permessage-deflate without the server's context takeover (RFC 7692,
/// `server_no_context_takeover`), shared by every such connection of one event loop that
/// agreed on the same settings. Each message is deflated on its own from a fresh stream and
/// ended with a sync flush, so one message gives the same bytes on every connection: a
/// publication fanned out to thousands of subscribers is deflated once per loop, and each
/// subscriber's frame is the same bytes: a single message's whole frame, header included,
/// is encoded once (`WireFrame`). The last `cacheSize` messages are recognised by identity
/// (the hub hands every subscriber the same byte array).
///
/// A frame of several messages is their deflated forms back to back with the deflated
/// separator between each two: every form ends on a byte boundary and refers to nothing
/// before it, so together they inflate to the joined messages. The last form's trailing
/// `00 00 ff ff` is dropped, as the extension requires. Frames whose messages (with their
/// separators) are shorter than `minBytes` go uncompressed; should zlib fail, this loop's
/// frames go uncompressed from then on. Used only on its event loop.
final class SharedFrameDeflater {
    /// How many recently deflated messages are kept for the next connections of the loop.
    static let cacheSize = 32

    /// What makes two connections' deflates interchangeable.
    struct Settings: Hashable, Sendable {
        let windowBits: Int
        let level: Int
        let memoryLevel: Int
        let minBytes: Int
    }

    private static let perLoop = EventLoopLocal<Settings, SharedFrameDeflater?>()

    /// The loop's deflater for `settings`, made on first use; nil when zlib refuses them.
    static func of(_ loop: any EventLoop, settings: Settings) -> SharedFrameDeflater? {
        perLoop.value(on: loop, for: settings) { SharedFrameDeflater(settings: settings) }
    }

    private let minBytes: Int
    private var compressor: ZlibCompressor?
    /// Recently deflated messages, each with its frame once one was asked for on its own.
    private var cache: [(message: [UInt8], deflated: ByteBuffer, frame: WireFrame?)] = []
    private var nextSlot = 0
    private var separators: [(plain: [UInt8], deflated: ByteBuffer)] = []
    private let allocator = ByteBufferAllocator()

    private init?(settings: Settings) {
        let configuration = ZlibConfiguration(
            windowSize: Int32(settings.windowBits), compressionLevel: Int32(settings.level), memoryLevel: Int32(settings.memoryLevel))
        guard let compressor = try? ZlibCompressor(algorithm: .deflate, configuration: configuration) else { return nil }
        self.compressor = compressor
        self.minBytes = settings.minBytes
        cache.reserveCapacity(Self.cacheSize)
    }

    /// The single frame carrying `messages` joined by `separator`, compressed when long enough.
    func frame(for messages: [[UInt8]], separator: [UInt8], opcode: WebSocketOpcode, allocator: ByteBufferAllocator) -> WireFrame {
        let plainBytes = messages.reduce(separator.count * (messages.count - 1)) { $0 + $1.count }
        if plainBytes >= minBytes {
            if messages.count == 1, let frame = compressedFrame(messages[0], opcode: opcode) { return frame }
            if messages.count > 1, let compressed = compress(messages, separator: separator, allocator: allocator) {
                return WireFrame(opcode: opcode, compressed: true, payload: compressed, allocator: allocator)
            }
        }
        var joined = allocator.buffer(capacity: plainBytes)
        for (index, message) in messages.enumerated() {
            if index > 0 { joined.writeBytes(separator) }
            joined.writeBytes(message)
        }
        return WireFrame(opcode: opcode, payload: joined, allocator: allocator)
    }

    /// The compressed frame of `message` alone: encoded once, then the same bytes for every connection.
    private func compressedFrame(_ message: [UInt8], opcode: WebSocketOpcode) -> WireFrame? {
        guard let (slot, deflated) = deflated(message) else { return nil }
        if let slot, let frame = cache[slot].frame, frame.opcode == opcode { return frame }
        let frame = WireFrame(
            opcode: opcode, compressed: true, payload: deflated.getSlice(at: deflated.readerIndex, length: deflated.readableBytes - 4)!,
            allocator: allocator)
        if let slot { cache[slot].frame = frame }
        return frame
    }

    /// Several messages' deflated forms with the deflated separator between each two.
    private func compress(_ messages: [[UInt8]], separator: [UInt8], allocator: ByteBufferAllocator) -> ByteBuffer? {
        var separatorForm: ByteBuffer?
        if !separator.isEmpty {
            guard let form = deflatedSeparator(separator) else { return nil }
            separatorForm = form
        }
        return concatenate(messages, separator: separatorForm, allocator: allocator)
    }

    /// The messages' deflated forms with `separator` between each two, less the last four bytes.
    private func concatenate(_ messages: [[UInt8]], separator: ByteBuffer?, allocator: ByteBufferAllocator) -> ByteBuffer? {
        var forms: [ByteBuffer] = []
        forms.reserveCapacity(messages.count)
        for message in messages {
            guard let (_, form) = deflated(message) else { return nil }
            forms.append(form)
        }
        let separatorBytes = separator?.readableBytes ?? 0
        var frame = allocator.buffer(capacity: forms.reduce(separatorBytes * (forms.count - 1)) { $0 + $1.readableBytes })
        for (index, form) in forms.enumerated() {
            if index > 0, let separator { frame.writeImmutableBuffer(separator) }
            frame.writeImmutableBuffer(form)
        }
        frame.moveWriterIndex(to: frame.writerIndex - 4)
        return frame
    }

    /// `message` deflated from a fresh stream and sync-flushed, from the cache when it was
    /// deflated lately, with its cache slot (none for an empty message, which has no identity).
    private func deflated(_ message: [UInt8]) -> (slot: Int?, deflated: ByteBuffer)? {
        let identity = message.withUnsafeBufferPointer { $0.baseAddress }
        if identity != nil {
            // Most recent first: a fan-out asks for the same message connection after connection.
            for step in 0..<cache.count {
                let slot = (nextSlot - 1 - step + cache.count) % cache.count
                if cache[slot].message.count == message.count, cache[slot].message.withUnsafeBufferPointer({ $0.baseAddress }) == identity {
                    return (slot, cache[slot].deflated)
                }
            }
        }
        guard let deflated = deflateAlone(message) else { return nil }
        guard identity != nil else { return (nil, deflated) }
        // Holding the array keeps its storage alive, so its address names these bytes while it is cached.
        let slot = nextSlot
        if cache.count < Self.cacheSize {
            cache.append((message, deflated, nil))
        } else {
            cache[slot] = (message, deflated, nil)
        }
        nextSlot = (nextSlot + 1) % Self.cacheSize
        return (slot, deflated)
    }

    /// The separator's deflated form (a separator of a byte or two, compared by value).
    private func deflatedSeparator(_ separator: [UInt8]) -> ByteBuffer? {
        if let known = separators.first(where: { $0.plain == separator }) { return known.deflated }
        guard let deflated = deflateAlone(separator) else { return nil }
        separators.append((separator, deflated))
        return deflated
    }

    /// `bytes` through a reset stream with a sync flush: a form that ends on a byte boundary
    /// with `00 00 ff ff` and refers to nothing before it.
    private func deflateAlone(_ bytes: [UInt8]) -> ByteBuffer? {
        guard let compressor else { return nil }
        var input = allocator.buffer(bytes: bytes)
        var output = allocator.buffer(capacity: compressor.maxSize(from: input))
        do {
            try compressor.reset()
            try compressor.deflate(from: &input, to: &output, flush: .sync)
            guard input.readableBytes == 0, output.readableBytes >= 4 else { throw CompressNIOError.bufferOverflow }
        } catch {
            self.compressor = nil
            return nil
        }
        return output
    }
}
