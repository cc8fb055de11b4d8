import GondolaProtocol

/// The server a fan-out run measures, and how its protocol is spoken.
public enum FanoutTarget: String, Sendable, CaseIterable {
    /// Gondola over the Centrifuge protocol (JSON or Protobuf): connect with a token, subscribe, publish.
    case gondola
    /// NATS over WebSocket: CONNECT, SUB, PUB.
    case nats
    /// MQTT 3.1.1 over WebSocket at QoS 0: CONNECT, SUBSCRIBE, PUBLISH.
    case mqtt
}

/// How fast the publisher publishes.
public enum PublishRate: Sendable, Equatable {
    /// This many publications per second.
    case fixed(Double)
    /// As fast as the server delivers: at most `window` publications not yet
    /// received by every subscriber.
    case saturate(window: Int)
}

/// N subscribers on one channel (subject, topic) and P publishers (one by default):
/// each publication carries its send time, so every delivery measures
/// publish→deliver latency. Connections 0..<N subscribe, N..<N+P publish (each
/// at an equal share of the rate). With several URLs (the nodes of a gondola
/// cluster) connection i goes to URL i mod the number of URLs.
public final class FanoutScenario: LoadScenario {
    public let name = "fanout"
    public let mainLatency = "delivery"
    public var target: String {
        let addresses = urls.map(\.description).joined(separator: " + ")
        return kind == .gondola ? "gondola \(framing.encoding.rawValue) \(addresses)" : "\(kind.rawValue) \(addresses)"
    }
    public var connectionCount: Int { subscribers + publishers }
    public private(set) var readyCount = 0

    let kind: FanoutTarget
    /// How gondola's protocol is spoken.
    let framing: CentrifugeFraming
    let urls: [WebSocketURL]
    let subscribers: Int
    let publishers: Int
    /// Whether gondola publishers subscribe to the channel (needed unless its namespace
    /// has `allow_publish_for_client`); a subscribed publisher also receives every publication.
    let publishersSubscribe: Bool
    let rate: PublishRate
    let payloadBytes: Int
    let channel: String
    /// Tokens for gondola: one per subscriber, then the publishers'.
    let tokens: [String]

    private var ready: [Bool]
    private var natsParsers: [NATSFraming.Parser]
    private var mqttParsers: [MQTTFraming.Parser]
    /// Per publisher: when it began and how many it sent.
    private var publishing: [(start: Int64, sent: Int)?]
    private var publisherIDs: [UInt32]
    /// Publications sent and deliveries received since publishing began (for the saturation window).
    public private(set) var published = 0
    public private(set) var delivered = 0
    /// Publications sent during the measured period, and deliveries of them.
    private var measuredPublished = 0, measuredDelivered = 0
    /// Per publication not yet received by every subscriber (keyed by its send stamp):
    /// the deliveries so far. When the last subscriber has it, the time since the send is
    /// recorded as `last_delivery`; one still short after `LoadStats.highestLatency` is
    /// dropped and counted in `incompletePublications`, so this holds at most a minute of publications.
    private var deliveriesOf: [Int64: Int] = [:]
    private var incompletePublications = 0
    private var nextPrune: Int64 = 0

