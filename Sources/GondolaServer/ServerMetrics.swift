import GondolaHub
import Prometheus

/// The Prometheus registry behind `/metrics`: the hub's counters and timers, and
/// gauges read from the node when scraped.
final class ServerMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let connections: Gauge
    private let users: Gauge
    private let channels: Gauge
    private let subscriptions: Gauge
    private let queuedBytes: Gauge

    init() {
        connections = registry.makeGauge(name: "gondola_connections", help: "Connected clients")
        users = registry.makeGauge(name: "gondola_users", help: "Distinct connected users")
        channels = registry.makeGauge(name: "gondola_channels", help: "Channels with at least one subscriber")
        subscriptions = registry.makeGauge(name: "gondola_subscriptions", help: "Subscriptions of connected clients")
        queuedBytes = registry.makeGauge(name: "gondola_queue_bytes", help: "Bytes waiting in client write queues")
    }

    var factory: PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(100), .microseconds(500), .milliseconds(1), .milliseconds(5), .milliseconds(10),
            .milliseconds(50), .milliseconds(100), .milliseconds(500), .seconds(1), .seconds(5),
        ]
        return factory
    }

    /// The Prometheus text exposition, with gauges refreshed from `node`.
    func render(node: Node) -> [UInt8] {
        let stats = node.stats
        connections.set(Double(stats.clients))
        users.set(Double(stats.users))
        channels.set(Double(stats.channels))
        subscriptions.set(Double(stats.subscriptions))
        queuedBytes.set(Double(stats.queuedBytes))
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }
}
