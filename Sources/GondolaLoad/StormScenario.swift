import Foundation
import GondolaProtocol
import Synchronization

/// What a reconnect storm runs: how many clients on how many channels, and the
/// publications the server API makes meanwhile.
public struct StormOptions: Sendable {
    public var clients = 20_000
    public var channels = 300
    /// The channels' namespace; it must keep a recoverable stream (`history_size`,
    /// `history_ttl`, and `history_durable` for it to outlive a restart).
    public var namespace = "storm"
    /// Server API publications per second, over all channels in turn.
    public var publishRate = 200.0
    /// Server API calls in flight at once.
    public var publishers = 4
    /// Publishing stops this long before the run ends, so every client can catch up before the audit.
    public var settle: Duration = .seconds(10)
    /// The measured period (the run's `duration`), to know when to stop publishing.
    public var duration: Duration = .seconds(60)

    public init() {}

    /// Refuses options that cannot make a storm, naming the option.
    public func check() throws {
        guard (1...200_000).contains(clients) else { throw LoadError("--clients must be 1...200000, got \(clients)") }
        guard (1...clients).contains(channels) else {
            throw LoadError("--channels must be 1...\(clients) (at most one per client), got \(channels)")
        }
        guard settle < duration else { throw LoadError("--settle must be shorter than --duration") }
    }
}

/// A reconnect storm: clients subscribed with recovery to a few hundred channels (client
/// i on channel i mod `channels`) while the server API publishes to them. When the server
/// goes away and comes back (the script restarts or kills it), every client reconnects with
/// the driver's back-off and resubscribes from its last offset and epoch, as the SDKs do.
///
/// It measures, from the first drop: the time until each dropped client is subscribed
/// again for the last time (`back_99_seconds`, `back_100_seconds`: until 99% and 100% of the
/// dropped clients were back; -1 when they were not by the end),
/// what each was told (`recovered` true or false), and audits, at the end, every
/// publication the server API acknowledged against what each client received: a
/// publication a client missed without being told is `missing_acknowledged`, the defect
/// this scenario exists to find.
public final class StormScenario: LoadScenario {
    public let name = "storm"
    public let mainLatency = "delivery"
    public var target: String { "gondola json " + urls.map(\.description).joined(separator: " + ") }
    public var connectionCount: Int { options.clients }
    public private(set) var readyCount = 0

    let urls: [WebSocketURL]
    let options: StormOptions
    let tokens: [String]
    /// The nodes' server APIs: each publishing loop moves to the next one when a call fails.
    let apis: [ServerAPIClient]
    let ledger = AcknowledgedLedger()
    private let framing = CentrifugeFraming(encoding: .json)

    /// Per client: its place in its channel's stream, whether it is subscribed, the offset
    /// it first subscribed at, and the offsets it skipped, told (`recovered: false`) or not.
    private var streams: [ClientStream]
    /// Monotonic time of the first drop of a subscribed client while measuring.
    public private(set) var outageStart: Int64?
    /// Clients that dropped after the outage began and have not yet subscribed again.
    private var awaitingReturn: Set<Int> = []
    /// Per client dropped since the outage began: nanoseconds from its start until the client's latest return.
    private var returnedAfter: [Int: Int64] = [:]
    private var everDropped: Set<Int> = []
    private var recovered = 0, notRecovered = 0, duplicates = 0, epochChanges = 0
    private var publishing: Task<Void, Never>?
    private var measureStartedAt: Int64?

    public init(urls: [WebSocketURL], options: StormOptions, tokens: [String], apis: [ServerAPIClient]) throws {
        guard !urls.isEmpty, urls.count == apis.count else { throw LoadError("the storm needs one server API per --url") }
        try options.check()
        guard tokens.count == options.clients else { throw LoadError("the storm needs \(options.clients) tokens, got \(tokens.count)") }
        self.urls = urls
        self.options = options
        self.tokens = tokens
        self.apis = apis
        streams = Array(repeating: ClientStream(), count: options.clients)
    }

