import Foundation

/// Monotonic nanoseconds, comparable between the connections of one process.
public enum MonotonicClock {
    public static func nanoseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}

/// Unix time in milliseconds, the unit of the hub's `ts` and `starts_at` fields.
enum WallClock {
    static func milliseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}

extension Duration {
    /// The duration in whole nanoseconds.
    public var nanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
}

/// The behaviour of one kind of load: which connections it opens and what each
/// sends and expects. Called on the loop thread only.
public protocol LoadScenario: AnyObject {
    /// Name for reports ("travellers", "fanout").
    var name: String { get }
    /// Server kind and address for reports.
    var target: String { get }
    /// The main latency kind, followed by the timeline and the progress line.
    var mainLatency: String { get }
    /// How many connections the scenario holds.
    var connectionCount: Int { get }
    /// Connections that finished their handshake and subscriptions.
    var readyCount: Int { get }
    /// Where `connection` connects, and the WebSocket subprotocol it asks for.
    func address(of connection: Int) -> (url: WebSocketURL, subprotocol: String?)
    func opened(_ connection: Int, _ io: LoadIO)
    func received(_ connection: Int, _ bytes: UnsafeRawBufferPointer, binary: Bool, _ io: LoadIO)
    /// `connection` is gone; forget its protocol state (it may be reconnected).
    func closed(_ connection: Int)
    /// Sends whatever is due at `now` (monotonic ns); `sending` is false during connection ramp-up.
    func tick(now: Int64, sending: Bool, _ io: LoadIO)
    /// The measured period begins: restart the scenario's own counts.
    func measuringStarted()
    /// The scenario's own figures for the report (e.g. publications per second).
    func figures(measuredSeconds: Double) -> [String: Double]
    /// The kind of client `connection` is ("traveller", "host"): received bytes are
    /// reported per hour of one client of each kind.
    func bytesGroup(of connection: Int) -> String
}

extension LoadScenario {
    public func bytesGroup(of connection: Int) -> String { "connection" }
}

/// What a scenario may do from its callbacks: send, and count into the run's statistics.
public final class LoadIO {
    let pool: SocketPool
    public internal(set) var stats: LoadStats

    init(pool: SocketPool, stats: LoadStats) {
        self.pool = pool
        self.stats = stats
    }

    /// Sends one message; a refused send is counted as an error by its cause.
    public func send(_ connection: Int, _ bytes: [UInt8], binary: Bool = false) {
        do {
            try pool.send(connection, bytes, binary: binary)
            stats.sent()
        } catch .queueFull {
            stats.errorReply("send queue full")
        } catch {
            stats.errorReply("send on closed connection")
        }
    }

    /// Closes a connection whose peer broke the protocol.
    public func drop(_ connection: Int, because cause: String) {
        stats.errorReply(cause)
        pool.close(connection)
    }
}

/// Settings common to every scenario.
public struct LoadSettings: Sendable {
    /// Connections opened per second while ramping up.
    public var rampPerSecond: Double = 1000
    /// Longest wait for every connection to become ready before measuring anyway.
    public var readyTimeout: Duration = .seconds(120)
    /// Load sent after everyone is ready and before the measurement starts.
    public var warmUp: Duration = .seconds(5)
    /// The measured period.
    public var duration: Duration = .seconds(60)
    /// When a dropped connection is opened again.
    public var reconnect = ReconnectPolicy.fixed(.seconds(1))
    /// Print a progress line every second.
    public var progress = true
    /// Process id of the server, for its CPU and memory.
    /// The server's processes (the nodes of a cluster): their CPU and memory are summed.
    public var serverPIDs: [Int32] = []
    /// Every connection offers permessage-deflate.
    public var offerCompression = false
    /// Most connections whose handshake is under way at once; more wait their turn in order.
    /// libwebsockets keeps each pending handshake's timeout in one sorted list of timers, so
    /// thousands at once would cost the client time quadratic in their number.
    public var maxHandshakes = 512
    /// Longest a handshake may take before the connection gives it up and reconnects after the
    /// `reconnect` policy's delay, as an SDK's connect timeout does. The deadline is kept here,
    /// not in libwebsockets' timers, on which hundreds of connections once waited for good after
    /// a server's restart (no socket left, no callback to come).
    public var handshakeTimeout: Duration = .seconds(10)
    /// Local addresses the connections are opened from, connection i from address i mod
    /// their number (each address has its own ephemeral ports); empty: the kernel picks.
    public var sourceAddresses: [String] = []

