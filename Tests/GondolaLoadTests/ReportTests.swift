import Foundation
import GondolaLoad
import Testing

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// The report maths: histograms, the per-second timeline, CSV and SVG output,
/// schedules and command-line values.
@Suite struct ReportTests {
    @Test func percentilesOfAKnownDistribution() {
        var stats = LoadStats(mainLatency: "delivery")
        // 1 ms … 1000 ms, once each.
        for millisecond in 1...1000 { stats.record("delivery", nanoseconds: Int64(millisecond) * 1_000_000) }
        stats.record("ack", nanoseconds: -5)
        let summary = stats.summaries["delivery"]!
        #expect(summary.count == 1000)
        #expect(abs(summary.p50 - 500) <= 1)
        #expect(abs(summary.p90 - 900) <= 1)
        #expect(abs(summary.p99 - 990) <= 1)
        #expect(abs(summary.p999 - 999) <= 1)
        #expect(abs(summary.max - 1000) <= 1)
        #expect(stats.summaries["ack"]?.max == 0)
        // Values beyond a minute are kept as a minute.
        stats.record("slow", nanoseconds: 3_600_000_000_000)
        #expect(abs(stats.summaries["slow"]!.max - 60_000) < 60)
    }

    @Test func secondsCloseIntoTheTimeline() {
        var stats = LoadStats(mainLatency: "delivery")
        stats.opened()
        stats.opened()
        stats.received(10)
        stats.sent(3)
        for millisecond in 1...100 { stats.record("delivery", nanoseconds: Int64(millisecond) * 1_000_000) }
        stats.record("other", nanoseconds: 999_000_000_000)
        stats.closed(cause: "closed by server (3008)", wasOpen: true)
        stats.closed(cause: "connect failed: refused", wasOpen: false)
        let first = stats.closeSecond(at: 1)
        #expect(first.connected == 1 && first.messagesIn == 10 && first.messagesOut == 3 && first.errors == 2)
        #expect(abs(first.p50 - 50) < 0.5 && abs(first.p99 - 99) < 0.5)
        let second = stats.closeSecond(at: 2)
        #expect(second.messagesIn == 0 && second.p99 == 0 && second.errors == 0)
        #expect(stats.timeline.count == 2)
        #expect(stats.connectionErrors == ["closed by server (3008)": 1, "connect failed: refused": 1])
        stats.startMeasuring()
        #expect(stats.messagesIn == 0 && stats.connectionErrors.isEmpty && stats.summaries.isEmpty)
        #expect(stats.connected == 1 && stats.timeline.count == 2)
    }

    func report(timeline: [TimelineSample]) -> LoadReport {
        LoadReport(
            scenario: "fanout", target: "nats <ws://x>", settings: ["rate": "10/s"], measuredSeconds: 2, connections: 3, connected: 3,
            messagesIn: 40, messagesOut: 20, messagesInPerSecond: 20, messagesOutPerSecond: 10, figures: ["delivered_share": 1],
            latencies: [:], connectionErrors: ["closed by server": 1], errorReplies: ["111": 2], reconnects: 1,
            server: nil, client: nil, timeline: timeline)
    }

    @Test func csvHasOneRowPerSecond() {
        let samples = [
            TimelineSample(second: 1, connected: 3, messagesIn: 20, messagesOut: 10, p50: 1.5, p99: 2.25, errors: 0),
            TimelineSample(second: 2, connected: 2, messagesIn: 20, messagesOut: 10, p50: 1, p99: 3, errors: 1),
        ]
        let lines = report(timeline: samples).csv.split(separator: "\n")
        #expect(lines == ["second,connected,messages_in,messages_out,p50_ms,p99_ms,errors", "1,3,20,10,1.500,2.250,0", "2,2,20,10,1.000,3.000,1"])
    }

    @Test func jsonRoundTrips() throws {
        let original = report(timeline: [TimelineSample(second: 1, connected: 3, messagesIn: 20, messagesOut: 10, p50: 1.5, p99: 2.25, errors: 0)])
        #expect(try JSONDecoder().decode(LoadReport.self, from: original.json()) == original)
    }

    @Test func svgDrawsFourSeriesScaledToTheData() throws {
        let samples = (1...30).map {
            TimelineSample(second: $0, connected: 3, messagesIn: $0 * 100, messagesOut: 50, p50: 2, p99: Double($0), errors: 0)
        }
        let svg = SVGChart.render(report(timeline: samples))
        // Well-formed XML, with one polyline of 30 points per series.
        _ = try XMLDocument(xmlString: svg)
        let polylines = svg.split(separator: "\n").filter { $0.hasPrefix("<polyline") }
        #expect(polylines.count == 4)
        for line in polylines {
            let points = line.split(separator: "points=\"")[1].prefix { $0 != "\"" }
            #expect(points.split(separator: " ").count == 30)
        }
        #expect(svg.contains("nats &lt;ws://x&gt;"))
        // Axis maxima: p99 peaks at 30 ms (axis 50), messages in at 3000/s (axis 5000).
        #expect(svg.contains(">50</text>") && svg.contains(">5000</text>"))
        #expect(SVGChart.render(report(timeline: [])).contains("<svg"))
    }