    func channel(of client: Int) -> String { "\(options.namespace):\(client % options.channels)" }

    public func address(of connection: Int) -> (url: WebSocketURL, subprotocol: String?) {
        // A client whose node is gone moves on to the next one, as an SDK given several endpoints would.
        (urls[(connection + streams[connection].moves) % urls.count], nil)
    }

    public func opened(_ connection: Int, _ io: LoadIO) {
        let stream = streams[connection]
        var request = SubscribeRequest(channel: channel(of: connection))
        if let position = stream.position {
            request.recover = true
            request.epoch = position.epoch
            request.offset = position.offset
        }
        io.send(connection, framing.connect(token: tokens[connection], subscribing: [request]))
    }

    public func closed(_ connection: Int) {
        streams[connection].moves += 1
        guard streams[connection].subscribed else { return }
        streams[connection].subscribed = false
        readyCount -= 1
        guard measureStartedAt != nil else { return }
        if outageStart == nil { outageStart = MonotonicClock.nanoseconds() }
        awaitingReturn.insert(connection)
        everDropped.insert(connection)
    }

    public func received(_ connection: Int, _ bytes: UnsafeRawBufferPointer, binary: Bool, _ io: LoadIO) {
        let now = MonotonicClock.nanoseconds()
        framing.lines(in: bytes) { line in
            switch line {
            case .ping: io.send(connection, framing.pong)
            case let .reply(id, error, line):
                if let error {
                    io.stats.errorReply("\(error)")
                } else if id == 2 {
                    subscribed(connection, reply: line, now: now, io)
                }
            case let .publication(_, line):
                guard let offset = Self.offset(in: line) else { return io.drop(connection, because: "publication without an offset") }
                if let stamp = Self.stamp(in: line) { io.stats.record(mainLatency, nanoseconds: now - stamp) }
                advance(connection, to: offset)
            case .otherPush: break
            }
        }
    }

    /// The subscribe reply: a first subscription takes the stream's position; a resubscription
    /// applies the recovered publications, or, told `recovered: false`, notes the offsets it skips.
    private func subscribed(_ connection: Int, reply: UnsafeRawBufferPointer.SubSequence, now: Int64, _ io: LoadIO) {
        guard let message = try? JSONParser.parse(reply), let result = message["subscribe"],
            case let .string(epoch)? = result["epoch"]
        else { return io.drop(connection, because: "subscribe reply without a stream position") }
        let top = Self.unsigned(result["offset"])
        if let position = streams[connection].position {
            if position.epoch != epoch {
                epochChanges += 1
                streams[connection].position = StreamPosition(epoch: epoch, offset: top)
            } else if result["recovered"] == .bool(true) {
                recovered += 1
                if case let .array(publications)? = result["publications"] {
                    for publication in publications { advance(connection, to: Self.unsigned(publication["offset"])) }
                }
                if top > streams[connection].position!.offset { streams[connection].skip(to: top, told: false) }
            } else {
                notRecovered += 1
                streams[connection].skip(to: top, told: true)
            }
        } else {
            streams[connection].position = StreamPosition(epoch: epoch, offset: top)
            streams[connection].firstOffset = top
        }
        streams[connection].subscribed = true
        readyCount += 1
        if let outageStart, awaitingReturn.remove(connection) != nil { returnedAfter[connection] = now - outageStart }
    }

    private func advance(_ connection: Int, to offset: UInt64) {
        guard let position = streams[connection].position else { return }
        if offset <= position.offset {
            duplicates += 1
            return
        }
        if offset > position.offset + 1 { streams[connection].skip(to: offset - 1, told: false) }
        streams[connection].position!.offset = offset
    }

    public func tick(now: Int64, sending: Bool, _ io: LoadIO) {
        guard sending, publishing == nil else { return }
        publishing = Self.startPublishing(options: options, apis: apis, ledger: ledger)
    }

