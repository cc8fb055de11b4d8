import Foundation
import GondolaHub
import GondolaLoad
import GondolaProtocol
import GondolaTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// gondola-load's scenarios against a real server over real sockets (libwebsockets on the
/// client side). The load generator runs as its own process, as it does in the benchmarks:
/// libwebsockets closes its sockets through libuv's deferred handle closes, and a descriptor
/// number it lets go of may already belong to a socket of the server's event loops when
/// libuv acts on it, so the two must not share a process. One scenario runs at a time, so
/// that the load generators do not starve the rest of the suite of the machine's cores.
@Suite(.serialized) struct LoadScenarioTests {
    static let resort = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../resorts/demo.geojson").path

    /// gondola-load, built beside this test bundle.
    static let loadCommand = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        .appendingPathComponent("gondola-load").path

    /// Runs gondola-load's `scenario` subcommand quietly against `server` with `arguments`:
    /// ready within 30 s, then `warmUp`, then `duration` measured; answers its JSON report.
    static func run(
        _ scenario: String, _ arguments: [String], on server: RunningServer, for duration: Duration, warmUp: Duration,
        compression: Bool = false
    ) async throws -> LoadReport {
        let load = try LoadRun(scenario, arguments, port: server.port, for: duration, warmUp: warmUp, compression: compression)
        return try await load.report()
    }

    /// One gondola-load process: started with the run's options, its JSON report read when it ends.
    struct LoadRun {
        let scenario: String
        let folder: String
        let pid: pid_t
        let limit: Duration

        init(
            _ scenario: String, _ arguments: [String], port: Int, for duration: Duration, warmUp: Duration, compression: Bool = false,
            readyTimeout: String = "30s"
        ) throws {
            self.scenario = scenario
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-load-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let command =
                [loadCommand, scenario, "--url", "ws://127.0.0.1:\(port)/connection/websocket"] + arguments + [
                    "--duration", "\(duration.components.seconds)s", "--warm-up", "\(warmUp.components.seconds)s", "--ready-timeout", readyTimeout,
                    "--quiet", "--json", folder + "/report.json",
                ] + (compression ? ["--compression"] : [])
            pid = try TestProcess.spawn(command, output: folder + "/output.txt", errors: folder + "/output.txt")
            limit = duration + warmUp + .seconds(90)
        }

        /// Waits for the process to end and answers its report.
        func report() async throws -> LoadReport {
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let status = try await TestProcess.exit(of: pid, within: limit)
            guard status == 0, let report = FileManager.default.contents(atPath: folder + "/report.json") else {
                let output = String(decoding: FileManager.default.contents(atPath: folder + "/output.txt") ?? Data(), as: UTF8.self)
                throw HarnessError("gondola-load \(scenario) ended with status \(status): \(output)")
            }
            return try JSONDecoder().decode(LoadReport.self, from: report)
        }
    }

    /// The options every gondola-load run against the test server takes.
    static var serverKeys: [String] { ["--secret", RunningServer.secret] }
    static var apiKey: [String] { ["--api-key", RunningServer.apiKey] }

