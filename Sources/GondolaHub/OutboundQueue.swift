import GondolaProtocol
import Synchronization

/// A connection's bounded queue of encoded messages, drained by one writer.
///
/// Producers (replies, fan-out) append shared byte arrays, encoded in the
/// connection's `encoding`; the writer takes everything pending and joins it
/// into one frame (newline-separated JSON, or length-prefixed Protobuf messages
/// back to back). A writer either awaits
/// `next()`, or registers a signal with `onReady` and drains with `poll()`: the
/// signal fires once when something arrives, and again only after a `poll()`
/// found the queue empty (or when the queue closes), so a transport can schedule
/// one drain per burst. When the pending bytes would
/// pass `maxBytes` the queue drops its content and closes with 3008 (slow), so a
/// stalled client costs at most `maxBytes` of memory and never slows the others.
///
/// Signals fired inside `deferringSignals` (a fan-out, a tick's frames) wait until
/// its body returns and then fire together, so a transport that schedules its
/// drains per event loop wakes each loop once for the whole batch rather than
/// once per connection.
public final class OutboundQueue: Sendable {
    /// What the writer does next.
    public enum Item: Sendable, Equatable {
        /// Write these bytes as one frame (text for JSON, binary for Protobuf).
        case frame([UInt8])
        /// Close the connection with this code; nothing follows.
        case close(DisconnectCode)
    }

    /// What `pollMessages()` gives a writer that frames the messages itself.
    public enum Batch: Sendable, Equatable {
        /// These messages, in order, for one frame: with a separator between each two they
        /// fit `maxFrameBytes` (or it is one larger message alone).
        case messages([[UInt8]])
        /// Close the connection with this code; nothing follows.
        case close(DisconnectCode)
    }

    private struct State {
        var messages: [[UInt8]] = []
        var head = 0
        var bytes = 0
        var closing: DisconnectCode?
        var closeDelivered = false
        var waiter: CheckedContinuation<Item?, Never>?
        var signal: (@Sendable () -> Void)?
        /// The signal fired and no `poll()` has found the queue empty since.
        var signalled = false
    }

    /// The signals held back by the `deferringSignals` call this task is in, if any.
    @TaskLocal private static var heldSignals: SignalBatch?