    static let stampMarker = Array(#"{"t":"#.utf8)
    /// Most publications one tick may send, so a late tick cannot flood the publisher's queue.
    static let maxPublishPerTick = 2000

    public init(
        target: FanoutTarget, urls: [WebSocketURL], subscribers: Int, publishers: Int = 1, publishersSubscribe: Bool = true,
        rate: PublishRate, payloadBytes: Int, channel: String, tokens: [String], encoding: ProtocolEncoding = .json
    ) throws {
        guard subscribers >= 1 else { throw LoadError("--subscribers must be at least 1, got \(subscribers)") }
        guard publishers >= 1 else { throw LoadError("--publishers must be at least 1, got \(publishers)") }
        guard !urls.isEmpty else { throw LoadError("at least one --url is needed") }
        guard target == .gondola || urls.count == 1 else { throw LoadError("several --url apply to --target gondola only, got \(urls.count)") }
        guard target == .gondola || publishersSubscribe else { throw LoadError("--publishers-unsubscribed applies to --target gondola only") }
        guard payloadBytes >= 32 else { throw LoadError("--size must be at least 32 bytes (the send stamp needs room), got \(payloadBytes)") }
        guard target != .gondola || tokens.count == subscribers + publishers else {
            throw LoadError("gondola needs \(subscribers + publishers) tokens")
        }
        kind = target
        framing = CentrifugeFraming(encoding: encoding)
        self.urls = urls
        self.subscribers = subscribers
        self.publishers = publishers
        self.publishersSubscribe = publishersSubscribe
        publishing = Array(repeating: nil, count: publishers)
        publisherIDs = Array(repeating: 10, count: publishers)
        self.rate = rate
        self.payloadBytes = payloadBytes
        self.channel = channel
        self.tokens = tokens
        ready = Array(repeating: false, count: subscribers + publishers)
        natsParsers = target == .nats ? Array(repeating: NATSFraming.Parser(), count: subscribers + publishers) : []
        mqttParsers = target == .mqtt ? Array(repeating: MQTTFraming.Parser(), count: subscribers + publishers) : []
    }

    public func measuringStarted() {
        measuredPublished = 0
        measuredDelivered = 0
        incompletePublications = 0
    }

    /// Publications and deliveries per second in the measured period, and the share of
    /// expected deliveries (published × subscribers) that arrived.
    public func figures(measuredSeconds: Double) -> [String: Double] {
        let seconds = max(measuredSeconds, 1e-9)
        return [
            "published_per_second": Double(measuredPublished) / seconds,
            "delivered_per_second": Double(measuredDelivered) / seconds,
            "delivered_share": measuredPublished == 0 ? 0 : Double(measuredDelivered) / Double(measuredPublished * subscribers),
            "incomplete_publications": Double(incompletePublications),
        ]
    }

    /// A payload of exactly `size` bytes: `{"t":<stamp>,"p":"xxx…"}` (valid JSON for every target).
    public static func payload(stamp: Int64, size: Int) -> [UInt8] {
        let head = Array(#"{"t":\#(stamp),"p":""#.utf8)
        let padding = max(0, size - head.count - 2)
        return head + [UInt8](repeating: 0x78, count: padding) + Array(#""}"#.utf8)
    }

    public func address(of connection: Int) -> (url: WebSocketURL, subprotocol: String?) {
        let url = urls[connection % urls.count]
        switch kind {
        case .gondola: return (url, framing.subprotocol)
        case .nats: return (url, nil)
        case .mqtt: return (url, MQTTFraming.subprotocol)
        }
    }

    public func opened(_ connection: Int, _ io: LoadIO) {
        let isPublisher = connection >= subscribers
        switch kind {
        case .gondola:
            let subscribing = isPublisher && !publishersSubscribe ? [] : [SubscribeRequest(channel: channel)]
            io.send(connection, framing.connect(token: tokens[connection], subscribing: subscribing), binary: framing.isBinary)
        case .nats:
            io.send(
                connection, isPublisher ? NATSFraming.connect() + Array("PING\r\n".utf8) : NATSFraming.subscribe(subject: channel, sid: 1),
                binary: true)
        case .mqtt:
            var bytes = MQTTFraming.connect(clientID: "gondola-load-\(connection)")
            if !isPublisher { bytes += MQTTFraming.subscribe(packetID: 1, topic: channel) }
            io.send(connection, bytes, binary: true)
        }
    }

    public func closed(_ connection: Int) {
        markReady(connection, false)
        if kind == .nats { natsParsers[connection] = NATSFraming.Parser() }
        if kind == .mqtt { mqttParsers[connection] = MQTTFraming.Parser() }
        if connection >= subscribers { publishing[connection - subscribers] = nil }
    }

    private func markReady(_ connection: Int, _ isReady: Bool) {
        guard ready[connection] != isReady else { return }
        ready[connection] = isReady
        readyCount += isReady ? 1 : -1
    }

    public func received(_ connection: Int, _ bytes: UnsafeRawBufferPointer, binary: Bool, _ io: LoadIO) {
        let now = MonotonicClock.nanoseconds()
        let isPublisher = connection >= subscribers
        switch kind {
        case .gondola:
            framing.lines(in: bytes) { line in
                switch line {
                case .ping: io.send(connection, framing.pong, binary: framing.isBinary)
                case let .reply(id, error, _):
                    if let error {
                        io.stats.errorReply("\(error)")
                    } else if id == 2 || (id == 1 && isPublisher && !publishersSubscribe) {
                        markReady(connection, true)
                    }
                case let .publication(_, line):
                    if !isPublisher { deliver(line, now: now, io) }
                case .otherPush: break
                }
            }
        case .nats:
            do {
                try natsParsers[connection].feed(bytes) { operation in
                    switch operation {
                    case .ping: io.send(connection, NATSFraming.pong, binary: true)
                    case .pong: markReady(connection, true)
                    case let .error(text): io.stats.errorReply("nats: \(text)")
                    case let .message(payload): deliver(payload, now: now, io)
                    case .info, .ok: break
                    }
                }
            } catch {
                io.drop(connection, because: "nats: \(error)")
            }
        case .mqtt:
            do {
                try mqttParsers[connection].feed(bytes) { packet in
                    switch packet {
                    case .connectAccepted: if isPublisher { markReady(connection, true) }
                    case let .connectRefused(code): io.stats.errorReply("mqtt: CONNACK \(code)")
                    case let .subscribed(_, granted):
                        if granted.contains(0x80) { io.stats.errorReply("mqtt: subscription refused") } else { markReady(connection, true) }
                    case let .publish(_, payload): deliver(payload, now: now, io)
                    case .pingResponse, .other: break
                    }
                }
            } catch {
                io.drop(connection, because: "mqtt: \(error)")
            }
        }
    }

    /// Records the latency of one delivered publication from the stamp in `bytes`.
    private func deliver<Bytes: RandomAccessCollection>(_ bytes: Bytes, now: Int64, _ io: LoadIO) where Bytes.Element == UInt8 {
        guard let marker = ByteScan.find(Self.stampMarker, in: bytes, from: bytes.startIndex),
            let (stamp, _) = ByteScan.integer(in: bytes, at: bytes.index(marker, offsetBy: Self.stampMarker.count))
        else { return }
        delivered += 1
        measuredDelivered += 1
        io.stats.record(mainLatency, nanoseconds: now - stamp)
        guard let count = deliveriesOf[stamp] else { return }
        if count + 1 == subscribers {
            deliveriesOf[stamp] = nil
            io.stats.record("last_delivery", nanoseconds: now - stamp)
        } else {
            deliveriesOf[stamp] = count + 1
        }
    }

    /// Drops, once a second, the publications some subscriber has still not received after
    /// the longest latency recorded.
    private func pruneIncomplete(now: Int64) {
        guard now >= nextPrune else { return }
        nextPrune = now + 1_000_000_000
        let oldest = now - Int64(LoadStats.highestLatency)
        let stale = deliveriesOf.keys.filter { $0 < oldest }
        for stamp in stale { deliveriesOf[stamp] = nil }
        incompletePublications += stale.count
    }

    public func tick(now: Int64, sending: Bool, _ io: LoadIO) {
        pruneIncomplete(now: now)
        guard sending else { return }
        for publisher in 0..<publishers where ready[subscribers + publisher] { publish(publisher, now: now, io) }
    }

    /// Sends what publisher `index` owes: its share of a fixed rate, or of the window.
    private func publish(_ index: Int, now: Int64, _ io: LoadIO) {
        let connection = subscribers + index
        let start = publishing[index]?.start ?? now
        if publishing[index] == nil { publishing[index] = (now, 0) }
        let due: Int
        switch rate {
        case let .fixed(perSecond):
            due = min(Self.maxPublishPerTick, Int(Double(now - start) / 1e9 * perSecond / Double(publishers)) + 1 - publishing[index]!.sent)
        case let .saturate(window):
            let outstanding = (published - delivered / max(1, readyCount - publishers)) / publishers
            due = min(Self.maxPublishPerTick, window - outstanding)
        }
        guard due > 0 else { return }
        for _ in 0..<due {
            let stamp = MonotonicClock.nanoseconds()
            deliveriesOf[stamp] = 0
            let payload = Self.payload(stamp: stamp, size: payloadBytes)
            switch kind {
            case .gondola:
                publisherIDs[index] = publisherIDs[index] == UInt32.max ? 10 : publisherIDs[index] + 1
                io.send(connection, framing.publish(id: publisherIDs[index], channel: channel, data: payload), binary: framing.isBinary)
            case .nats:
                io.send(connection, NATSFraming.publish(subject: channel, payload: payload), binary: true)
            case .mqtt:
                io.send(connection, MQTTFraming.publish(topic: channel, payload: payload), binary: true)
            }
        }
        publishing[index]!.sent += due
        published += due
        measuredPublished += due
    }
}
