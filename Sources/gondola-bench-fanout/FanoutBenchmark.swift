import ArgumentParser
import Foundation
import GondolaBenchSupport
import GondolaHub
import GondolaProtocol
import HummingbirdWSClient
import Logging
import Synchronization

/// Measures fan-out: N subscribers of one channel on loopback, one publisher at
/// increasing rates; prints delivered messages per second and publish-to-deliver
/// latency percentiles for each rate.
@main
struct FanoutBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "gondola-bench-fanout")

    @Option(help: "WebSocket URL of the hub.") var url: String
    @Option(help: "The hub's token secret, to mint tokens.") var secret: String
    @Option(help: "Number of subscribers.") var subscribers: Int = 1000
    @Option(help: "Publication rates to try, per second, comma separated.") var rates: String = "10,100,500,1000"
    @Option(help: "Seconds each rate runs.") var seconds: Int = 5
    @Option(help: "Payload bytes per publication (padding).") var size: Int = 64
    @Option(help: "Subscribers whose every message is timed (the rest are counted).") var timed: Int = 200
    @Option(help: "Channel to use (its namespace must allow subscribe and publish).") var channel: String = "bench:fanout"
    @Option(help: "Markdown file the result rows are appended to.") var markdown: String?

    func validate() throws {
        guard (1...50_000).contains(subscribers) else { throw ValidationError("--subscribers must be 1...50000, got \(subscribers)") }
        guard (1...60).contains(seconds) else { throw ValidationError("--seconds must be 1...60, got \(seconds)") }
        guard parsedRates != nil else { throw ValidationError("--rates must be positive whole numbers, got '\(rates)'") }
    }

    var parsedRates: [Int]? {
        let values = rates.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !values.isEmpty, values.allSatisfy({ ($0 ?? 0) > 0 && ($0 ?? 0) <= 100_000 }) else { return nil }
        return values.map { $0! }
    }

    func run() async throws {
        let run = FanoutRun(url: url, subscribers: subscribers, rates: parsedRates!, seconds: seconds, size: size,
                            timed: timed, channel: channel)
        let rows = try await run.execute(secret: secret)
        if let markdown { MarkdownRows.append(rows, to: markdown) }
        Foundation.exit(0)
    }
}

/// One benchmark run's settings and steps.
struct FanoutRun: Sendable {
    let url: String
    let subscribers: Int
    let rates: [Int]
    let seconds: Int
    let size: Int
    let timed: Int
    let channel: String

    /// Connects the subscribers, measures each rate until deliveries fall under 90%, and returns the table rows.
    func execute(secret: String) async throws -> [String] {
        let logger = { var logger = Logger(label: "bench"); logger.logLevel = .error; return logger }()
        let tokens = try await ConnectionTokens(secret: secret)
        let stats = DeliveryStats()
        let start = ContinuousClock.now

        let connectStarted = ContinuousClock.now
        let subscriberTasks = Task {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<subscribers {
                    // Connections open in waves so the accept queue is not flooded.
                    if index % 200 == 199 { try? await Task.sleep(for: .milliseconds(50)) }
                    guard let token = try? await tokens.mint(user: "sub\(index)") else { continue }
                    group.addTask {
                        await subscribe(index: index, token: token, stats: stats, start: start, logger: logger)
                    }
                }
            }
        }
        let ready = try await waitUntil(stats.ready, reaches: subscribers, within: .seconds(120))
        print("subscribers ready: \(ready)/\(subscribers) in \(ContinuousClock.now - connectStarted)")
        guard ready == subscribers else { throw ValidationError("only \(ready) of \(subscribers) subscribers connected") }