    public init() {}
}

/// Runs a scenario on a `SocketPool`: ramps connections up, waits for them to be
/// ready, warms up, measures, and reports. Dropped connections are reopened after
/// the `reconnect` policy's delay until the run ends. Every phase is bounded in time.
public final class LoadDriver: SocketPoolHandler {
    enum Phase { case connecting, warmingUp, measuring, finished }

    let scenario: LoadScenario
    let settings: LoadSettings
    private var io: LoadIO!
    private var pool: SocketPool!
    private var phase = Phase.connecting
    private let startedAt = MonotonicClock.nanoseconds()
    private var phaseStartedAt: Int64 = 0
    private var nextSecond: Int64 = 0
    private var opening = 0
    private var isOpen: [Bool]
    /// Connections due to open, first or again, waiting for a handshake slot (each at most once,
    /// since it is queued only when idle).
    private var openQueue = FIFO<(connection: Int, again: Bool)>()
    /// Connections whose handshake is under way, and how many.
    private var handshaking: [Bool]
    private var handshakes = 0
    /// When each connection's handshake under way started (monotonic nanoseconds).
    private var handshakeStartedAt: [Int64]
    /// Handshakes in the order they started, for their deadline; an entry whose connection is no
    /// longer handshaking, or started again since, is passed over.
    private var handshakeDeadlines = FIFO<(connection: Int, startedAt: Int64)>()
    /// Connections waiting to be opened again, by the millisecond (monotonic) they are due,
    /// and the next millisecond to look at: a tick opens what is due without scanning the rest.
    private var reconnectDue: [Int64: [Int]] = [:]
    private var reconnectCursor: Int64
    private var reconnectSchedule: ReconnectSchedule
    private var measureStart: (time: Int64, server: ProcessUsage?, client: ProcessUsage?)?
    private var report: LoadReport?
    private var rssBeforeConnecting: Double?
    /// Seconds from the start until every connection was ready (or the ready timeout), and how many were.
    private var readiness: (seconds: Double, ready: Int)?
    /// Per connection while measuring: socket bytes received when the measurement
    /// started, and message bytes (inflated) received since.
    private var wireBytesAtStart: [UInt64]
    private var messageBytes: [UInt64]

    public init(scenario: LoadScenario, settings: LoadSettings) throws {
        self.scenario = scenario
        self.settings = settings
        isOpen = Array(repeating: false, count: scenario.connectionCount)
        handshaking = Array(repeating: false, count: scenario.connectionCount)
        handshakeStartedAt = Array(repeating: 0, count: scenario.connectionCount)
        wireBytesAtStart = Array(repeating: 0, count: scenario.connectionCount)
        messageBytes = Array(repeating: 0, count: scenario.connectionCount)
        reconnectSchedule = ReconnectSchedule(policy: settings.reconnect, connections: scenario.connectionCount)
        reconnectCursor = MonotonicClock.nanoseconds() / 1_000_000
        rssBeforeConnecting = ProcessUsage(pids: settings.serverPIDs)?.rssMiB
        var limits = SocketPool.Limits(maxConnections: scenario.connectionCount)
        limits.offerCompression = settings.offerCompression
        let pool = try SocketPool(limits: limits, handler: self)
        self.pool = pool
        io = LoadIO(pool: pool, stats: LoadStats(mainLatency: scenario.mainLatency))
        phaseStartedAt = startedAt
        nextSecond = startedAt + 1_000_000_000
    }

    /// Runs the whole scenario and answers its report.
    public func run() async -> LoadReport {
        await pool.run()
        let report = self.report!
        pool = nil
        return report
    }

    public func opened(_ connection: Int) {
        isOpen[connection] = true
        handshakeEnded(connection)
        reconnectSchedule.succeeded(connection)
        io.stats.opened()
        scenario.opened(connection, io)
    }

    public func received(_ connection: Int, _ bytes: UnsafeRawBufferPointer, binary: Bool) {
        io.stats.received()
        if phase == .measuring { messageBytes[connection] += UInt64(bytes.count) }
        scenario.received(connection, bytes, binary: binary, io)
    }