    @Test(arguments: ProtocolEncoding.allCases)
    func fiftyTravellersForTenSeconds(_ encoding: ProtocolEncoding) async throws {
        let server = try await startTravelServer()
        let report = try await Self.run(
            "travellers",
            Self.serverKeys + Self.apiKey + [
                "--travellers", "50", "--trips", "2", "--user-prefix", "lt", "--resort", Self.resort, "--encoding", encoding.rawValue,
                "--chat-share", "0.2", "--chat-interval", "2s", "--rsvp-share", "0.3", "--rsvp-interval", "2s",
            ], on: server, for: .seconds(10), warmUp: .seconds(3))

        #expect(report.connected == 52)
        #expect(
            report.connectionErrors.isEmpty && report.errorReplies.isEmpty && report.reconnects == 0,
            "\(report.connectionErrors) \(report.errorReplies)")
        // 50 travellers at 1/s for 10 s, every update answered.
        let updates = try #require(report.figures["location_updates_per_second"])
        #expect(updates > 45 && updates < 55)
        let acks = report.latencies["ack location.update"]?.count ?? 0
        #expect(acks > 450 && acks < 560)
        // Every update shows up in the host's locations frames (and nearby frames of travellers within 500 m).
        #expect((report.latencies["location"]?.count ?? 0) >= acks * 9 / 10)
        // Each chat message reaches the 25 travellers and the host of its trip.
        let sends = report.latencies["ack chat.send"]?.count ?? 0
        let deliveries = report.latencies["chat"]?.count ?? 0
        #expect(sends > 0)
        #expect(deliveries >= sends * 26 * 8 / 10 && deliveries <= (sends + 20) * 26, "\(sends) sends, \(deliveries) deliveries")
        // The hosts created their trip's event and the responders answered it.
        #expect((report.latencies["ack event.create"]?.count ?? 0) == 0, "events are created during warm-up")
        #expect((report.latencies["ack event.rsvp"]?.count ?? 0) > 0)
        #expect(report.timeline.count >= 13)
        try await server.stop()
    }

    /// The same travellers with and without fossil deltas and permessage-deflate: with both,
    /// every frame is rebuilt from its delta (a frame that cannot be is an error reply), the
    /// same latencies are measured, and fewer bytes travel than the messages hold. Both
    /// encodings without context takeover (the default), JSON with it as well.
    @Test(arguments: [(ProtocolEncoding.json, false), (.protobuf, false), (.json, true)])
    func travellersWithDeltasAndCompressionRebuildEveryFrame(_ encoding: ProtocolEncoding, contextTakeover: Bool) async throws {
        // libwebsockets' client needs every message of a compressed connection compressed.
        let server = try await startTravelServer {
            $0.webSocketCompression = true
            $0.webSocketCompressionMinBytes = 0
            $0.webSocketCompressionContextTakeover = contextTakeover
        }
        var reports: [LoadReport] = []
        for saving in [false, true] {
            let report = try await Self.run(
                "travellers",
                Self.serverKeys + Self.apiKey + [
                    "--travellers", "30", "--trips", "1", "--user-prefix", "lb\(saving)\(encoding.rawValue)", "--resort", Self.resort,
                    "--encoding", encoding.rawValue, "--chat-share", "0", "--rsvp-share", "0",
                ] + (saving ? ["--delta"] : []), on: server, for: .seconds(6), warmUp: .seconds(2), compression: saving)
            #expect(report.connected == 31)
            #expect(
                report.connectionErrors.isEmpty && report.errorReplies.isEmpty && report.reconnects == 0,
                "\(report.connectionErrors) \(report.errorReplies)")
            let acks = report.latencies["ack location.update"]?.count ?? 0
            #expect((report.latencies["location"]?.count ?? 0) >= acks * 9 / 10, "every update is seen in a rebuilt frame")
            reports.append(report)
        }
        let (plain, saving) = (reports[0], reports[1])
        let plainWire = try #require(plain.figures["wire_bytes_per_traveller_hour"])
        let plainMessages = try #require(plain.figures["message_bytes_per_traveller_hour"])
        let savingWire = try #require(saving.figures["wire_bytes_per_traveller_hour"])
        let savingMessages = try #require(saving.figures["message_bytes_per_traveller_hour"])
        // Without compression the wire carries the messages plus WebSocket framing; with it, less than they hold.
        #expect(plainWire > plainMessages && savingWire < savingMessages, "\(plainWire) \(plainMessages) \(savingWire) \(savingMessages)")
        // Each frame compressed on its own saves less than frames compressed with their predecessors as context.
        let bound = contextTakeover ? 0.5 : 0.9
        #expect(savingWire < plainWire * bound, "deltas and deflate: \(savingWire) bytes per traveller-hour against \(plainWire)")
        #expect(saving.figures["wire_bytes_per_host_hour"] != nil)
        try await server.stop()
    }

    @Test(arguments: [ChatMode.group, .direct], ProtocolEncoding.allCases)
    func chatSendersAreAnsweredAndEveryMemberGetsEachMessage(_ mode: ChatMode, _ encoding: ProtocolEncoding) async throws {
        let server = try await startTravelServer()
        // 20 clients in trips of 10: two group chats of 10, or ten 1:1 chats.
        let report = try await Self.run(
            "chat",
            Self.serverKeys + Self.apiKey + [
                "--mode", mode.rawValue, "--clients", "20", "--group-size", "10", "--rate", "40/s", "--user-prefix",
                "lc\(mode.rawValue)\(encoding.rawValue)",
                "--encoding", encoding.rawValue,
            ], on: server, for: .seconds(4), warmUp: .seconds(1))

        #expect(report.connected == 20)
        #expect(report.connectionErrors.isEmpty && report.errorReplies.isEmpty, "\(report.connectionErrors) \(report.errorReplies)")
        let sent = try #require(report.figures["sent_per_second"])
        #expect(sent > 35 && sent < 45)
        let acks = report.latencies["ack chat.send"]?.count ?? 0
        #expect(acks >= 140 && acks <= 180)
        // Each message reaches every connected member of its chat, the sender included.
        let members: UInt64 = mode == .group ? 10 : 2
        let deliveries = report.latencies["chat"]?.count ?? 0
        #expect(deliveries >= acks * members * 9 / 10 && deliveries <= (acks + 10) * members, "\(acks) acks, \(deliveries) deliveries")
        try await server.stop()
    }

    @Test(arguments: ProtocolEncoding.allCases)
    func fanoutDeliversEveryPublicationToEverySubscriber(_ encoding: ProtocolEncoding) async throws {
        // The channel is in the default namespace, opened to subscribing and publishing.
        let server = try await startTravelServer { configuration in
            var open = NamespaceOptions(name: "")
            open.allowSubscribeForClient = true
            open.allowPublishForSubscriber = true
            configuration.hub.namespaces[""] = open
        }
        let report = try await Self.run(
            "fanout",
            Self.serverKeys + [
                "--subscribers", "20", "--rate", "50/s", "--size", "64", "--channel", "fanout-\(encoding.rawValue)", "--encoding", encoding.rawValue,
            ], on: server, for: .seconds(3), warmUp: .seconds(1))
        #expect(report.connected == 21)
        #expect(report.connectionErrors.isEmpty && report.errorReplies.isEmpty, "\(report.connectionErrors) \(report.errorReplies)")
        // Deliveries counted in the window may belong to publications made just before it,
        // so the share is near 1, not exactly 1, on a busy machine.
        let share = try #require(report.figures["delivered_share"])
        #expect(share > 0.8 && share < 1.2, "\(share)")
        // Every delivery is timed: as many latencies as deliveries of the publications made
        // in the window (however many a busy machine managed to make).
        let published = (report.figures["published_per_second"] ?? 0) * 3
        #expect(published > 0 && Double(report.latencies["delivery"]?.count ?? 0) >= published * 20 * 0.8)
        try await server.stop()
    }

    /// A reconnect storm through a restart of the hub on the same port and database: every
    /// client comes back, is told its durable stream was recovered, and no publication the
    /// server API acknowledged is missing from any client's stream.
    @Test func aStormThroughARestartLosesNoAcknowledgedPublication() async throws {
        let seed = UInt64.random(in: 1...UInt64(UInt32.max))
        var configuration = RunningServer.configuration()
        var storm = NamespaceOptions(name: "storm")
        storm.historySize = 1000
        storm.historyTTL = .seconds(600)
        storm.historyDurable = true
        storm.allowSubscribeForClient = true
        configuration.hub.namespaces["storm"] = storm
        let first = try await RunningServer.start(configuration)
        let load = try LoadRun(
            "storm",
            Self.serverKeys + Self.apiKey + [
                "--clients", "200", "--channels", "10", "--publish-rate", "40/s", "--publishers", "2", "--settle", "8s",
                "--reconnect-min", "100ms", "--reconnect-max", "1s", "--seed", "\(seed)",
            ], port: first.port, for: .seconds(24), warmUp: .seconds(1))
        // The outage comes once publications flow: channel storm:0 has a few.
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let (_, answer) = try await first.post("/api/history", body: #"{"channel": "storm:0", "limit": 0}"#)
            if case let .int(offset)? = answer["result"]?["offset"], offset >= 10 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        try await first.stop()
        configuration.listenPort = first.port
        let second = try await RunningServer.start(configuration)
        let report = try await load.report()
        try await second.stop()

        let figures = report.figures
        #expect(figures["clients_dropped"] == 200, "seed \(seed)")
        #expect(figures["clients_not_back"] == 0 && figures["back_100_seconds"]! >= 0, "seed \(seed)")
        #expect(figures["told_recovered"]! >= 200 && figures["told_not_recovered"] == 0, "seed \(seed): \(figures)")
        #expect(figures["epoch_changes"] == 0, "the durable streams kept their epoch, seed \(seed)")
        #expect(figures["acknowledged_publications"]! > 100, "seed \(seed)")
        #expect(figures["missing_acknowledged"] == 0 && figures["skipped_after_told_not_recovered"] == 0, "seed \(seed): \(figures)")
        #expect(report.errorReplies.isEmpty, "seed \(seed): \(report.errorReplies)")
    }

    /// A server that takes the TCP connection and never answers the upgrade (as a restarting hub's
    /// listener can): the generator gives each handshake up after `--handshake-timeout` and
    /// reconnects, its own deadline rather than a libwebsockets timer, so no client waits for good.
    @Test func aHandshakeTheServerNeverAnswersIsGivenUpAndTriedAgain() async throws {
        let listener = try SilentListener()
        let load = try LoadRun(
            "fanout", ["--target", "nats", "--subscribers", "3", "--handshake-timeout", "300ms"], port: listener.port, for: .seconds(3),
            warmUp: .seconds(0), readyTimeout: "2s")
        let report = try await load.report()
        // Four connections (three subscribers, one publisher), each given up and tried again once a second or so.
        #expect(report.connected == 0)
        #expect((report.connectionErrors["handshake timed out"] ?? 0) >= 4, "\(report.connectionErrors)")
        #expect(report.reconnects >= 4)
    }

    /// A server that reads the upgrade request and resets the connection without an answer (as
    /// a hub that exits holds clients in its listener's queue): libwebsockets reports such a
    /// connection neither as a connection error nor as a WebSocket close, since it never became
    /// one, so the generator must learn of it from the connection's end (`WSI_DESTROY`) and
    /// reconnect at once, long before its handshake deadline.
    @Test func aConnectionResetBeforeTheUpgradeIsAnsweredIsTriedAgain() async throws {
        let listener = try ResettingListener()
        let load = try LoadRun(
            "fanout", ["--target", "nats", "--subscribers", "3", "--handshake-timeout", "60s"], port: listener.port, for: .seconds(3),
            warmUp: .seconds(0), readyTimeout: "2s")
        let report = try await load.report()
        #expect(report.connected == 0)
        #expect(listener.requestsReset >= 8, "each of the four connections reset at least twice")
        #expect((report.connectionErrors["connection lost during handshake"] ?? 0) >= 8, "\(report.connectionErrors)")
        #expect(report.connectionErrors["handshake timed out"] == nil, "\(report.connectionErrors)")
        #expect(report.reconnects >= 8)
    }

    /// Bad options of the storm, the chart and the connection settings are refused before any
    /// connection, with a message naming the option; so is an open-file limit too low for the run.
    @Test func badOptionsAreRefusedNamingTheOption() throws {
        let nats = ["fanout", "--target", "nats", "--url", "ws://127.0.0.1:9/"]
        let cases: [(arguments: [String], limit: Int?, names: String)] = [
            (["storm", "--api-key", "k", "--clients", "0"], nil, "--clients must be 1...200000, got 0"),
            (["storm", "--api-key", "k", "--clients", "10", "--channels", "11"], nil, "--channels must be 1...10"),
            (["storm", "--api-key", "k", "--reconnect-min", "2s", "--reconnect-max", "1s"], nil, "--reconnect-min"),
            (["storm", "--api-key", "k", "--publish-rate", "fast"], nil, "--publish-rate"),
            (nats + ["--source-addresses", "300"], nil, "--source-addresses must be 0...254, got 300"),
            (nats + ["--max-handshakes", "0"], nil, "--max-handshakes must be 1...100000, got 0"),
            (nats + ["--handshake-timeout", "1ms"], nil, "--handshake-timeout must be 100ms...10m, got '1ms'"),
            (
                ["chart", "--csv", "/nonexistent/minutes.csv", "--x", "minute", "--panel", "a=b", "--title", "t", "--svg", "/dev/null"], nil,
                "--csv /nonexistent/minutes.csv"
            ),
            (nats + ["--subscribers", "1000"], 512, "the open-file limit (512) is below the 1001 connections"),
        ]
        for (arguments, limit, names) in cases {
            let command = ([Self.loadCommand] + arguments).map { "'\($0)'" }.joined(separator: " ")
            let shell = (limit.map { "ulimit -S -n \($0) && ulimit -H -n \($0) && " } ?? "") + "exec " + command + " 2>&1"
            let (status, output) = try TestProcess.run(["/bin/sh", "-c", shell])
            #expect(status != 0 && output.contains(names), "\(arguments): status \(status), \(output)")
        }
    }
}

