import GondolaProtocol

/// The RPCs a scenario's connections have sent and not yet seen answered, so
/// each reply records an "ack <method>" latency. Ids start at 10 (lower ids are
/// the connect and subscribe commands); each connection keeps at most 64 calls
/// waiting, dropping the oldest, so lost replies cannot grow the table.
struct RPCCalls {
    private var pending: [[UInt32: (method: String, sentAt: Int64)]]
    private var nextID: [UInt32]
    let framing: CentrifugeFraming
    static let firstID: UInt32 = 10
    static let maxWaiting = 64

    init(connections: Int, framing: CentrifugeFraming) {
        self.framing = framing
        pending = Array(repeating: [:], count: connections)
        nextID = Array(repeating: Self.firstID, count: connections)
    }

    /// Sends `method` with `data` on `connection`.
    mutating func call(_ connection: Int, _ method: String, _ data: JSON, now: Int64, _ io: LoadIO) {
        let id = nextID[connection]
        nextID[connection] = id == UInt32.max ? Self.firstID : id + 1
        if pending[connection].count >= Self.maxWaiting, let oldest = pending[connection].min(by: { $0.value.sentAt < $1.value.sentAt }) {
            pending[connection].removeValue(forKey: oldest.key)
        }
        pending[connection][id] = (method, now)
        io.send(connection, framing.rpc(id: id, method: method, data: data), binary: framing.isBinary)
    }

    /// Sends `chat.send` to `chat` with a text stamped for `ChatStamp` and a client
    /// message id unique to the connection (its call id).
    mutating func sendChatMessage(_ connection: Int, to chat: String, now: Int64, _ io: LoadIO) {
        call(
            connection, "chat.send",
            [
                "chat": .string(chat), "text": .string(ChatStamp.text(now: MonotonicClock.nanoseconds())),
                "client_message_id": .string("load-\(connection)-\(nextID[connection])"),
            ], now: now, io)
    }

    /// Records the latency of the call answered by reply `id`, if it was one.
    mutating func answered(_ connection: Int, id: Int64, now: Int64, _ io: LoadIO) {
        guard id >= Int64(Self.firstID), let sent = pending[connection].removeValue(forKey: UInt32(truncatingIfNeeded: id)) else { return }
        io.stats.record("ack \(sent.method)", nanoseconds: now - sent.sentAt)
    }

    /// `connection` is gone: its calls will not be answered.
    mutating func forget(_ connection: Int) { pending[connection] = [:] }
}

/// Chat messages sent by the scenarios carry their send time in the text, so
/// every member's delivery measures send → deliver.
enum ChatStamp {
    static let marker = Array(#""text":"load "#.utf8)

    static func text(now: Int64) -> String { "load \(now)" }

    /// Records a "chat" latency for each stamped message in a publication line.
    static func record(in line: UnsafeRawBufferPointer.SubSequence, now: Int64, _ io: LoadIO) {
        ByteScan.integers(after: marker, in: line) { io.stats.record("chat", nanoseconds: now - $0) }
    }
}
