import CAllocator
import GondolaCluster
import GondolaHub
import GondolaStore
import Prometheus
import Synchronization

/// The Prometheus registry behind `/metrics`: the hub's counters and timers, and
/// gauges read from the node when scraped.
final class ServerMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let connections: Gauge
    private let users: Gauge
    private let channels: Gauge
    private let subscriptions: Gauge
    private let queuedBytes: Gauge
    private let walFrames: Gauge
    private let sqliteMemory: Gauge
    private let heapInUse: Gauge
    private let heapFree: Gauge
    private let backgroundCheckpoints: Counter
    private let catchUpCheckpoints: Counter
    private let forcedCheckpoints: Counter
    private let busyCheckpoints: Counter
    private let walRestarts: Counter
    /// The checkpointer's figures at the last scrape: its counters advance by the difference.
    private let lastCheckpoints = Mutex(WALCheckpointer.Statistics())

    init() {
        connections = registry.makeGauge(name: "gondola_connections", help: "Connected clients")
        users = registry.makeGauge(name: "gondola_users", help: "Distinct connected users")
        channels = registry.makeGauge(name: "gondola_channels", help: "Channels with at least one subscriber")
        subscriptions = registry.makeGauge(name: "gondola_subscriptions", help: "Subscriptions of connected clients")
        queuedBytes = registry.makeGauge(name: "gondola_queue_bytes", help: "Bytes waiting in client write queues")
        walFrames = registry.makeGauge(name: "gondola_sqlite_wal_frames", help: "Pages in SQLite's write-ahead log after the last commit")
        let registry = registry
        sqliteMemory = registry.makeGauge(
            name: "gondola_sqlite_memory_bytes", help: "Bytes SQLite holds in memory: page caches, statements, schemas")
        let heapHelp =
            "The allocator's (jemalloc's) heap: bytes in allocated blocks, and resident beyond them (freed pages not yet returned, partly used pages, metadata)"
        heapInUse = registry.makeGauge(name: "gondola_heap_bytes", labels: [("state", "in_use")], help: heapHelp)
        heapFree = registry.makeGauge(name: "gondola_heap_bytes", labels: [("state", "free")], help: heapHelp)
        func checkpoints(_ kind: String) -> Counter {
            registry.makeCounter(
                name: "gondola_sqlite_checkpoints_total", labels: [("kind", kind)],
                help: "WAL checkpoints: background passes, the writer's catch-ups and forced copies, busy attempts")
        }
        backgroundCheckpoints = checkpoints("background")
        catchUpCheckpoints = checkpoints("catch_up")
        forcedCheckpoints = checkpoints("forced")
        busyCheckpoints = checkpoints("busy")
        walRestarts = registry.makeCounter(name: "gondola_sqlite_wal_restarts_total", help: "Times the write-ahead log started over")
    }

    var factory: PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(100), .microseconds(500), .milliseconds(1), .milliseconds(5), .milliseconds(10),
            .milliseconds(50), .milliseconds(100), .milliseconds(500), .seconds(1), .seconds(5),
        ]
        return factory
    }

    /// The Prometheus text exposition, with gauges refreshed from `node`, the
    /// SQLite database's checkpointer (none in cluster mode), the cluster's engine
    /// (`gondola_engine_up` per part: 1 up, 0 down; none for a node alone), SQLite's memory
    /// (and its page-cache block's use, when one is reserved) and the allocator's heap.
    func render(node: Node, checkpointer: WALCheckpointer?, engine: EngineHealth?) -> [UInt8] {
        let stats = node.stats
        connections.set(Double(stats.clients))
        users.set(Double(stats.users))
        channels.set(Double(stats.channels))
        subscriptions.set(Double(stats.subscriptions))
        queuedBytes.set(Double(stats.queuedBytes))
        if let checkpointer { record(checkpointer) }
        sqliteMemory.set(Double(GondolaDatabase.memoryInUse))
        if let block = SQLitePageCache.reserved {
            let usage = SQLitePageCache.usage
            let help =
                "SQLite's cached pages: bytes of the block reserved for them in use and free, and of pages taken from the heap when it was full"
            func gauge(_ state: String) -> Gauge {
                registry.makeGauge(name: "gondola_sqlite_page_cache_bytes", labels: [("state", state)], help: help)
            }
            gauge("in_use").set(Int64(usage.slotsInUse * block.slotSize))
            gauge("free").set(Int64((block.slots - usage.slotsInUse) * block.slotSize))
            gauge("heap").set(Int64(usage.overflowBytes))
        }
        var heap = gondola_allocator_statistics()
        if gondola_read_allocator_statistics(&heap) {
            heapInUse.set(Double(heap.allocated))
            heapFree.set(Double(heap.resident > heap.allocated ? heap.resident - heap.allocated : 0))
        }
        for part in engine?.parts ?? [] {
            registry.makeGauge(
                name: "gondola_engine_up", labels: [("part", part.name)],
                help: "Whether a part of the cluster's engine works (PostgreSQL's bus, each Redis shard)"
            ).set(Int64(part.up ? 1 : 0))
        }
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }

    private func record(_ checkpointer: WALCheckpointer) {
        lastCheckpoints.withLock { last in
            let now = checkpointer.statistics
            walFrames.set(Double(now.walFrames))
            func advance(_ counter: Counter, _ count: (WALCheckpointer.Statistics) -> Int) {
                if count(now) > count(last) { counter.increment(by: Int64(count(now) - count(last))) }
            }
            advance(backgroundCheckpoints) { $0.backgroundPasses }
            advance(catchUpCheckpoints) { $0.writerCatchUps }
            advance(forcedCheckpoints) { $0.writerForced }
            advance(busyCheckpoints) { $0.busy }
            advance(walRestarts) { $0.logRestarts }
            last = now
        }
    }
}
