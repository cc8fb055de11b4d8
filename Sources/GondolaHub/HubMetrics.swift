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
    private let errorCounters: Mutex<[UInt32: Counter]>
    private let disconnectCounters: Mutex<[UInt16: Counter]>

    init(factory: any MetricsFactory) {
        self.factory = factory
        connects = Counter(label: "gondola_connects_total", factory: factory)
        commands = Counter(label: "gondola_messages_received_total", factory: factory)
        messagesOut = Counter(label: "gondola_messages_sent_total", factory: factory)
        publications = Counter(label: "gondola_publications_total", factory: factory)
        rpcDuration = Timer(label: "gondola_rpc_duration_seconds", factory: factory)
        regionalApplied = Counter(label: "gondola_regional_events_total", dimensions: [("outcome", "applied")], factory: factory)
        regionalDropped = Counter(label: "gondola_regional_events_total", dimensions: [("outcome", "dropped")], factory: factory)
        errorCounters = Mutex([:])
        disconnectCounters = Mutex([:])
    }

    /// Counts an error reply by its code.
    func error(_ code: UInt32) {
        errorCounters.withLock { counters in
            if counters[code] == nil {
                counters[code] = Counter(label: "gondola_errors_total", dimensions: [("code", String(code))], factory: factory)
            }
            return counters[code]!
        }.increment()
    }

    /// Counts a closed connection by its close code.
    func disconnect(_ code: UInt16) {
        disconnectCounters.withLock { counters in
            if counters[code] == nil {
                counters[code] = Counter(label: "gondola_disconnects_total", dimensions: [("code", String(code))], factory: factory)
            }
            return counters[code]!
        }.increment()
    }
}
