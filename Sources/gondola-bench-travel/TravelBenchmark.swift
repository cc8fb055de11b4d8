import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import GondolaBenchSupport
import GondolaGeo
import GondolaHub
import GondolaProtocol
import HummingbirdWSClient
import Logging
import Synchronization

/// Simulated travellers on the demo resort: each rides and skis, sends
/// `location.update` at a fixed rate and watches `nearby:#self`; one host per trip
/// watches `locations:<trip>`. Prints sustained updates/s, frames and entries
/// delivered per second and update-to-delivery latency.
@main
struct TravelBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "gondola-bench-travel")

    @Option(help: "Base URL of the hub, e.g. http://127.0.0.1:8000.") var server: String
    @Option(help: "The hub's token secret, to mint tokens.") var secret: String
    @Option(name: .customLong("api-key"), help: "The hub's server API key.") var apiKey: String
    @Option(help: "The demo resort's GeoJSON.") var resort: String = "resorts/demo.geojson"
    @Option(help: "Number of travellers.") var travellers: Int = 1000
    @Option(name: .customLong("trip-size"), help: "Travellers per trip (each trip also has one host).") var tripSize: Int = 100
    @Option(help: "Updates per second per traveller.") var rate: Double = 1
    @Option(help: "Seconds measured after a 5 s warm-up.") var seconds: Int = 20
    @Option(name: .customLong("server-pid"), help: "Process id of the hub, for its CPU and memory.") var serverPID: Int32?
    @Option(help: "Markdown file the result row is appended to.") var markdown: String?

    func validate() throws {
        guard (1...20_000).contains(travellers) else { throw ValidationError("--travellers must be 1...20000, got \(travellers)") }
        guard (1...1000).contains(tripSize) else { throw ValidationError("--trip-size must be 1...1000, got \(tripSize)") }
        guard rate > 0, rate <= 5 else { throw ValidationError("--rate must be in (0, 5], got \(rate)") }
        guard (1...300).contains(seconds) else { throw ValidationError("--seconds must be 1...300, got \(seconds)") }
    }

    func run() async throws {
        let graph = try SkiResort(geoJSON: Data(contentsOf: URL(fileURLWithPath: resort))).graph
        let tokens = try await ConnectionTokens(secret: secret)
        let api = ServerAPIClient(base: server, key: apiKey)
        let trips = (travellers + tripSize - 1) / tripSize
        print("creating \(trips) trips of \(tripSize)…")
        let creation = ContinuousClock.now
        let (tripSize, travellers) = (self.tripSize, self.travellers)
        let tripIDs = try await api.createTrips(trips) { trip in
            ("bh\(trip)", (trip * tripSize..<min(travellers, (trip + 1) * tripSize)).map { "bt\($0)" })
        }
        print("trips created in \(ContinuousClock.now - creation)")
        let stats = TravelStats()
        let socket = server.replacingOccurrences(of: "http", with: "ws", options: .anchored) + "/connection/websocket"
        let logger = { var logger = Logger(label: "bench"); logger.logLevel = .critical; return logger }()
        let clients = Task {
            await withTaskGroup(of: Void.self) { group in
                for (trip, id) in tripIDs.enumerated() {
                    guard let token = try? await tokens.mint(user: "bh\(trip)") else { continue }
                    group.addTask { await Simulated.host(url: socket, token: token, trip: id, stats: stats, logger: logger) }
                }
                for index in 0..<travellers {
                    if index % 200 == 199 { try? await Task.sleep(for: .milliseconds(50)) }
                    guard let token = try? await tokens.mint(user: "bt\(index)") else { continue }
                    let walker = SkiWalker(graph: graph, node: index, metres: Double((index * 37) % 500), seed: UInt64(index))
                    group.addTask {
                        await Simulated.traveller(url: socket, token: token, user: "bt\(index)", walker: walker, graph: graph,
                                                  rate: rate, stats: stats, logger: logger)
                    }
                }
            }
        }
        let expected = travellers + trips
        let ready = try await waitUntil(stats.ready, reaches: expected, within: .seconds(180))
        print("ready: \(ready)/\(expected) connections")
        try await Task.sleep(for: .seconds(5))
        stats.reset()
        let before = serverPID.flatMap(ProcessUsage.init(pid:)), clientBefore = ProcessUsage(pid: getpid())
        let started = ContinuousClock.now
        try await Task.sleep(for: .seconds(seconds))
        let elapsed = (ContinuousClock.now - started).nanoseconds
        let after = serverPID.flatMap(ProcessUsage.init(pid:)), clientAfter = ProcessUsage(pid: getpid())
        let report = stats.report(travellers: travellers, elapsedSeconds: Double(elapsed) / 1e9, server: (before, after), client: (clientBefore, clientAfter))
        stats.stop.store(true, ordering: .relaxed)
        clients.cancel()
        print(report.line)
        if let markdown { MarkdownRows.append([report.markdown], to: markdown) }
        Foundation.exit(0)
    }
}