    public func measuringStarted() {
        measureStartedAt = MonotonicClock.nanoseconds()
        ledger.stop(at: Date().addingTimeInterval(Double((options.duration - options.settle).nanoseconds) / 1e9))
        recovered = 0
        notRecovered = 0
        duplicates = 0
        epochChanges = 0
    }

    /// Publishes `{"t":<stamp>}` to the channels in turn at the rate, from `publishers`
    /// loops, until the ledger says stop; each acknowledged offset goes in the ledger, and a
    /// call that fails (the node is down) is not retried: it was never acknowledged.
    static func startPublishing(options: StormOptions, apis: [ServerAPIClient], ledger: AcknowledgedLedger) -> Task<Void, Never> {
        Task { await publish(options: options, apis: apis, ledger: ledger) }
    }

    static func publish(options: StormOptions, apis: [ServerAPIClient], ledger: AcknowledgedLedger) async {
        await withTaskGroup(of: Void.self) { group in
            for loop in 0..<options.publishers {
                group.addTask { await publishLoop(loop, options: options, apis: apis, ledger: ledger) }
            }
        }
    }

    /// One publishing loop: channels `loop`, `loop + publishers`, … in turn, at its share of the rate.
    static func publishLoop(_ loop: Int, options: StormOptions, apis: [ServerAPIClient], ledger: AcknowledgedLedger) async {
        let interval = Int64(Double(options.publishers) / options.publishRate * 1e9)
        var next = MonotonicClock.nanoseconds()
        var index = loop
        var node = loop
        while !ledger.isStopped {
            let channel = index % options.channels
            let body: JSON = ["channel": .string("\(options.namespace):\(channel)"), "data": ["t": .int(MonotonicClock.nanoseconds())]]
            let result = try? await apis[node % apis.count].call("publish", body)
            if case let .string(epoch)? = result?["epoch"] {
                ledger.acknowledge(channel: channel, offset: unsigned(result?["offset"]), epoch: epoch)
            } else {
                ledger.failed()
                node += 1
            }
            index += options.publishers
            next += interval
            let wait = next - MonotonicClock.nanoseconds()
            if wait > 0 { try? await Task.sleep(for: .nanoseconds(wait)) }
        }
    }

    /// The audit, at the end of the measured period.
    public func figures(measuredSeconds: Double) -> [String: Double] {
        ledger.stop(at: .distantPast)
        let acknowledged = ledger.snapshot()
        let audit = StormAudit(streams: streams, channels: options.channels, acknowledged: acknowledged)
        return [
            "clients_dropped": Double(everDropped.count),
            "clients_not_back": Double(awaitingReturn.count),
            "back_99_seconds": backSeconds(share: 0.99),
            "back_100_seconds": backSeconds(share: 1),
            "told_recovered": Double(recovered),
            "told_not_recovered": Double(notRecovered),
            "epoch_changes": Double(epochChanges),
            "acknowledged_publications": Double(acknowledged.count),
            "unacknowledged_publish_calls": Double(acknowledged.failures),
            "missing_acknowledged": Double(audit.missing),
            "missing_at_the_end": Double(audit.behind),
            "skipped_after_told_not_recovered": Double(audit.skippedTold),
            "duplicate_deliveries": Double(duplicates),
            "gap_records_overflowed": Double(streams.reduce(0) { $0 + ($1.overflowed ? 1 : 0) }),
        ]
    }

    /// Seconds from the first drop until `share` of the dropped clients were back for good; -1 when they were not.
    func backSeconds(share: Double) -> Double {
        let needed = Int((Double(everDropped.count) * share).rounded(.up))
        let returns = everDropped.filter { !awaitingReturn.contains($0) }.compactMap { returnedAfter[$0] }.sorted()
        guard needed > 0 else { return 0 }
        return needed <= returns.count ? Double(returns[needed - 1]) / 1e9 : -1
    }