        let publisherToken = try await tokens.mint(user: "publisher")
        var rows: [String] = []
        for rate in rates {
            let row = try await measure(rate: rate, token: publisherToken, stats: stats, start: start, logger: logger)
            print(row.line)
            rows.append(row.markdown)
            if row.deliveredShare < 0.9 { break }
        }
        stats.stop.store(true, ordering: .relaxed)
        subscriberTasks.cancel()
        return rows
    }

    struct Row {
        let line: String
        let markdown: String
        let deliveredShare: Double
    }

    /// Publishes at `rate` for `seconds` and reads what the subscribers got.
    func measure(rate: Int, token: String, stats: DeliveryStats, start: ContinuousClock.Instant, logger: Logger) async throws -> Row {
        stats.reset()
        let padding = String(repeating: "x", count: max(0, size - 30))
        let published = Atomic<Int>(0)
        try await WebSocketClient.connect(url: url, logger: logger) { inbound, outbound, _ in
            try await outbound.write(.text(Command(id: 1, .connect(ConnectRequest(token: token))).json.text + "\n"
                + Command(id: 2, .subscribe(SubscribeRequest(channel: channel))).json.text))
            let drain = Task { for try await _ in inbound {} }
            defer { drain.cancel() }
            try await Task.sleep(for: .milliseconds(200))
            let total = rate * seconds
            let begin = ContinuousClock.now
            var id: UInt32 = 3
            var sent = 0
            while sent < total {
                let due = min(total, Int((ContinuousClock.now - begin).timeInterval * Double(rate)) + 1)
                var lines: [String] = []
                while sent < due {
                    let nanos = (ContinuousClock.now - start).nanoseconds
                    lines.append(#"{"id":\#(id),"publish":{"channel":"\#(channel)","data":{"t":\#(nanos),"p":"\#(padding)"}}}"#)
                    id &+= 1
                    sent += 1
                }
                if !lines.isEmpty { try await outbound.write(.text(lines.joined(separator: "\n"))) }
                try await Task.sleep(for: .milliseconds(1))
            }
            published.store(sent, ordering: .relaxed)
            // Let the last publications arrive.
            let expected = sent * subscribers
            let settle = ContinuousClock.now + .seconds(5)
            while stats.delivered.load(ordering: .relaxed) < expected, ContinuousClock.now < settle {
                try await Task.sleep(for: .milliseconds(20))
            }
            try? await outbound.close(.normalClosure, reason: nil)
        }
        let sent = published.load(ordering: .relaxed)
        let delivered = stats.delivered.load(ordering: .relaxed)
        let elapsed = Double(seconds)
        let p50 = stats.latency.milliseconds(at: 50)
        let p99 = stats.latency.milliseconds(at: 99)
        let share = sent == 0 ? 0 : Double(delivered) / Double(sent * subscribers)
        let perSecond = Double(delivered) / elapsed
        let line = String(format: "subscribers %d rate %d/s: delivered %.0f msg/s (%.1f%% of %d), p50 %.2f ms, p99 %.2f ms",
                          subscribers, rate, perSecond, share * 100, sent * subscribers, p50, p99)
        let markdown = String(format: "| %d | %d | %.0f | %.1f%% | %.2f | %.2f |", subscribers, rate, perSecond, share * 100, p50, p99)
        return Row(line: line, markdown: markdown, deliveredShare: share)
    }

    /// One subscriber: connects, subscribes, and counts (and for the first `timed` ones, times) every publication.
    func subscribe(index: Int, token: String, stats: DeliveryStats, start: ContinuousClock.Instant, logger: Logger) async {
        let isTimed = index < timed
        _ = try? await WebSocketClient.connect(url: url, configuration: .init(maxFrameSize: 1 << 20), logger: logger) { inbound, outbound, _ in
            try await outbound.write(.text(Command(id: 1, .connect(ConnectRequest(token: token))).json.text + "\n"
                + Command(id: 2, .subscribe(SubscribeRequest(channel: channel))).json.text))
            var subscribed = false
            for try await frame in inbound.messages(maxSize: 1 << 22) {
                guard case let .text(text) = frame else { continue }
                if !subscribed, text.contains(#""id":2,"subscribe""#) {
                    subscribed = true
                    stats.ready.add(1, ordering: .relaxed)
                }
                if text == "{}" {
                    try await outbound.write(.text("{}"))
                    continue
                }
                let received = (ContinuousClock.now - start).nanoseconds
                let sendTimes = Self.sendTimes(in: text)
                guard !sendTimes.isEmpty else { continue }
                stats.delivered.add(sendTimes.count, ordering: .relaxed)
                if isTimed { stats.latency.record(sendTimes.map { UInt64(max(0, received - $0)) }) }
                if stats.stop.load(ordering: .relaxed) { break }
            }
        }
    }

    /// The `"t":<nanoseconds>` values of the publications in a frame.
    static func sendTimes(in text: String) -> [Int64] { integers(after: Array(#"{"t":"#.utf8), in: Array(text.utf8)) }
}

/// Counters and the latency histogram shared by all subscribers.
final class DeliveryStats: Sendable {
    let ready = Atomic<Int>(0)
    let delivered = Atomic<Int>(0)
    let stop = Atomic<Bool>(false)
    let latency = LatencyRecorder()

    func reset() {
        delivered.store(0, ordering: .relaxed)
        latency.reset()
    }
}