/// Counters shared by every simulated client.
final class TravelStats: Sendable {
    let ready = Atomic<Int>(0)
    let stop = Atomic<Bool>(false)
    let updates = Atomic<Int>(0)
    let acks = Atomic<Int>(0)
    let errors = Atomic<Int>(0)
    let frames = Atomic<Int>(0)
    let entries = Atomic<Int>(0)
    let disconnects = Atomic<Int>(0)
    let latency = LatencyRecorder()

    func reset() {
        updates.store(0, ordering: .relaxed)
        acks.store(0, ordering: .relaxed)
        errors.store(0, ordering: .relaxed)
        frames.store(0, ordering: .relaxed)
        entries.store(0, ordering: .relaxed)
        latency.reset()
    }

    struct Report {
        let line: String
        let markdown: String
    }

    /// The figures of the measured period; `server` and `client` are each process's usage at its start and end.
    func report(travellers: Int, elapsedSeconds: Double, server: (ProcessUsage?, ProcessUsage?), client: (ProcessUsage?, ProcessUsage?)) -> Report {
        func perSecond(_ counter: borrowing Atomic<Int>) -> Double { Double(counter.load(ordering: .relaxed)) / elapsedSeconds }
        func cpu(_ usage: (ProcessUsage?, ProcessUsage?)) -> Double { ProcessUsage.cpuPercent(from: usage.0, to: usage.1, over: elapsedSeconds) }
        let rss = server.1?.rssMiB ?? .nan
        let p50 = latency.milliseconds(at: 50), p99 = latency.milliseconds(at: 99)
        let errors = self.errors.load(ordering: .relaxed), disconnects = self.disconnects.load(ordering: .relaxed)
        let line = String(format: "travellers %d: updates %.0f/s (acked %.0f/s), frames %.0f/s, entries %.0f/s, p50 %.1f ms, p99 %.1f ms, errors %d, disconnects %d, server CPU %.0f%%, client CPU %.0f%%, server RSS %.0f MiB",
                          travellers, perSecond(updates), perSecond(acks), perSecond(frames), perSecond(entries), p50, p99, errors, disconnects,
                          cpu(server), cpu(client), rss)
        let markdown = String(format: "| %d | %.0f | %.0f | %.0f | %.1f | %.1f | %d | %.0f%% | %.0f%% | %.0f |",
                              travellers, perSecond(acks), perSecond(frames), perSecond(entries), p50, p99, errors + disconnects, cpu(server), cpu(client), rss)
        return Report(line: line, markdown: markdown)
    }
}