    static let offsetMarker = Array(#""offset":"#.utf8)
    static let stampMarker = Array(#"{"t":"#.utf8)

    static func offset(in line: UnsafeRawBufferPointer.SubSequence) -> UInt64? {
        guard let marker = ByteScan.find(offsetMarker, in: line, from: line.startIndex),
            let (value, _) = ByteScan.integer(in: line, at: marker + offsetMarker.count), value > 0
        else { return nil }
        return UInt64(value)
    }

    static func stamp(in line: UnsafeRawBufferPointer.SubSequence) -> Int64? {
        guard let marker = ByteScan.find(stampMarker, in: line, from: line.startIndex) else { return nil }
        return ByteScan.integer(in: line, at: marker + stampMarker.count)?.value
    }

    static func unsigned(_ value: JSON?) -> UInt64 {
        if case let .int(number)? = value, number > 0 { return UInt64(number) }
        return 0
    }
}

/// Every acknowledged publication checked against each client of its channel that was
/// subscribed before it: received, skipped after being told `recovered: false`, or missing
/// (skipped untold, or past the client's position at the end).
struct StormAudit {
    var missing = 0, behind = 0, skippedTold = 0

    init(streams: [ClientStream], channels: Int, acknowledged: AcknowledgedLedger.Snapshot) {
        for (client, stream) in streams.enumerated() {
            let channel = client % channels
            guard let position = stream.position, let offsets = acknowledged.offsets[channel], acknowledged.epochs[channel] == position.epoch
            else { continue }
            for offset in offsets where offset > stream.firstOffset {
                if offset > position.offset {
                    missing += 1
                    behind += 1
                } else if stream.skipped(offset, told: true) {
                    skippedTold += 1
                } else if stream.skipped(offset, told: false) {
                    missing += 1
                }
            }
        }
    }
}

/// A client's place in its channel's stream.
struct StreamPosition: Equatable {
    var epoch: String
    var offset: UInt64
}

/// One storm client's record of its stream: where it is, where it started, and the
/// offsets it skipped — told (`recovered: false`) or not — as at most `maxRecords` ranges.
struct ClientStream {
    var position: StreamPosition?
    var firstOffset: UInt64 = 0
    var subscribed = false
    /// Drops so far: the client reconnects to the URL after the one it lost.
    var moves = 0
    private(set) var skips: [(range: ClosedRange<UInt64>, told: Bool)] = []
    /// More skips came than fit; the audit then counts the rest as missing.
    private(set) var overflowed = false
    static let maxRecords = 64

    /// Moves the position to `offset`, recording the offsets passed over.
    mutating func skip(to offset: UInt64, told: Bool) {
        guard let current = position?.offset, offset > current else { return }
        if skips.count < Self.maxRecords { skips.append((current + 1...offset, told)) } else { overflowed = true }
        position!.offset = offset
    }

    func skipped(_ offset: UInt64, told: Bool) -> Bool {
        if !told, overflowed { return !skips.contains { $0.told && $0.range.contains(offset) } }
        return skips.contains { $0.told == told && $0.range.contains(offset) }
    }
}

/// The publications the server API acknowledged, per channel, shared by the publishing
/// tasks and the loop thread.
final class AcknowledgedLedger: Sendable {
    struct Snapshot {
        var offsets: [Int: [UInt64]] = [:]
        var epochs: [Int: String] = [:]
        var count = 0
        var failures = 0
        var stopAt = Date.distantFuture
    }

    private let state = Mutex(Snapshot())

    func acknowledge(channel: Int, offset: UInt64, epoch: String) {
        state.withLock {
            $0.offsets[channel, default: []].append(offset)
            $0.epochs[channel] = epoch
            $0.count += 1
        }
    }

    func failed() { state.withLock { $0.failures += 1 } }

    /// Publishing stops at `date`.
    func stop(at date: Date) { state.withLock { $0.stopAt = date } }

    var isStopped: Bool { state.withLock { Date() >= $0.stopAt } }

    func snapshot() -> Snapshot { state.withLock { $0 } }
}
