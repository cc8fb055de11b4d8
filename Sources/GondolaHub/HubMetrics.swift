import CoreMetrics
import GondolaProtocol
import Synchronization

/// The engine's counters and timers, made by the metrics factory the server chooses.
final class HubMetrics: Sendable {
    let factory: any MetricsFactory
    let connects: Counter
    let commands: Counter
    let messagesOut: Counter
    let publications: Counter
    let rpcDuration: Timer
    /// Regional events of other nodes applied (a followed region) and dropped (not followed).
    let regionalApplied: Counter
    let regionalDropped: Counter
    private let errorCounters: KeyedCounters
    private let disconnectCounters: KeyedCounters
    private let limitCounters: KeyedCounters

    init(factory: any MetricsFactory) {
        self.factory = factory
        connects = Counter(label: "gondola_connects_total", factory: factory)
        commands = Counter(label: "gondola_messages_received_total", factory: factory)
        messagesOut = Counter(label: "gondola_messages_sent_total", factory: factory)
        publications = Counter(label: "gondola_publications_total", factory: factory)
        rpcDuration = Timer(label: "gondola_rpc_duration_seconds", factory: factory)
        regionalApplied = Counter(label: "gondola_regional_events_total", dimensions: [("outcome", "applied")], factory: factory)
        regionalDropped = Counter(label: "gondola_regional_events_total", dimensions: [("outcome", "dropped")], factory: factory)
        errorCounters = KeyedCounters(label: "gondola_errors_total", dimension: "code", factory: factory)
        disconnectCounters = KeyedCounters(label: "gondola_disconnects_total", dimension: "code", factory: factory)
        limitCounters = KeyedCounters(label: "gondola_limit_reached_total", dimension: "limit", factory: factory)
    }

    /// Counts an error reply by its code.
    func error(_ code: UInt32) { errorCounters.increment(String(code)) }

    /// Counts a closed connection by its close code.
    func disconnect(_ code: UInt16) { disconnectCounters.increment(String(code)) }

    /// Counts a connection or request refused by a limit, by the limit's setting name.
    func limitReached(_ setting: String) { limitCounters.increment(setting) }
}

/// Counters of one metric, one per value of its dimension, made when a value is first counted.
public final class KeyedCounters: Sendable {
    private let label: String
    private let dimension: String
    private let factory: any MetricsFactory
    private let counters = Mutex<[String: Counter]>([:])

    public init(label: String, dimension: String, factory: any MetricsFactory) {
        self.label = label
        self.dimension = dimension
        self.factory = factory
    }

    /// Adds one to the counter of `value`.
    public func increment(_ value: String) {
        counters.withLock { counters in
            if let counter = counters[value] { return counter }
            let counter = Counter(label: label, dimensions: [(dimension, value)], factory: factory)
            counters[value] = counter
            return counter
        }.increment()
    }
}