    /// Runs `body`; the drain signals it causes fire when it returns (nested calls join the outer batch).
    public static func deferringSignals<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        if heldSignals != nil { return try body() }
        let batch = SignalBatch()
        defer { batch.fire() }
        var result: Result<T, E>?
        $heldSignals.withValue(batch) { result = Result { () throws(E) -> T in try body() } }
        return try result!.get()
    }

    public let maxBytes: Int
    public let maxFrameBytes: Int
    /// How the connection's messages are encoded and joined into frames.
    public let encoding: ProtocolEncoding
    /// Whether the connection is unidirectional, so that its pushes go out alone
    /// (`ProtocolEncoding.unidirectional`), not wrapped as a bidirectional client reads them.
    public let unidirectional: Bool
    private let separator: [UInt8]
    private let state = Mutex(State())

    public init(maxBytes: Int, maxFrameBytes: Int, encoding: ProtocolEncoding = .json, unidirectional: Bool = false) {
        self.maxBytes = maxBytes
        self.maxFrameBytes = maxFrameBytes
        self.encoding = encoding
        self.unidirectional = unidirectional
        self.separator = encoding.separator
    }

    /// `push` as this connection sends it: in its encoding, alone on a unidirectional one.
    public func encoded(_ push: Push) -> [UInt8] {
        unidirectional ? encoding.unidirectional(encoding.encode(push)) : encoding.encode(push)
    }

    /// Bytes waiting to be written.
    public var pendingBytes: Int { state.withLock { $0.bytes } }

    /// The code the queue was closed with, if it was.
    public var closeCode: DisconnectCode? { state.withLock { $0.closing } }

    /// Appends one encoded message (a push encoded once for many connections goes out
    /// alone on a unidirectional one). Returns false when the queue is closed or the message
    /// made it overflow (it is then closed with 3008).
    @discardableResult
    public func enqueue(_ message: [UInt8]) -> Bool {
        let message = unidirectional ? encoding.unidirectional(message) : message
        let (accepted, wake) = state.withLock { state -> (Bool, Wake?) in
            guard state.closing == nil else { return (false, nil) }
            var accepted = true
            if state.bytes + message.count > maxBytes {
                state.messages = []
                state.head = 0
                state.bytes = 0
                state.closing = .slow
                accepted = false
            } else {
                state.messages.append(message)
                state.bytes += message.count
            }
            return (accepted, Self.wake(&state, maxFrameBytes: maxFrameBytes, separator: separator, closing: !accepted))
        }
        wake?.resume()
        return accepted
    }

    /// Appends a reply in the connection's encoding.
    @discardableResult
    public func enqueue(_ reply: Reply) -> Bool { enqueue(encoding.encode(reply)) }

    /// Appends a push in the connection's encoding.
    @discardableResult
    public func enqueue(_ push: Push) -> Bool { enqueue(encoding.encode(push)) }

    /// Closes the queue: what is pending is still written, then the close.
    /// The first close wins.
    public func close(_ code: DisconnectCode) {
        let wake = state.withLock { state -> Wake? in
            guard state.closing == nil else { return nil }
            state.closing = code
            return Self.wake(&state, maxFrameBytes: maxFrameBytes, separator: separator, closing: true)
        }
        wake?.resume()
    }

    /// The next frame to write, waiting while there is none; nil once the close was delivered.
    public func next() async -> Item? {
        await withCheckedContinuation { continuation in
            let ready: Item?? = state.withLock { state in
                if !state.closeDelivered, state.head == state.messages.count, state.closing == nil {
                    state.waiter = continuation
                    return .none
                }
                return .some(Self.nextItem(&state, maxFrameBytes: maxFrameBytes, separator: separator))
            }
            if case let .some(item) = ready { continuation.resume(returning: item) }
        }
    }

    /// Whether a writer is parked in `next()`, waiting for a frame.
    var writerIsWaiting: Bool { state.withLock { $0.waiter != nil } }

    /// Registers the drain signal of a polling writer; fires at once if something is pending.
    public func onReady(_ signal: @escaping @Sendable () -> Void) {
        let fire = state.withLock { state -> Bool in
            state.signal = signal
            let pending = state.head < state.messages.count || (state.closing != nil && !state.closeDelivered)
            guard pending, !state.signalled else { return false }
            state.signalled = true
            return true
        }
        if fire { signal() }
    }

    /// The next frame (or the close) without waiting; nil when nothing is pending,
    /// which re-arms the `onReady` signal.
    public func poll() -> Item? {
        state.withLock { state in
            let item = Self.nextItem(&state, maxFrameBytes: maxFrameBytes, separator: separator)
            if item == nil { state.signalled = false }
            return item
        }
    }

    /// The next frame's messages as they were enqueued, not joined (or the close), without
    /// waiting; nil when nothing is pending, which re-arms the `onReady` signal. For a
    /// writer that encodes each message on its own, such as a compressed connection's
    /// shared deflate, which recognises a publication's bytes fanned out to many queues.
    public func pollMessages() -> Batch? {
        state.withLock { state in
            let batch = Self.nextBatch(&state, maxFrameBytes: maxFrameBytes, separatorBytes: separator.count)
            if batch == nil { state.signalled = false }
            return batch
        }
    }

    /// A suspended writer and the item it is to be resumed with, or a polling
    /// writer's signal, taken under the lock and called outside it.
    private enum Wake {
        case waiter(CheckedContinuation<Item?, Never>, Item?)
        case signal(@Sendable () -> Void)

        func resume() {
            switch self {
            case let .waiter(waiter, item): waiter.resume(returning: item)
            case let .signal(signal):
                if let batch = OutboundQueue.heldSignals { batch.hold(signal) } else { signal() }
            }
        }
    }

    /// A close always reaches a polling writer, even one in the middle of a drain,
    /// so it can drop a connection that no longer reads.
    private static func wake(_ state: inout State, maxFrameBytes: Int, separator: [UInt8], closing: Bool = false) -> Wake? {
        if let waiter = state.waiter {
            state.waiter = nil
            return .waiter(waiter, nextItem(&state, maxFrameBytes: maxFrameBytes, separator: separator))
        }
        guard let signal = state.signal, !state.signalled || closing else { return nil }
        state.signalled = true
        return .signal(signal)
    }

    /// Pending messages joined into one frame of at most `maxFrameBytes` (or one
    /// larger message alone), else the close, else nil.
    private static func nextItem(_ state: inout State, maxFrameBytes: Int, separator: [UInt8]) -> Item? {
        let frame = takeFrame(&state, maxFrameBytes: maxFrameBytes, separatorBytes: separator.count) { messages in
            var frame = messages[messages.startIndex]
            for message in messages.dropFirst() {
                frame.append(contentsOf: separator)
                frame.append(contentsOf: message)
            }
            return frame
        }
        if let frame { return .frame(frame) }
        return takeClose(&state).map(Item.close)
    }

    /// The pending messages of one frame as they were enqueued, else the close, else nil.
    private static func nextBatch(_ state: inout State, maxFrameBytes: Int, separatorBytes: Int) -> Batch? {
        if let messages = takeFrame(&state, maxFrameBytes: maxFrameBytes, separatorBytes: separatorBytes, { Array($0) }) {
            return .messages(messages)
        }
        return takeClose(&state).map(Batch.close)
    }

    /// Takes the pending messages that fit one frame of at most `maxFrameBytes` with a
    /// separator of `separatorBytes` between each two (at least one message, however
    /// long) and answers what `use` makes of them; nil when none is pending.
    private static func takeFrame<T>(_ state: inout State, maxFrameBytes: Int, separatorBytes: Int, _ use: (ArraySlice<[UInt8]>) -> T) -> T? {
        guard state.head < state.messages.count else { return nil }
        let first = state.head
        var frameBytes = state.messages[first].count
        var taken = frameBytes
        state.head += 1
        while state.head < state.messages.count, frameBytes + separatorBytes + state.messages[state.head].count <= maxFrameBytes {
            frameBytes += separatorBytes + state.messages[state.head].count
            taken += state.messages[state.head].count
            state.head += 1
        }
        let result = use(state.messages[first..<state.head])
        state.bytes -= taken
        if state.head == state.messages.count {
            state.messages.removeAll(keepingCapacity: true)
            state.head = 0
        }
        return result
    }

    /// The close, once, when nothing else is pending.
    private static func takeClose(_ state: inout State) -> DisconnectCode? {
        guard let closing = state.closing, !state.closeDelivered else { return nil }
        state.closeDelivered = true
        return closing
    }
}

/// Drain signals held back by `OutboundQueue.deferringSignals`, fired in the order they came.
private final class SignalBatch: Sendable {
    private let signals = Mutex<[@Sendable () -> Void]>([])

    func hold(_ signal: @escaping @Sendable () -> Void) { signals.withLock { $0.append(signal) } }

    func fire() {
        for signal in signals.withLock({ $0 }) { signal() }
    }
}
