import CoreMetrics
import Synchronization

/// The push module's figures on `/metrics`: notices taken from the domains and dropped before
/// the outbox, notifications accepted by the services, failures by reason (each counted once
/// it is recorded in the outbox), the outbox's depth, and the time from the news to the
/// service's acceptance.
final class PushMetrics: Sendable {
    let factory: any MetricsFactory
    let depth: Gauge
    let takenNotices: Counter
    let droppedNotices: Counter
    let latency: Timer
    private let sentCounters: Mutex<[String: Counter]>
    private let failureCounters: Mutex<[String: Counter]>

    init(factory: any MetricsFactory) {
        self.factory = factory
        depth = Gauge(label: "gondola_push_outbox_depth", factory: factory)
        takenNotices = Counter(label: "gondola_push_notices_total", factory: factory)
        droppedNotices = Counter(label: "gondola_push_notices_dropped_total", factory: factory)
        latency = Timer(label: "gondola_push_latency_seconds", factory: factory)
        sentCounters = Mutex([:])
        failureCounters = Mutex([:])
    }

    /// Counts a notification the service accepted, `latency` milliseconds after its news.
    func sent(_ platform: PushPlatform, latency milliseconds: Int64) {
        counter(sentCounters, platform.rawValue) {
            Counter(label: "gondola_push_sent_total", dimensions: [("platform", platform.rawValue)], factory: factory)
        }.increment()
        latency.recordMilliseconds(max(0, milliseconds))
    }

    /// Counts a failure: `reason` is `unregistered`, `rate_limited`, `server_error`, `network`,
    /// `credentials`, `rejected`, `expired`, `outbox_full` or `user_rate`.
    func failed(_ platform: PushPlatform, _ reason: String, count: Int = 1) {
        counter(failureCounters, platform.rawValue + "/" + reason) {
            Counter(label: "gondola_push_failed_total", dimensions: [("platform", platform.rawValue), ("reason", reason)], factory: factory)
        }.increment(by: count)
    }

    private func counter(_ counters: borrowing Mutex<[String: Counter]>, _ key: String, make: () -> Counter) -> Counter {
        counters.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = make()
            counters[key] = counter
            return counter
        }
    }
}