    public func closed(_ connection: Int, code: Int, cause: String) {
        let wasOpen = isOpen[connection]
        isOpen[connection] = false
        handshakeEnded(connection)
        scenario.closed(connection)
        guard phase != .finished else { return }
        io.stats.closed(cause: code == 0 ? cause : "\(cause) (\(code))", wasOpen: wasOpen)
        let due = (MonotonicClock.nanoseconds() + reconnectSchedule.delay(after: connection)) / 1_000_000
        reconnectDue[max(due, reconnectCursor), default: []].append(connection)
    }

    public func tick() {
        let now = MonotonicClock.nanoseconds()
        abandonLateHandshakes(now: now)
        openDueConnections(now: now)
        switch phase {
        case .connecting:
            if scenario.readyCount == scenario.connectionCount || now - phaseStartedAt > settings.readyTimeout.nanoseconds {
                readiness = (Double(now - startedAt) / 1e9, scenario.readyCount)
                if settings.progress {
                    print("ready: \(scenario.readyCount)/\(scenario.connectionCount) connections after \(seconds(now - startedAt)) s")
                }
                enter(.warmingUp, now: now)
            }
        case .warmingUp:
            if now - phaseStartedAt >= settings.warmUp.nanoseconds {
                io.stats.startMeasuring()
                scenario.measuringStarted()
                for connection in wireBytesAtStart.indices { wireBytesAtStart[connection] = pool.receivedBytes(connection) }
                measureStart = (now, ProcessUsage(pids: settings.serverPIDs), ProcessUsage(pid: getpid()))
                enter(.measuring, now: now)
            }
        case .measuring:
            if now - phaseStartedAt >= settings.duration.nanoseconds { finish(now: now) }
        case .finished:
            return
        }
        if phase != .finished { scenario.tick(now: now, sending: phase != .connecting, io) }
        if now >= nextSecond {
            nextSecond += 1_000_000_000
            let sample = io.stats.closeSecond(at: Int((now - startedAt + 500_000_000) / 1_000_000_000))
            if settings.progress { printProgress(sample) }
        }
    }

    private func enter(_ next: Phase, now: Int64) {
        phase = next
        phaseStartedAt = now
    }

    /// Queues the connections due at the ramp rate and those due to reconnect, then opens
    /// queued ones while fewer than `maxHandshakes` handshakes are under way.
    private func openDueConnections(now: Int64) {
        let due = min(scenario.connectionCount, Int(Double(now - startedAt) / 1e9 * settings.rampPerSecond) + 1)
        while opening < due {
            openQueue.append((opening, false))
            opening += 1
        }
        guard phase != .finished else { return }
        let millisecond = now / 1_000_000
        while reconnectCursor <= millisecond {
            for connection in reconnectDue.removeValue(forKey: reconnectCursor) ?? [] { openQueue.append((connection, true)) }
            reconnectCursor += 1
        }
        while handshakes < settings.maxHandshakes, let next = openQueue.popFirst() {
            let (connection, again) = next
            if open(connection) {
                if again { io.stats.reconnected() }
            } else if !again {
                io.stats.errorReply("could not start a connection")
            }
        }
    }

    /// Starts opening `connection` to the scenario's address, from its source address. A
    /// handshake slot is taken first: a connection that fails at once gives it back in `closed`.
    private func open(_ connection: Int) -> Bool {
        let (url, subprotocol) = scenario.address(of: connection)
        let sources = settings.sourceAddresses
        handshaking[connection] = true
        handshakes += 1
        let now = MonotonicClock.nanoseconds()
        handshakeStartedAt[connection] = now
        handshakeDeadlines.append((connection, now))
        let started = pool.connect(connection, to: url, subprotocol: subprotocol, from: sources.isEmpty ? nil : sources[connection % sources.count])
        if !started { handshakeEnded(connection) }
        return started
    }

    /// Gives up the handshakes older than `handshakeTimeout`: each connection is closed (and so
    /// reopened after the reconnect delay) and counted as an error.
    private func abandonLateHandshakes(now: Int64) {
        let limit = settings.handshakeTimeout.nanoseconds
        while let entry = handshakeDeadlines.first {
            let (connection, startedAt) = entry
            let current = handshaking[connection] && handshakeStartedAt[connection] == startedAt
            if current, now - startedAt < limit { break }
            _ = handshakeDeadlines.popFirst()
            if current { pool.abandonHandshake(connection, cause: "handshake timed out") }
        }
    }

    private func handshakeEnded(_ connection: Int) {
        guard handshaking[connection] else { return }
        handshaking[connection] = false
        handshakes -= 1
    }