/// The simulated clients.
enum Simulated {
    static let moveMarker = Array(#""type":"move""#.utf8)
    static let tsMarker = Array(#""ts":"#.utf8)
    static let pushMarker = Array(#""push":"#.utf8)

    static func nowMilliseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// Counts frames and records the latency of entries made by a fresh update:
    /// every position of a `locations:` frame, the `move`s of a nearby frame.
    static func received(_ text: String, movesOnly: Bool, stats: TravelStats) {
        let bytes = Array(text.utf8)
        let pushes = integers(after: pushMarker, in: bytes).count
        guard pushes > 0 else { return }
        stats.frames.add(pushes, ordering: .relaxed)
        let now = nowMilliseconds()
        var stamps: [Int64] = []
        if movesOnly {
            var index = 0
            while let move = firstRange(of: moveMarker, in: bytes, from: index) {
                guard let ts = firstRange(of: tsMarker, in: bytes, from: move) else { break }
                stamps.append(integers(after: tsMarker, in: Array(bytes[ts..<min(bytes.count, ts + 24)])).first ?? now)
                index = ts + tsMarker.count
            }
            stats.entries.add(integers(after: Array(#""type":""#.utf8), in: bytes).count, ordering: .relaxed)
        } else {
            stamps = integers(after: tsMarker, in: bytes)
            stats.entries.add(stamps.count, ordering: .relaxed)
        }
        stats.latency.record(stamps.map { UInt64(max(0, now - $0)) * 1_000_000 })
    }

    static func firstRange(of marker: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        var index = start
        while index + marker.count <= bytes.count {
            if bytes[index] == marker[0], bytes[index..<index + marker.count].elementsEqual(marker) { return index }
            index += 1
        }
        return nil
    }

    static func host(url: String, token: String, trip: String, stats: TravelStats, logger: Logger) async {
        await session(url: url, token: token, subscribe: SubscribeRequest(channel: "locations:\(trip)"), movesOnly: false,
                      stats: stats, logger: logger)
    }

    static func traveller(url: String, token: String, user: String, walker: SkiWalker, graph: SkiGraph, rate: Double,
                          stats: TravelStats, logger: Logger) async {
        let nearby = SubscribeRequest(channel: "nearby:#\(user)", data: RawJSON(["radius": 500, "limit": 50]))
        await session(url: url, token: token, subscribe: nearby, movesOnly: true, stats: stats, logger: logger) { outbound in
            var walker = walker
            var id: UInt32 = 3
            let period = Duration.milliseconds(Int64(1000 / rate))
            try await Task.sleep(for: .milliseconds(Int64.random(in: 0..<Int64(1000 / rate))))
            while !stats.stop.load(ordering: .relaxed) {
                let point = walker.advance(in: graph, seconds: 1 / rate)
                var data: [(key: String, value: JSON)] = [("lat", .double(point.lat)), ("lon", .double(point.lon))]
                if let alt = point.alt { data.append(("alt", .double(alt))) }
                data.append(("ts", .int(nowMilliseconds())))
                try await outbound.write(.text(Command(id: id, .rpc(method: "location.update", data: RawJSON(.object(data)))).json.text))
                stats.updates.add(1, ordering: .relaxed)
                id &+= 1
                try await Task.sleep(for: period)
            }
        }
    }

    /// One connection: connects, subscribes, runs `send` beside the reader (if
    /// given), answers pings, and counts replies, errors and frames until stopped.
    static func session(url: String, token: String, subscribe: SubscribeRequest, movesOnly: Bool, stats: TravelStats, logger: Logger,
                        send: (@Sendable (WebSocketOutboundWriter) async throws -> Void)? = nil) async {
        _ = try? await WebSocketClient.connect(url: url, configuration: .init(maxFrameSize: 1 << 22), logger: logger) { inbound, outbound, _ in
            try await outbound.write(.text(Command(id: 1, .connect(ConnectRequest(token: token))).json.text + "\n"
                + Command(id: 2, .subscribe(subscribe)).json.text))
            let sender = send.map { send in Task { try await send(outbound) } }
            defer { sender?.cancel() }
            var ready = false
            for try await frame in inbound.messages(maxSize: 1 << 24) {
                guard case let .text(text) = frame else { continue }
                if text == "{}" { try await outbound.write(.text("{}")); continue }
                if !ready, text.contains(#""id":2,"subscribe""#) {
                    ready = true
                    stats.ready.add(1, ordering: .relaxed)
                }
                let bytes = Array(text.utf8)
                stats.acks.add(integers(after: Array(#""rpc":"#.utf8), in: bytes).count, ordering: .relaxed)
                stats.errors.add(integers(after: Array(#""error":"#.utf8), in: bytes).count, ordering: .relaxed)
                received(text, movesOnly: movesOnly, stats: stats)
                if stats.stop.load(ordering: .relaxed) { break }
            }
        }
        if !stats.stop.load(ordering: .relaxed) { stats.disconnects.add(1, ordering: .relaxed) }
    }
}
