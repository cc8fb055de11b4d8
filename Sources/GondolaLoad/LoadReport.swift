import Foundation
import Histogram

/// Percentiles of one kind of latency, in milliseconds.
public struct LatencySummary: Codable, Equatable, Sendable {
    public var count: UInt64
    public var p50: Double
    public var p90: Double
    public var p99: Double
    public var p999: Double
    public var max: Double

    public init(_ histogram: Histogram<UInt64>) {
        func milliseconds(_ nanoseconds: UInt64) -> Double { Double(nanoseconds) / 1e6 }
        count = histogram.totalCount
        p50 = milliseconds(histogram.valueAtPercentile(50))
        p90 = milliseconds(histogram.valueAtPercentile(90))
        p99 = milliseconds(histogram.valueAtPercentile(99))
        p999 = milliseconds(histogram.valueAtPercentile(99.9))
        max = milliseconds(count == 0 ? 0 : histogram.max)
    }
}

/// One second of a run, for the timeline, the CSV and the chart.
public struct TimelineSample: Codable, Equatable, Sendable {
    /// Seconds since the run started (the end of this sample).
    public var second: Int
    public var connected: Int
    public var messagesIn: Int
    public var messagesOut: Int
    /// Latency of what arrived in this second (the scenario's main latency), ms.
    public var p50: Double
    public var p99: Double
    /// Connection failures and error replies in this second.
    public var errors: Int

    public init(second: Int, connected: Int, messagesIn: Int, messagesOut: Int, p50: Double, p99: Double, errors: Int) {
        self.second = second
        self.connected = connected
        self.messagesIn = messagesIn
        self.messagesOut = messagesOut
        self.p50 = p50
        self.p99 = p99
        self.errors = errors
    }
}

/// What the run used besides the load generator: the server's CPU and memory.
public struct ProcessFigures: Codable, Equatable, Sendable {
    /// Percent of one core over the measured period.
    public var cpuPercent: Double
    public var rssMiB: Double
    /// Resident memory added per connection while the clients connected, KiB.
    public var rssPerConnectionKiB: Double?
    /// Time its threads waited for a core, in percent of the measured period (see `ProcessUsage`).
    public var runQueueWaitPercent: Double?

    public init(cpuPercent: Double, rssMiB: Double, rssPerConnectionKiB: Double? = nil, runQueueWaitPercent: Double? = nil) {
        self.cpuPercent = cpuPercent
        self.rssMiB = rssMiB
        self.rssPerConnectionKiB = rssPerConnectionKiB
        self.runQueueWaitPercent = runQueueWaitPercent
    }
}

/// The result of a load run, as printed and as written with `--json`.
public struct LoadReport: Codable, Equatable, Sendable {
    public var scenario: String
    public var target: String
    public var settings: [String: String]
    public var measuredSeconds: Double
    public var connections: Int
    public var connected: Int
    public var messagesIn: Int
    public var messagesOut: Int
    public var messagesInPerSecond: Double
    public var messagesOutPerSecond: Double
    /// The scenario's own figures (publications per second, delivered share, updates per second…).
    public var figures: [String: Double]
    /// Latencies by kind (e.g. "location", "chat", "ack", "delivery"), over the measured period.
    public var latencies: [String: LatencySummary]
    /// Connections that failed or were closed, by cause.
    public var connectionErrors: [String: Int]
    /// Error replies by protocol code (or name).
    public var errorReplies: [String: Int]
    public var reconnects: Int
    public var server: ProcessFigures?
    public var client: ProcessFigures?
    public var timeline: [TimelineSample]

    public init(
        scenario: String, target: String, settings: [String: String], measuredSeconds: Double, connections: Int, connected: Int,
        messagesIn: Int, messagesOut: Int, messagesInPerSecond: Double, messagesOutPerSecond: Double, figures: [String: Double],
        latencies: [String: LatencySummary], connectionErrors: [String: Int], errorReplies: [String: Int], reconnects: Int,
        server: ProcessFigures?, client: ProcessFigures?, timeline: [TimelineSample]
    ) {
        self.scenario = scenario
        self.target = target
        self.settings = settings
        self.measuredSeconds = measuredSeconds
        self.connections = connections
        self.connected = connected
        self.messagesIn = messagesIn
        self.messagesOut = messagesOut
        self.messagesInPerSecond = messagesInPerSecond
        self.messagesOutPerSecond = messagesOutPerSecond
        self.figures = figures
        self.latencies = latencies
        self.connectionErrors = connectionErrors
        self.errorReplies = errorReplies
        self.reconnects = reconnects
        self.server = server
        self.client = client
        self.timeline = timeline
    }

    /// A few lines for the terminal.
    public var text: String {
        var lines = ["\(scenario) against \(target): \(connected)/\(connections) connected, measured \(String(format: "%.1f", measuredSeconds)) s"]
        lines.append(String(format: "messages in %.0f/s, out %.0f/s; reconnects %d", messagesInPerSecond, messagesOutPerSecond, reconnects))
        if !figures.isEmpty {
            lines.append(
                figures.sorted { $0.key < $1.key }.map { "\($0.key) " + String(format: $0.value >= 100 ? "%.0f" : "%.3f", $0.value) }.joined(
                    separator: ", "))
        }
        for (name, summary) in latencies.sorted(by: { $0.key < $1.key }) {
            lines.append(
                String(
                    format: "%@ latency ms (n=%llu): p50 %.2f  p90 %.2f  p99 %.2f  p99.9 %.2f  max %.2f",
                    name, summary.count, summary.p50, summary.p90, summary.p99, summary.p999, summary.max))
        }
        let errors = connectionErrors.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        lines.append("connection errors: " + (errors.isEmpty ? "none" : errors.joined(separator: ", ")))
        let replies = errorReplies.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        lines.append("error replies: " + (replies.isEmpty ? "none" : replies.joined(separator: ", ")))
        if let server {
            lines.append(
                String(format: "server CPU %.0f%%, RSS %.0f MiB", server.cpuPercent, server.rssMiB)
                    + (server.rssPerConnectionKiB.map { String(format: ", %.1f KiB per connection", $0) } ?? ""))
        }
        if let client { lines.append(String(format: "load generator CPU %.0f%%, RSS %.0f MiB", client.cpuPercent, client.rssMiB)) }
        return lines.joined(separator: "\n")
    }

    /// The report as pretty JSON.
    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(self)
    }

    /// The timeline as CSV, one row per second.
    public var csv: String {
        var rows = ["second,connected,messages_in,messages_out,p50_ms,p99_ms,errors"]
        for sample in timeline {
            rows.append(
                "\(sample.second),\(sample.connected),\(sample.messagesIn),\(sample.messagesOut),"
                    + String(format: "%.3f,%.3f", sample.p50, sample.p99) + ",\(sample.errors)")
        }
        return rows.joined(separator: "\n") + "\n"
    }
}