    private func finish(now: Int64) {
        phase = .finished
        let start = measureStart ?? (now, nil, nil)
        let elapsed = Double(now - start.time) / 1e9
        let server = ProcessUsage(pids: settings.serverPIDs)
        let client = ProcessUsage(pid: getpid())
        let stats = io.stats
        var serverFigures: ProcessFigures?
        if let server {
            let perConnection = rssBeforeConnecting.map { (server.rssMiB - $0) * 1024 / Double(max(1, stats.connected)) }
            serverFigures = ProcessFigures(
                cpuPercent: ProcessUsage.cpuPercent(from: start.server, to: server, over: elapsed),
                rssMiB: server.rssMiB, rssPerConnectionKiB: perConnection,
                runQueueWaitPercent: ProcessUsage.runQueueWaitPercent(from: start.server, to: server, over: elapsed))
        }
        report = LoadReport(
            scenario: scenario.name, target: scenario.target, settings: [:], measuredSeconds: elapsed,
            connections: scenario.connectionCount, connected: stats.connected,
            messagesIn: stats.messagesIn, messagesOut: stats.messagesOut,
            messagesInPerSecond: Double(stats.messagesIn) / max(elapsed, 1e-9), messagesOutPerSecond: Double(stats.messagesOut) / max(elapsed, 1e-9),
            figures: scenario.figures(measuredSeconds: elapsed).merging(bytesFigures(over: elapsed)) { $1 }.merging(readinessFigures) { $1 },
            latencies: stats.summaries,
            connectionErrors: stats.connectionErrors, errorReplies: stats.errorReplies,
            reconnects: stats.reconnects, server: serverFigures,
            client: client.map {
                ProcessFigures(
                    cpuPercent: ProcessUsage.cpuPercent(from: start.client, to: $0, over: elapsed), rssMiB: $0.rssMiB,
                    runQueueWaitPercent: ProcessUsage.runQueueWaitPercent(from: start.client, to: $0, over: elapsed))
            },
            timeline: stats.timeline)
        pool.stop()
    }

    /// `ready_seconds`: from the first connection until all were ready (subscribed);
    /// `ready_per_second`: connections made ready per second over that time.
    private var readinessFigures: [String: Double] {
        guard let readiness else { return [:] }
        return ["ready_seconds": readiness.seconds, "ready_per_second": Double(readiness.ready) / max(readiness.seconds, 1e-9)]
    }

    /// Received bytes per client-hour of each kind, on the wire (`wire_bytes_per_<kind>_hour`)
    /// and as inflated messages (`message_bytes_per_<kind>_hour`), over the connections
    /// open at the end (one that reconnected counts from its new socket).
    private func bytesFigures(over seconds: Double) -> [String: Double] {
        var wire: [String: UInt64] = [:]
        var messages: [String: UInt64] = [:]
        var clients: [String: Int] = [:]
        for connection in wireBytesAtStart.indices where isOpen[connection] {
            let group = scenario.bytesGroup(of: connection)
            let now = pool.receivedBytes(connection)
            wire[group, default: 0] += now >= wireBytesAtStart[connection] ? now - wireBytesAtStart[connection] : now
            messages[group, default: 0] += messageBytes[connection]
            clients[group, default: 0] += 1
        }
        var figures: [String: Double] = [:]
        let hours = max(seconds, 1e-9) / 3600
        for (group, count) in clients {
            figures["wire_bytes_per_\(group)_hour"] = Double(wire[group] ?? 0) / Double(count) / hours
            figures["message_bytes_per_\(group)_hour"] = Double(messages[group] ?? 0) / Double(count) / hours
        }
        return figures
    }

    private func printProgress(_ sample: TimelineSample) {
        let label =
            switch phase {
            case .connecting: "connecting"
            case .warmingUp: "warming up"
            case .measuring, .finished: "measuring"
            }
        print(
            String(
                format: "[%4ds %@] connected %d, ready %d, handshaking %d, waiting %d, in %d/s, out %d/s, %@ p99 %.1f ms (so far %.1f ms), errors %d",
                sample.second, label, sample.connected, scenario.readyCount, handshakes, openQueue.count, sample.messagesIn,
                sample.messagesOut, scenario.mainLatency, sample.p99, io.stats.mainP99, sample.errors))
        fflush(nil)
    }

    private func seconds(_ nanoseconds: Int64) -> String { String(format: "%.1f", Double(nanoseconds) / 1e9) }
}
