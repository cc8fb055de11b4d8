import Foundation
import GondolaGeo
import GondolaProtocol

/// Who takes part in a traveller run: trips, their hosts and travellers, and a
/// token for each connection.
public struct TravellerCast: Sendable {
    /// Trip ids, in order; trip t has host `hosts[t]`.
    public let trips: [String]
    public let hosts: [String]
    public let travellers: [String]
    /// The trip of each traveller (index into `trips`).
    public let tripOf: [Int]
    /// Tokens of the hosts, then of the travellers (one per connection).
    public let tokens: [String]

    public init(trips: [String], hosts: [String], travellers: [String], tripOf: [Int], tokens: [String]) {
        self.trips = trips
        self.hosts = hosts
        self.travellers = travellers
        self.tripOf = tripOf
        self.tokens = tokens
    }

    /// Travellers split into `trips` consecutive groups as even as can be.
    public static func tripIndex(of traveller: Int, travellers: Int, trips: Int) -> Int { traveller * trips / max(1, travellers) }
}

/// The settings of a traveller run besides the cast.
public struct TravellerOptions: Sendable {
    /// Location updates per second per traveller.
    public var rate: Double = 1
    /// Share of travellers who chat in their trip's chat, and how often each sends.
    public var chatShare: Double = 0.05
    public var chatInterval: Duration = .seconds(10)
    /// Share of travellers who answer their trip's event, and how often each changes the answer.
    public var rsvpShare: Double = 0.05
    public var rsvpInterval: Duration = .seconds(30)
    /// The nearby watch every traveller subscribes with.
    public var nearbyRadius = 500
    public var nearbyLimit = 50
    /// The protocol encoding every connection speaks.
    public var encoding: ProtocolEncoding = .json
    /// Subscribe to the position channels (`nearby`, `locations`) with fossil deltas and
    /// rebuild every frame from them, as the SDKs do.
    public var delta = false

    public init() {}
}

/// Travellers on the resort, each connected as themselves: subscribed to
/// `personal:#self`, `nearby:#self` and their trip's chat, moving along the ski
/// graph and sending `location.update` at the rate; one host per trip on
/// `locations:<trip>` and the trip chat, who creates the trip's event. A share of
/// travellers chat and RSVP. Latencies: "location" (update → its frame on a
/// nearby or locations channel), "chat" (send → delivery to each member), and
/// "ack <method>" (command → reply). Connections 0..<trips are hosts, the rest travellers.
/// With deltas, a frame that cannot be rebuilt counts as an error reply ("delta: …").
public final class TravellerScenario: LoadScenario {
    public let name = "travellers"
    public let mainLatency = "location"
    public var target: String { "gondola " + urls.map(\.description).joined(separator: " + ") }
    public var connectionCount: Int { cast.hosts.count + cast.travellers.count }
    public private(set) var readyCount = 0

    /// The hub, or the nodes of a cluster: connection i goes to URL i mod their number.
    let urls: [WebSocketURL]
    let cast: TravellerCast
    let options: TravellerOptions
    let framing: CentrifugeFraming
    let graph: SkiGraph

    private var walkers: [SkiWalker]
    private var subscribed: [Int]
    private var calls: RPCCalls
    private var eventOfTrip: [String?]
    /// With deltas: each connection's last position frame, the base of its next delta.
    private var deltaBases: [[UInt8]]
    private var eventsRequested: Set<Int> = []
    private var rsvpCount: [Int]
    private var updates: UniformSchedule
    private var chats: UniformSchedule
    private var rsvps: UniformSchedule
    let chatters: [Int]
    let responders: [Int]
    /// Location updates sent in the measured period.
    public private(set) var measuredUpdates = 0

