import ArgumentParser
import Foundation
import GondolaBenchSupport
import GondolaHub
import GondolaProtocol
import HummingbirdWSClient
import Logging
import Synchronization

/// Chat load: clients in group chats (the chats of trips of `--group-size`) or in
/// 1:1 chats, each sending `chat.send` at its share of `--rate` while subscribed to
/// its chat. Prints the acknowledged-send latency (send to reply: the message is in
/// SQLite by then), the delivery latency (send to arrival at every member) and the
/// stored messages per second.
@main
struct ChatBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "gondola-bench-chat")

    enum Mode: String, ExpressibleByArgument, CaseIterable { case group, direct }

    @Option(help: "Base URL of the hub, e.g. http://127.0.0.1:8000.") var server: String
    @Option(help: "The hub's token secret, to mint tokens.") var secret: String
    @Option(name: .customLong("api-key"), help: "The hub's server API key.") var apiKey: String
    @Option(help: "group (chats of --group-size) or direct (1:1 chats).") var mode: Mode = .group
    @Option(help: "Number of clients.") var clients: Int = 1000
    @Option(name: .customLong("group-size"), help: "Members per group chat.") var groupSize: Int = 10
    @Option(help: "Messages per second, all clients together.") var rate: Int = 5000
    @Option(help: "Seconds measured after a 5 s warm-up.") var seconds: Int = 60
    @Option(name: .customLong("server-pid"), help: "Process id of the hub, for its CPU.") var serverPID: Int32?
    @Option(help: "Markdown file the result row is appended to.") var markdown: String?

    func validate() throws {
        guard (2...5000).contains(clients) else { throw ValidationError("--clients must be 2...5000, got \(clients)") }
        guard (2...100).contains(groupSize) else { throw ValidationError("--group-size must be 2...100, got \(groupSize)") }
        guard (1...20_000).contains(rate) else { throw ValidationError("--rate must be 1...20000, got \(rate)") }
        guard (1...300).contains(seconds) else { throw ValidationError("--seconds must be 1...300, got \(seconds)") }
        guard Double(rate) / Double(clients) <= 50 else { throw ValidationError("--rate per client must be at most 50/s") }
    }

    func run() async throws {
        let mode = self.mode, clients = self.clients
        let tokens = try await ConnectionTokens(secret: secret)
        let api = ServerAPIClient(base: server, key: apiKey)
        let size = mode == .group ? groupSize : 10
        let trips = (clients + size - 1) / size
        print("creating \(trips) trips of \(size)…")
        // Trip-mates are friends: the trips' chats are the group chats, and the 1:1 chats pair trip-mates.
        let tripIDs = try await api.createTrips(trips) { trip in
            let members = (trip * size..<min(clients, (trip + 1) * size)).map { "bc\($0)" }
            return (members[0], Array(members.dropFirst()))
        }
        let stats = ChatStats()
        let socket = server.replacingOccurrences(of: "http", with: "ws", options: .anchored) + "/connection/websocket"
        let perClient = Duration.nanoseconds(Int64(1e9 * Double(clients) / Double(rate)))
        let logger = { var logger = Logger(label: "bench"); logger.logLevel = .critical; return logger }()
        let tasks = Task {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<clients {
                    if index % 200 == 199 { try? await Task.sleep(for: .milliseconds(50)) }
                    let user = "bc\(index)"
                    guard let token = try? await tokens.mint(user: user) else { continue }
                    let trip = tripIDs[index / size]
                    let partner = index % 2 == 0 ? index + 1 : index - 1
                    group.addTask {
                        await ChatClient.run(url: socket, token: token, user: user, trip: trip, directWith: mode == .direct && partner < clients ? "bc\(partner)" : nil,
                                             period: perClient, stats: stats, logger: logger)
                    }
                }
            }
        }
        let ready = try await waitUntil(stats.ready, reaches: clients, within: .seconds(120))
        print("ready: \(ready)/\(clients) clients")
        stats.sending.store(true, ordering: .relaxed)
        try await Task.sleep(for: .seconds(5))
        stats.reset()
        let before = serverPID.flatMap(ProcessUsage.init(pid:))
        let started = ContinuousClock.now
        try await Task.sleep(for: .seconds(seconds))
        let elapsed = Double((ContinuousClock.now - started).nanoseconds) / 1e9
        let after = serverPID.flatMap(ProcessUsage.init(pid:))
        stats.stop.store(true, ordering: .relaxed)
        tasks.cancel()
        let cpu = ProcessUsage.cpuPercent(from: before, to: after, over: elapsed)
        let acked = Double(stats.acked.load(ordering: .relaxed)) / elapsed
        let delivered = Double(stats.delivered.load(ordering: .relaxed)) / elapsed
        let errors = stats.errors.load(ordering: .relaxed) + stats.disconnects.load(ordering: .relaxed)
        let line = String(format: "%@ chats, %d clients: sent %.0f/s, acked (stored) %.0f/s, delivered %.0f/s, ack p50 %.2f ms p99 %.2f ms, delivery p99 %.2f ms, errors %d, server CPU %.0f%%",
                          mode.rawValue, clients, Double(stats.sent.load(ordering: .relaxed)) / elapsed, acked, delivered,
                          stats.ack.milliseconds(at: 50), stats.ack.milliseconds(at: 99), stats.delivery.milliseconds(at: 99), errors, cpu)
        print(line)
        if let markdown {
            MarkdownRows.append([String(format: "| %@ | %d | %d | %.0f | %.0f | %.2f | %.2f | %.2f | %d | %.0f%% |", mode == .group ? "group of \(size)" : "1:1",
                                        clients, rate, acked, delivered, stats.ack.milliseconds(at: 50), stats.ack.milliseconds(at: 99),
                                        stats.delivery.milliseconds(at: 99), errors, cpu)], to: markdown)
        }
        Foundation.exit(0)
    }
}