    @Test func uniformScheduleSpreadsTurnsOverThePeriod() {
        var schedule = UniformSchedule(count: 10, period: 1_000_000_000)
        #expect(schedule.due(at: 0) == [0])
        #expect(schedule.due(at: 50_000_000) == [])
        #expect(schedule.due(at: 450_000_000) == [1, 2, 3, 4])
        #expect(schedule.due(at: 1_000_000_000) == [5, 6, 7, 8, 9, 0])
        // A late tick catches up, at most maxPerCall at a time.
        var capped = UniformSchedule(count: 1000, period: 1_000_000_000, maxPerCall: 300)
        _ = capped.due(at: 0)
        #expect(capped.due(at: 2_000_000_000).count == 300)
        #expect(capped.turns == 301)
        #expect(UniformSchedule(count: 0, period: 1).turns == 0)
        var empty = UniformSchedule(count: 0, period: 1)
        #expect(empty.due(at: 5) == [])
    }

    @Test func commandLineValues() throws {
        #expect(try LoadArguments.duration("120s", option: "--duration") == .seconds(120))
        #expect(try LoadArguments.duration("2m", option: "--duration") == .seconds(120))
        #expect(try LoadArguments.duration("250ms", option: "--duration") == .milliseconds(250))
        #expect(try LoadArguments.duration("1.5", option: "--duration") == .milliseconds(1500))
        #expect(try LoadArguments.rate("1/s", option: "--rate") == 1)
        #expect(try LoadArguments.rate("30/m", option: "--rate") == 0.5)
        #expect(try LoadArguments.rate("200", option: "--rate") == 200)
        for bad in ["soon", "-1s", "5x", ""] {
            #expect(throws: LoadError.self) { try LoadArguments.duration(bad, option: "--duration") }
        }
        for bad in ["0/s", "-1/s", "1/d", "1/s/s", "fast"] {
            let error = #expect(throws: LoadError.self) { try LoadArguments.rate(bad, option: "--rate") }
            #expect(error?.description.contains("'\(bad)'") == true)
        }
        #expect(throws: LoadError.self) { try LoadArguments.share(1.5, option: "--chat-share") }
        #expect(try LoadArguments.choice("direct", option: "--mode") as ChatMode == .direct)
        #expect(try LoadArguments.choice("mqtt", option: "--target") as FanoutTarget == .mqtt)
        let choice = #expect(throws: LoadError.self) { try LoadArguments.choice("Group", option: "--mode") as ChatMode }
        #expect(choice?.description == "--mode must be one of group, direct, got 'Group'")
        #expect(throws: LoadError.self) { try WebSocketURL("http://127.0.0.1:8000/") }
        #expect(throws: LoadError.self) { try WebSocketURL("ws://127.0.0.1/") }
        #expect(throws: LoadError.self) { try WebSocketURL("ws://:80/") }
        let url = try WebSocketURL("ws://127.0.0.1:8000/connection/websocket")
        #expect(url.host == "127.0.0.1" && url.port == 8000 && url.path == "/connection/websocket")
        #expect(try WebSocketURL("ws://localhost:4222").path == "/")
    }
}

@Suite struct FanoutSettingsTests {
    @Test func nodesAndPublishersAreCheckedNamingTheOption() throws {
        let one = [try WebSocketURL("ws://127.0.0.1:8000/connection/websocket")]
        let two = one + [try WebSocketURL("ws://127.0.0.1:8001/connection/websocket")]
        func scenario(_ target: FanoutTarget, _ urls: [WebSocketURL], publishers: Int = 1, subscribe: Bool = true) throws -> FanoutScenario {
            try FanoutScenario(
                target: target, urls: urls, subscribers: 2, publishers: publishers, publishersSubscribe: subscribe,
                rate: .fixed(10), payloadBytes: 64, channel: "bench:x",
                tokens: target == .gondola ? Array(repeating: "t", count: 2 + publishers) : [])
        }
        _ = try scenario(.gondola, two, publishers: 3, subscribe: false)
        _ = try scenario(.nats, one)
        let cases: [(() throws -> FanoutScenario, String)] = [
            ({ try scenario(.gondola, one, publishers: 0) }, "--publishers must be at least 1"),
            ({ try scenario(.gondola, []) }, "at least one --url"),
            ({ try scenario(.nats, two) }, "several --url apply to --target gondola only, got 2"),
            ({ try scenario(.mqtt, one, subscribe: false) }, "--publishers-unsubscribed applies to --target gondola only"),
        ]
        for (make, expected) in cases {
            let error = #expect(throws: LoadError.self) { try make() }
            #expect(error?.description.contains(expected) == true, "\(String(describing: error))")
        }
    }
}