/// A loopback listener that never accepts: the kernel completes clients' TCP handshakes (up to
/// its backlog) and nothing answers what they send.
final class SilentListener {
    let socket: Int32
    let port: Int

    init() throws { (socket, port) = try listenOnLoopback() }

    deinit { close(socket) }
}

/// A loopback listener that accepts each connection, reads its HTTP request to the blank line,
/// and resets it (`SO_LINGER` of 0) without answering; `requestsReset` counts them.
final class ResettingListener {
    let socket: Int32
    let port: Int
    private let resets = Tally()

    var requestsReset: Int { resets.count }

    init() throws {
        let (socket, port) = try listenOnLoopback()
        self.socket = socket
        self.port = port
        let resets = resets
        // Blocking accepts on a thread of its own, which holds only the socket and the tally:
        // `shutdown` in deinit ends them.
        Thread {
            while true {
                let connection = accept(socket, nil, nil)
                if connection < 0 { return }
                if ResettingListener.readRequest(connection) { resets.add() }
                var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                setsockopt(connection, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
                close(connection)
            }
        }.start()
    }

    /// A count shared with the accepting thread.
    private final class Tally: Sendable {
        private let value = Mutex(0)
        var count: Int { value.withLock { $0 } }
        func add() { value.withLock { $0 += 1 } }
    }

    /// Reads until the request's blank line: true once it came, false if the peer left first
    /// or sent 64 KiB without one.
    private static func readRequest(_ connection: Int32) -> Bool {
        var request = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while request.count < 65536 {
            let read = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if read <= 0 { return false }
            request += buffer[..<read]
            if request.suffix(4) == [13, 10, 13, 10] { return true }
        }
        return false
    }

    deinit {
        Glibc.shutdown(socket, Int32(SHUT_RDWR))
        close(socket)
    }
}

/// A TCP socket listening on 127.0.0.1 on a port the kernel picks, with a backlog of 64.
private func listenOnLoopback() throws -> (socket: Int32, port: Int) {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
    }
    guard bound, listen(socket, 64) == 0 else {
        close(socket)
        throw HarnessError("cannot listen: \(errno)")
    }
    return (socket, Int(UInt16(bigEndian: address.sin_port)))
}