/// Counters shared by every client.
final class ChatStats: Sendable {
    let ready = Atomic<Int>(0)
    let sending = Atomic<Bool>(false)
    let stop = Atomic<Bool>(false)
    let sent = Atomic<Int>(0)
    let acked = Atomic<Int>(0)
    let delivered = Atomic<Int>(0)
    let errors = Atomic<Int>(0)
    let disconnects = Atomic<Int>(0)
    let ack = LatencyRecorder()
    let delivery = LatencyRecorder()

    func reset() {
        sent.store(0, ordering: .relaxed)
        acked.store(0, ordering: .relaxed)
        delivered.store(0, ordering: .relaxed)
        errors.store(0, ordering: .relaxed)
        ack.reset()
        delivery.reset()
    }
}

/// One simulated chat user.
enum ChatClient {
    static let sentMarker = Array("sent=".utf8)

    static func nowNanoseconds() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1e9) }

    static func run(url: String, token: String, user: String, trip: String, directWith partner: String?, period: Duration,
                    stats: ChatStats, logger: Logger) async {
        let pending = PendingSends()
        _ = try? await WebSocketClient.connect(url: url, configuration: .init(maxFrameSize: 1 << 22), logger: logger) { inbound, outbound, _ in
            try await outbound.write(.text(Command(id: 1, .connect(ConnectRequest(token: token))).json.text))
            var chat = "trip-\(trip)"
            var sender: Task<Void, Error>?
            defer { sender?.cancel() }
            var subscribed = false
            if partner == nil {
                try await outbound.write(.text(Command(id: 2, .subscribe(SubscribeRequest(channel: "chat:\(chat)"))).json.text))
            } else if let partner {
                try await outbound.write(.text(Command(id: 2, .rpc(method: "chat.create", data: RawJSON(["members": [.string(partner)]]))).json.text))
            }
            for try await frame in inbound.messages(maxSize: 1 << 24) {
                guard case let .text(text) = frame else { continue }
                for line in text.split(separator: "\n") {
                    if line == "{}" { try await outbound.write(.text("{}")); continue }
                    guard let message = try? ServerMessage(json: JSONParser.parse(Array(line.utf8))) else { continue }
                    switch message {
                    case let .reply(reply):
                        if case .error = reply.body, reply.id > 2 { stats.errors.add(1, ordering: .relaxed) }
                        if reply.id == 2, case let .rpc(data) = reply.body, case let .string(id)? = data?.value["chat"]?["id"] {
                            chat = id
                            try await outbound.write(.text(Command(id: 3, .subscribe(SubscribeRequest(channel: "chat:\(chat)"))).json.text))
                        } else if (reply.id == 2 && partner == nil) || reply.id == 3, case .subscribe = reply.body, !subscribed {
                            subscribed = true
                            stats.ready.add(1, ordering: .relaxed)
                            let target = chat
                            sender = Task { try await send(to: target, outbound: outbound, period: period, pending: pending, stats: stats) }
                        } else if let started = pending.take(reply.id) {
                            stats.acked.add(1, ordering: .relaxed)
                            stats.ack.record([nowNanoseconds() &- started])
                        }
                    case let .push(push):
                        guard case let .publication(publication) = push.body,
                              case let .string(text)? = publication.data.value["text"] else { continue }
                        stats.delivered.add(1, ordering: .relaxed)
                        if let sentAt = integers(after: sentMarker, in: Array(text.utf8)).first {
                            stats.delivery.record([nowNanoseconds() &- UInt64(sentAt)])
                        }
                    default:
                        continue
                    }
                }
                if stats.stop.load(ordering: .relaxed) { break }
            }
        }
        if !stats.stop.load(ordering: .relaxed) { stats.disconnects.add(1, ordering: .relaxed) }
    }

    /// Sends one message per `period` (after a random offset) once sending starts.
    static func send(to chat: String, outbound: WebSocketOutboundWriter, period: Duration, pending: PendingSends, stats: ChatStats) async throws {
        while !stats.sending.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(20)) }
        try await Task.sleep(for: .nanoseconds(Int64.random(in: 0..<max(1, period.nanoseconds))))
        var id: UInt32 = 10
        var next = ContinuousClock.now
        while !stats.stop.load(ordering: .relaxed) {
            let started = nowNanoseconds()
            pending.add(id, at: started)
            let data: JSON = ["chat": .string(chat), "text": .string("hello sent=\(started)"), "client_message_id": .string("m\(id)")]
            try await outbound.write(.text(Command(id: id, .rpc(method: "chat.send", data: RawJSON(data))).json.text))
            stats.sent.add(1, ordering: .relaxed)
            id &+= 1
            next += period
            try await Task.sleep(until: next)
        }
    }
}

/// Send times of the commands awaiting their reply, by command id.
final class PendingSends: Sendable {
    private let times = Mutex<[UInt32: UInt64]>([:])

    func add(_ id: UInt32, at time: UInt64) { times.withLock { $0[id] = time } }

    func take(_ id: UInt32) -> UInt64? { times.withLock { $0.removeValue(forKey: id) } }
}