    static let subscriptionsOfHost = 2, subscriptionsOfTraveller = 3
    static let moveMarker = Array(#""type":"move""#.utf8)
    static let tsMarker = Array(#""ts":"#.utf8)
    static let inviteMarker = Array(#""type":"invite","event":{"id":""#.utf8)
    static let nearbyPrefix = Array("nearby:".utf8), locationsPrefix = Array("locations:".utf8)
    static let chatPrefix = Array("chat:".utf8), personalPrefix = Array("personal:".utf8)
    static let responses = ["going", "maybe", "declined"]

    public init(urls: [WebSocketURL], cast: TravellerCast, graph: SkiGraph, options: TravellerOptions) throws {
        guard !urls.isEmpty else { throw LoadError("at least one --url is needed") }
        guard !graph.nodes.isEmpty else { throw LoadError("the resort has no lifts or pistes to move along") }
        guard cast.tokens.count == cast.hosts.count + cast.travellers.count else { throw LoadError("one token per host and traveller is needed") }
        self.urls = urls
        self.cast = cast
        self.options = options
        self.graph = graph
        let count = cast.hosts.count + cast.travellers.count
        walkers = cast.travellers.indices.map { SkiWalker(graph: graph, node: $0, metres: Double(($0 * 37) % 300), seed: UInt64($0) &+ 1) }
        subscribed = Array(repeating: 0, count: count)
        deltaBases = Array(repeating: [], count: options.delta ? count : 0)
        framing = CentrifugeFraming(encoding: options.encoding)
        calls = RPCCalls(connections: count, framing: framing)
        eventOfTrip = Array(repeating: nil, count: cast.trips.count)
        rsvpCount = Array(repeating: 0, count: cast.travellers.count)
        chatters = Self.share(options.chatShare, of: cast.travellers.count, salt: 1)
        responders = Self.share(options.rsvpShare, of: cast.travellers.count, salt: 2)
        updates = UniformSchedule(count: cast.travellers.count, period: Int64(1e9 / options.rate))
        chats = UniformSchedule(count: chatters.count, period: options.chatInterval.nanoseconds)
        rsvps = UniformSchedule(count: responders.count, period: options.rsvpInterval.nanoseconds)
    }

    /// A spread-out subset of `count` members of about `share` of them (by a hash of the index).
    static func share(_ share: Double, of count: Int, salt: UInt64) -> [Int] {
        (0..<count).filter { index in
            var random = SeededRandom(seed: UInt64(index) &* 0x9E37_79B9 &+ salt)
            return Double(random.next() % 1_000_000) / 1_000_000 < share
        }
    }

    private func isHost(_ connection: Int) -> Bool { connection < cast.hosts.count }
    private func traveller(of connection: Int) -> Int { connection - cast.hosts.count }
    private func trip(of connection: Int) -> Int { isHost(connection) ? connection : cast.tripOf[traveller(of: connection)] }
    private func tripChat(of connection: Int) -> String { "trip-\(cast.trips[trip(of: connection)])" }

    public func bytesGroup(of connection: Int) -> String { isHost(connection) ? "host" : "traveller" }

    public func address(of connection: Int) -> (url: WebSocketURL, subprotocol: String?) { (urls[connection % urls.count], framing.subprotocol) }

    public func opened(_ connection: Int, _ io: LoadIO) {
        let chat = SubscribeRequest(channel: "chat:\(tripChat(of: connection))")
        let delta = options.delta ? DeltaType.fossil.rawValue : ""
        let channels: [SubscribeRequest]
        if isHost(connection) {
            channels = [SubscribeRequest(channel: "locations:\(cast.trips[connection])", delta: delta), chat]
        } else {
            let user = cast.travellers[traveller(of: connection)]
            let nearby = SubscribeRequest(
                channel: "nearby:#\(user)", data: RawJSON(["radius": .int(Int64(options.nearbyRadius)), "limit": .int(Int64(options.nearbyLimit))]),
                delta: delta)
            channels = [SubscribeRequest(channel: "personal:#\(user)"), nearby, chat]
        }
        io.send(connection, framing.connect(token: cast.tokens[connection], subscribing: channels), binary: framing.isBinary)
    }

    public func closed(_ connection: Int) {
        if isReady(connection) { readyCount -= 1 }
        subscribed[connection] = 0
        if options.delta { deltaBases[connection] = [] }
        calls.forget(connection)
    }

    private func isReady(_ connection: Int) -> Bool {
        subscribed[connection] == (isHost(connection) ? Self.subscriptionsOfHost : Self.subscriptionsOfTraveller)
    }

    public func received(_ connection: Int, _ bytes: UnsafeRawBufferPointer, binary: Bool, _ io: LoadIO) {
        let now = MonotonicClock.nanoseconds()
        framing.lines(in: bytes) { line in
            switch line {
            case .ping:
                io.send(connection, framing.pong, binary: framing.isBinary)
            case let .reply(id, error, _):
                reply(connection, id: id, error: error, now: now, io)
            case let .publication(channel, line):
                if channel.starts(with: Self.nearbyPrefix) {
                    withPositionFrame(line, connection, io) { recordMoves(in: $0, wallMilliseconds: WallClock.milliseconds(), io) }
                } else if channel.starts(with: Self.locationsPrefix) {
                    let wallMilliseconds = WallClock.milliseconds()
                    withPositionFrame(line, connection, io) { frame in
                        ByteScan.integers(after: Self.tsMarker, in: frame) {
                            io.stats.record("location", nanoseconds: (wallMilliseconds - $0) * 1_000_000)
                        }
                    }
                } else if channel.starts(with: Self.chatPrefix) {
                    ChatStamp.record(in: line, now: now, io)
                } else if channel.starts(with: Self.personalPrefix), let start = ByteScan.find(Self.inviteMarker, in: line, from: line.startIndex) {
                    let idStart = start + Self.inviteMarker.count
                    let id = String(decoding: line[idStart...].prefix { $0 != 0x22 }, as: UTF8.self)
                    eventOfTrip[trip(of: connection)] = id
                }
            case .otherPush:
                break
            }
        }
    }

    /// Calls `body` with a position channel's frame: the message itself, or with deltas the
    /// frame rebuilt from the connection's base.
    private func withPositionFrame(
        _ line: UnsafeRawBufferPointer.SubSequence, _ connection: Int, _ io: LoadIO,
        _ body: (UnsafeRawBufferPointer.SubSequence) -> Void
    ) {
        guard options.delta else { return body(line) }
        guard let (data, isDelta) = framing.deltaPublication(in: line) else { return io.stats.errorReply("delta: unreadable publication") }
        do {
            deltaBases[connection] = isDelta ? try FossilDelta.apply(data, to: deltaBases[connection]) : data
        } catch {
            return io.stats.errorReply("delta: \(error)")
        }
        deltaBases[connection].withUnsafeBytes { body($0[...]) }
    }

    /// Each `move` entry of a nearby frame carries the mover's update time.
    private func recordMoves(in line: UnsafeRawBufferPointer.SubSequence, wallMilliseconds: Int64, _ io: LoadIO) {
        var index = line.startIndex
        while let move = ByteScan.find(Self.moveMarker, in: line, from: index),
            let ts = ByteScan.find(Self.tsMarker, in: line, from: move + Self.moveMarker.count)
        {
            if let (stamp, end) = ByteScan.integer(in: line, at: ts + Self.tsMarker.count) {
                io.stats.record("location", nanoseconds: (wallMilliseconds - stamp) * 1_000_000)
                index = end
            } else {
                index = ts + Self.tsMarker.count
            }
        }
    }

    private func reply(_ connection: Int, id: Int64, error: Int64?, now: Int64, _ io: LoadIO) {
        if let error { io.stats.errorReply("\(error)") }
        if id == 1 { return }
        if id < Int64(RPCCalls.firstID) {
            guard error == nil else { return }
            subscribed[connection] += 1
            if isReady(connection) { readyCount += 1 }
            return
        }
        calls.answered(connection, id: id, now: now, io)
    }

    public func tick(now: Int64, sending: Bool, _ io: LoadIO) {
        guard sending else { return }
        createEvents(now: now, io)
        let wallMilliseconds = WallClock.milliseconds()
        for index in updates.due(at: now) {
            let connection = cast.hosts.count + index
            guard isReady(connection) else { continue }
            let point = walkers[index].advance(in: graph, seconds: 1 / options.rate)
            var data: [(key: String, value: JSON)] = [("lat", .double(point.lat)), ("lon", .double(point.lon))]
            if let alt = point.alt { data.append(("alt", .double(alt))) }
            data.append(("ts", .int(wallMilliseconds)))
            calls.call(connection, "location.update", .object(data), now: now, io)
            measuredUpdates += 1
        }
        for slot in chats.due(at: now) {
            let connection = cast.hosts.count + chatters[slot]
            guard isReady(connection) else { continue }
            calls.sendChatMessage(connection, to: tripChat(of: connection), now: now, io)
        }
        for slot in rsvps.due(at: now) {
            let index = responders[slot]
            let connection = cast.hosts.count + index
            guard isReady(connection), let event = eventOfTrip[cast.tripOf[index]] else { continue }
            let response = Self.responses[(rsvpCount[index] + index) % Self.responses.count]
            rsvpCount[index] += 1
            calls.call(connection, "event.rsvp", ["event": .string(event), "response": .string(response)], now: now, io)
        }
    }

    /// Each ready host creates its trip's event once (when anyone answers events).
    private func createEvents(now: Int64, _ io: LoadIO) {
        guard !responders.isEmpty, eventsRequested.count < cast.hosts.count else { return }
        let startsAt = WallClock.milliseconds() + 3_600_000
        for host in cast.hosts.indices where !eventsRequested.contains(host) && isReady(host) {
            eventsRequested.insert(host)
            calls.call(
                host, "event.create",
                [
                    "title": "Load test meet-up", "starts_at": .int(startsAt), "trip": .string(cast.trips[host]),
                    "audience": ["kind": "trip"],
                ], now: now, io)
        }
    }

    public func measuringStarted() { measuredUpdates = 0 }

    public func figures(measuredSeconds: Double) -> [String: Double] {
        ["location_updates_per_second": Double(measuredUpdates) / max(measuredSeconds, 1e-9)]
    }
}
