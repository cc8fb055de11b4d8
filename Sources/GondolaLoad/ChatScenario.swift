import GondolaProtocol

/// How the chat scenario's clients chat.
public enum ChatMode: String, Sendable, CaseIterable {
    /// Each trip's chat: every traveller of the trip is a member.
    case group
    /// One 1:1 chat per pair of trip-mates (clients 0–1, 2–3, …), opened with `chat.create`.
    case direct
}

/// Chat senders: every client subscribes to its chat and sends `chat.send` at
/// its share of the total rate (spread evenly); latencies "ack chat.send" (send
/// → reply, which comes after the SQLite commit) and "chat" (send → arrival at
/// each member, the sender included). The clients are the cast's travellers; the
/// trips' hosts are members of the group chats but do not connect.
public final class ChatScenario: LoadScenario {
    public let name = "chat"
    public let mainLatency = "ack chat.send"
    public var target: String { "gondola \(url)" }
    public var connectionCount: Int { cast.travellers.count }
    public private(set) var readyCount = 0

    let url: WebSocketURL
    let cast: TravellerCast
    let mode: ChatMode
    let framing: CentrifugeFraming
    private var chat: [String?]
    private var ready: [Bool]
    private var calls: RPCCalls
    private var sends: UniformSchedule
    /// Messages sent and acknowledged during the measured period.
    private var measuredSent = 0

    static let createID: Int64 = 2, subscribeID: Int64 = 3
    static let chatIDMarker = Array(#""chat":{"id":""#.utf8)

    /// `rate` messages per second from all clients together.
    public init(url: WebSocketURL, cast: TravellerCast, mode: ChatMode, rate: Double, encoding: ProtocolEncoding = .json) throws {
        guard rate > 0 else { throw LoadError("--rate must be positive, got \(rate)") }
        guard mode == .group || cast.travellers.count >= 2 else { throw LoadError("direct chats need at least 2 clients") }
        self.url = url
        self.cast = cast
        self.mode = mode
        let count = cast.travellers.count
        chat = (0..<count).map { mode == .group ? "trip-\(cast.trips[cast.tripOf[$0]])" : nil }
        ready = Array(repeating: false, count: count)
        framing = CentrifugeFraming(encoding: encoding)
        calls = RPCCalls(connections: count, framing: framing)
        sends = UniformSchedule(count: count, period: Int64(1e9 * Double(count) / rate))
    }

    /// The partner of `client` in direct mode: its neighbour in the pair, when in the same trip.
    func partner(of client: Int) -> Int? {
        let other = client % 2 == 0 ? client + 1 : client - 1
        guard other < cast.travellers.count, cast.tripOf[other] == cast.tripOf[client] else { return nil }
        return other
    }

    public func address(of connection: Int) -> (url: WebSocketURL, subprotocol: String?) { (url, framing.subprotocol) }

    public func opened(_ connection: Int, _ io: LoadIO) {
        let connect = Command(id: 1, .connect(ConnectRequest(token: cast.tokens[cast.hosts.count + connection])))
        if let chat = chat[connection] {
            io.send(connection, framing.frame([connect, Self.subscribe(to: chat)]), binary: framing.isBinary)
        } else if let partner = partner(of: connection) {
            let create = Command(id: UInt32(Self.createID), .rpc(method: "chat.create", data: ["members": [.string(cast.travellers[partner])]]))
            io.send(connection, framing.frame([connect, create]), binary: framing.isBinary)
        } else {
            io.drop(connection, because: "client \(connection) has no trip-mate to chat with")
        }
    }

    static func subscribe(to chat: String) -> Command {
        Command(id: UInt32(subscribeID), .subscribe(SubscribeRequest(channel: "chat:\(chat)")))
    }

    public func closed(_ connection: Int) {
        if ready[connection] { readyCount -= 1 }
        ready[connection] = false
        calls.forget(connection)
        if mode == .direct { chat[connection] = nil }
    }

    public func received(_ connection: Int, _ bytes: UnsafeRawBufferPointer, binary: Bool, _ io: LoadIO) {
        let now = MonotonicClock.nanoseconds()
        framing.lines(in: bytes) { line in
            switch line {
            case .ping:
                io.send(connection, framing.pong, binary: framing.isBinary)
            case let .reply(id, error, line):
                if let error { return io.stats.errorReply("\(error)") }
                switch id {
                case Self.createID:
                    guard let start = ByteScan.find(Self.chatIDMarker, in: line, from: line.startIndex) else {
                        return io.drop(connection, because: "chat.create answered without a chat id")
                    }
                    let id = String(decoding: line[(start + Self.chatIDMarker.count)...].prefix { $0 != 0x22 }, as: UTF8.self)
                    chat[connection] = id
                    io.send(connection, framing.frame([Self.subscribe(to: id)]), binary: framing.isBinary)
                case Self.subscribeID:
                    if !ready[connection] { readyCount += 1 }
                    ready[connection] = true
                default:
                    calls.answered(connection, id: id, now: now, io)
                }
            case let .publication(_, line):
                ChatStamp.record(in: line, now: now, io)
            case .otherPush:
                break
            }
        }
    }

    public func tick(now: Int64, sending: Bool, _ io: LoadIO) {
        guard sending else { return }
        for connection in sends.due(at: now) {
            guard ready[connection], let chat = chat[connection] else { continue }
            calls.sendChatMessage(connection, to: chat, now: now, io)
            measuredSent += 1
        }
    }

    public func measuringStarted() { measuredSent = 0 }

    public func figures(measuredSeconds: Double) -> [String: Double] {
        ["sent_per_second": Double(measuredSent) / max(measuredSeconds, 1e-9)]
    }
}
