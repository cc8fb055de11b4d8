import ArgumentParser
import Foundation
import GondolaGeo
import GondolaHub
import GondolaLoad
import GondolaProtocol

/// `gondola-load`: load scenarios on libwebsockets against Gondola (travellers,
/// chat, fan-out) and, for comparison, NATS and MQTT brokers (fan-out).
@main
struct GondolaLoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gondola-load",
        abstract: "Load generator for Gondola (and NATS/MQTT for comparison) on one libwebsockets event loop.",
        subcommands: [Travellers.self, Chat.self, Fanout.self, Storm.self, Chart.self]
    )
}

/// The protocol encoding gondola's connections speak.
struct EncodingOption: ParsableArguments {
    @Option(help: "gondola's protocol encoding: json or protobuf.") var encoding: String = "json"

    func chosen() throws -> ProtocolEncoding { try LoadArguments.choice(encoding, option: "--encoding") }
}

/// Options every scenario shares: timing, output files and the server to watch.
struct RunOptions: ParsableArguments {
    @Option(help: "Measured period, e.g. 120s or 2m.") var duration: String = "60s"
    @Option(name: .customLong("warm-up"), help: "Load before measuring, once every connection is ready.") var warmUp: String = "5s"
    @Option(help: "Connections opened per second while ramping up.") var ramp: Double = 1000
    @Option(name: .customLong("ready-timeout"), help: "Longest wait for every connection to be ready.") var readyTimeout: String = "120s"
    @Option(name: .customLong("server-pid"), help: "Process id of the server, for its CPU and memory; repeat it for the nodes of a cluster (summed).")
    var serverPID: [Int32] = []
    @Option(help: "Write the report as JSON to this file.") var json: String?
    @Option(help: "Write the per-second timeline as CSV to this file.") var csv: String?
    @Option(help: "Write a latency and throughput chart (SVG) to this file.") var svg: String?
    @Flag(help: "No progress line every second.") var quiet = false
    @Flag(
        help:
            "Offer permessage-deflate on every connection (used when the server enables it; the server must compress every message — websocket_compression_min_bytes 0 — as libwebsockets' client spins on an uncompressed one)."
    )
    var compression = false
    @Option(
        name: .customLong("source-addresses"),
        help:
            "Open the connections from this many loopback addresses, 127.0.0.1 and up (connection i from the (i mod N)th), for servers on loopback: each address has its own ephemeral ports, about 28,000 with Linux's default range."
    )
    var sourceAddresses: Int = 0
    @Option(
        name: .customLong("max-handshakes"),
        help:
            "Most connections with a handshake under way at once; more wait their turn (libwebsockets' cost per pending handshake grows with their number)."
    )
    var maxHandshakes: Int = 512
    @Option(
        name: .customLong("handshake-timeout"),
        help: "Longest a connection's handshake may take before it is given up and the connection reconnects, as an SDK's connect timeout."
    )
    var handshakeTimeout: String = "10s"

    func settings() throws -> LoadSettings {
        var settings = LoadSettings()
        settings.duration = try LoadArguments.duration(duration, option: "--duration")
        settings.warmUp = try LoadArguments.duration(warmUp, option: "--warm-up")
        settings.readyTimeout = try LoadArguments.duration(readyTimeout, option: "--ready-timeout")
        guard settings.duration > .zero, settings.duration <= .seconds(3600) else {
            throw LoadError("--duration must be more than 0 and at most 1h, got '\(duration)'")
        }
        guard settings.warmUp <= .seconds(600) else { throw LoadError("--warm-up must be at most 10m, got '\(warmUp)'") }
        guard settings.readyTimeout <= .seconds(1800) else { throw LoadError("--ready-timeout must be at most 30m, got '\(readyTimeout)'") }
        guard ramp > 0, ramp <= 100_000 else { throw LoadError("--ramp must be in (0, 100000] connections per second, got \(ramp)") }
        settings.rampPerSecond = ramp
        settings.serverPIDs = serverPID
        settings.progress = !quiet
        settings.offerCompression = compression
        guard (0...254).contains(sourceAddresses) else { throw LoadError("--source-addresses must be 0...254, got \(sourceAddresses)") }
        settings.sourceAddresses = (0..<sourceAddresses).map { "127.0.0.\($0 + 1)" }
        guard (1...100_000).contains(maxHandshakes) else { throw LoadError("--max-handshakes must be 1...100000, got \(maxHandshakes)") }
        settings.maxHandshakes = maxHandshakes
        settings.handshakeTimeout = try LoadArguments.duration(handshakeTimeout, option: "--handshake-timeout")
        guard settings.handshakeTimeout >= .milliseconds(100), settings.handshakeTimeout <= .seconds(600) else {
            throw LoadError("--handshake-timeout must be 100ms...10m, got '\(handshakeTimeout)'")
        }
        return settings
    }

    /// Runs `scenario` and prints and writes its report.
    func execute(_ scenario: LoadScenario, settings: LoadSettings, described: [String: String]) async throws {
        OpenFileLimit.raiseToHardLimit()
        let driver = try LoadDriver(scenario: scenario, settings: settings)
        var report = await driver.run()
        report.settings = described
        print(report.text)
        if let json { try report.json().write(to: URL(fileURLWithPath: json)) }
        if let csv { try report.csv.write(toFile: csv, atomically: true, encoding: .utf8) }
        if let svg { try SVGChart.render(report).write(toFile: svg, atomically: true, encoding: .utf8) }
    }
}

struct Travellers: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Travellers riding and skiing a resort (the demo one unless told): location updates, nearby and trip frames, chat and RSVP.")

    @Option(help: "WebSocket URL of the hub; repeat it for the nodes of a cluster (travellers are spread over them).")
    var url: [String] = ["ws://127.0.0.1:8000/connection/websocket"]
    @Option(help: "Number of travellers.") var travellers: Int = 1000
    @Option(help: "Number of trips (one host each).") var trips: Int = 10
    @Option(help: "Location updates per traveller, e.g. 1/s.") var rate: String = "1/s"
    @Option(help: "The hub's token secret (tokens are minted here); without it, dev login is used.") var secret: String?
    @Option(name: .customLong("api-key"), help: "The hub's server API key (trips are created through the server API).") var apiKey: String
    @Option(help: "The resort to move along: its id in --resorts (the trips are on it), or the path of its GeoJSON.") var resort: String = "demo"
    @Option(help: "The hub's resorts folder, where --resort ID is looked up.") var resorts: String = "resorts"
    @Option(name: .customLong("chat-share"), help: "Share of travellers who chat in their trip chat.") var chatShare: Double = 0.05
    @Option(name: .customLong("chat-interval"), help: "How often each chatting traveller sends.") var chatInterval: String = "10s"
    @Option(name: .customLong("rsvp-share"), help: "Share of travellers who answer their trip's event.") var rsvpShare: Double = 0.05
    @Option(name: .customLong("rsvp-interval"), help: "How often each answering traveller changes the answer.") var rsvpInterval: String = "30s"
    @Option(name: .customLong("user-prefix"), help: "Prefix of the simulated users' ids.") var userPrefix: String = "load"
    @Flag(help: "Subscribe to nearby and locations with fossil deltas and rebuild each frame from them.") var delta = false
    @OptionGroup var protocolEncoding: EncodingOption
    @OptionGroup var run: RunOptions

    func run() async throws {
        guard (1...50_000).contains(travellers) else { throw LoadError("--travellers must be 1...50000, got \(travellers)") }
        guard (1...travellers).contains(trips) else { throw LoadError("--trips must be 1...\(travellers) (at most one per traveller), got \(trips)") }
        var options = TravellerOptions()
        options.encoding = try protocolEncoding.chosen()
        options.delta = delta
        options.rate = try LoadArguments.rate(rate, option: "--rate")
        guard options.rate <= 10 else { throw LoadError("--rate must be at most 10/s, got '\(rate)'") }
        options.chatShare = try LoadArguments.share(chatShare, option: "--chat-share")
        options.rsvpShare = try LoadArguments.share(rsvpShare, option: "--rsvp-share")
        options.chatInterval = try LoadArguments.duration(chatInterval, option: "--chat-interval")
        options.rsvpInterval = try LoadArguments.duration(rsvpInterval, option: "--rsvp-interval")
        guard options.chatInterval >= .milliseconds(100) else { throw LoadError("--chat-interval must be at least 100ms, got '\(chatInterval)'") }
        guard options.rsvpInterval >= .milliseconds(100) else { throw LoadError("--rsvp-interval must be at least 100ms, got '\(rsvpInterval)'") }
        let settings = try run.settings()
        let addresses = try url.map(WebSocketURL.init)
        let address = addresses[0]
        let file = resort.hasSuffix(".geojson") ? resort : URL(fileURLWithPath: resorts).appendingPathComponent("\(resort).geojson").path
        let skiResort: SkiResort
        do {
            skiResort = try SkiResort(geoJSON: Data(contentsOf: URL(fileURLWithPath: file)))
        } catch {
            throw LoadError("--resort \(resort) (\(file)): \(error)")
        }
        let graph = skiResort.graph
        print("creating \(trips) trips on \(skiResort.name) and \(travellers + trips) tokens…")
        let cast = try await TravellerCast.prepare(
            travellers: travellers, trips: trips, prefix: userPrefix, resort: skiResort.id,
            api: ServerAPIClient(base: address.httpBase, key: apiKey),
            tokens: TokenSource(secret: secret, hub: address))
        let scenario = try TravellerScenario(urls: addresses, cast: cast, graph: graph, options: options)
        try await run.execute(
            scenario, settings: settings,
            described: [
                "travellers": "\(travellers)", "trips": "\(trips)", "rate": rate, "nodes": "\(addresses.count)", "chat_share": "\(chatShare)",
                "chat_interval": chatInterval, "rsvp_share": "\(rsvpShare)", "rsvp_interval": rsvpInterval, "duration": run.duration,
                "encoding": protocolEncoding.encoding, "delta": "\(delta)", "compression": "\(run.compression)", "resort": skiResort.id,
            ])
    }
}

struct Chat: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Chat senders in trip (group) chats or 1:1 chats: acknowledged-send and delivery latency.")

    @Option(help: "WebSocket URL of the hub.") var url: String = "ws://127.0.0.1:8000/connection/websocket"
    @Option(help: "group (each trip's chat) or direct (1:1 chats of trip-mates).") var mode: String = "group"
    @Option(help: "Number of chatting clients.") var clients: Int = 1000
    @Option(name: .customLong("group-size"), help: "Clients per trip (the members of a group chat, besides the trip's host).") var groupSize: Int = 10
    @Option(help: "Messages per second, all clients together, e.g. 5000/s.") var rate: String = "1000/s"
    @Option(help: "The hub's token secret (tokens are minted here); without it, dev login is used.") var secret: String?
    @Option(name: .customLong("api-key"), help: "The hub's server API key (trips are created through the server API).") var apiKey: String
    @Option(name: .customLong("user-prefix"), help: "Prefix of the simulated users' ids.") var userPrefix: String = "chat"
    @OptionGroup var protocolEncoding: EncodingOption
    @OptionGroup var run: RunOptions

    func run() async throws {
        let chatMode: ChatMode = try LoadArguments.choice(mode, option: "--mode")
        let encoding = try protocolEncoding.chosen()
        guard (2...20_000).contains(clients) else { throw LoadError("--clients must be 2...20000, got \(clients)") }
        guard (2...100).contains(groupSize) else { throw LoadError("--group-size must be 2...100, got \(groupSize)") }
        let perSecond = try LoadArguments.rate(rate, option: "--rate")
        guard perSecond / Double(clients) <= 50 else {
            throw LoadError("--rate must be at most 50/s per client, got '\(rate)' for \(clients) clients")
        }
        let settings = try run.settings()
        let address = try WebSocketURL(url)
        let trips = (clients + groupSize - 1) / groupSize
        print("creating \(trips) trips of \(groupSize) and their tokens…")
        let cast = try await TravellerCast.prepare(
            travellers: clients, trips: trips, prefix: userPrefix,
            api: ServerAPIClient(base: address.httpBase, key: apiKey),
            tokens: TokenSource(secret: secret, hub: address))
        let scenario = try ChatScenario(url: address, cast: cast, mode: chatMode, rate: perSecond, encoding: encoding)
        try await run.execute(
            scenario, settings: settings,
            described: [
                "mode": mode, "clients": "\(clients)", "group_size": "\(groupSize)", "rate": rate, "duration": run.duration,
                "encoding": protocolEncoding.encoding,
            ])
    }
}

struct Fanout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "N subscribers of one channel, subject or topic and publishers, against gondola, nats or mqtt.")

    @Option(help: "Server kind: gondola, nats or mqtt.") var target: String = "gondola"
    @Option(help: "WebSocket URL of the server; repeat it for the nodes of a gondola cluster (connections are spread over them).")
    var url: [String]
    @Option(help: "Number of subscribers.") var subscribers: Int = 1000
    @Option(help: "Number of publishers, each publishing an equal share of the rate.") var publishers: Int = 1
    @Flag(
        name: .customLong("publishers-unsubscribed"),
        help: "gondola only: publishers do not subscribe (the channel's namespace must have allow_publish_for_client).")
    var publishersUnsubscribed = false
    @Option(help: "Publications per second (e.g. 100/s), or 'max' to publish as fast as deliveries keep up.") var rate: String = "100/s"
    @Option(help: "With --rate max: publications allowed in flight (not yet delivered to every subscriber).") var window: Int = 4
    @Option(help: "Payload bytes per publication.") var size: Int = 128
    @Option(help: "Channel (gondola), subject (nats) or topic (mqtt).") var channel: String = "bench:fanout"
    @Option(help: "gondola only: the hub's token secret (tokens are minted here); without it, dev login is used.") var secret: String?
    @OptionGroup var protocolEncoding: EncodingOption
    @OptionGroup var run: RunOptions

    func run() async throws {
        let kind: FanoutTarget = try LoadArguments.choice(target, option: "--target")
        let encoding = try protocolEncoding.chosen()
        guard kind == .gondola || encoding == .json else { throw LoadError("--encoding applies to --target gondola only, got --target \(target)") }
        guard (1...200_000).contains(subscribers) else { throw LoadError("--subscribers must be 1...200000, got \(subscribers)") }
        guard (32...65_536).contains(size) else { throw LoadError("--size must be 32...65536 bytes, got \(size)") }
        let publishRate: PublishRate
        if rate == "max" {
            guard (1...1000).contains(window) else { throw LoadError("--window must be 1...1000, got \(window)") }
            publishRate = .saturate(window: window)
        } else {
            let perSecond = try LoadArguments.rate(rate, option: "--rate")
            guard perSecond <= 1_000_000 else { throw LoadError("--rate must be at most 1000000/s, got '\(rate)'") }
            publishRate = .fixed(perSecond)
        }
        guard (1...1000).contains(publishers) else { throw LoadError("--publishers must be 1...1000, got \(publishers)") }
        let settings = try run.settings()
        let addresses = try url.map(WebSocketURL.init)
        var tokens: [String] = []
        if kind == .gondola {
            tokens = try await TokenSource(secret: secret, hub: addresses[0]).tokens(
                for: (0..<subscribers).map { "fanout\($0)" } + (0..<publishers).map { "fanout-publisher\($0)" })
        }
        let scenario = try FanoutScenario(
            target: kind, urls: addresses, subscribers: subscribers, publishers: publishers,
            publishersSubscribe: !publishersUnsubscribed, rate: publishRate,
            payloadBytes: size, channel: channel, tokens: tokens, encoding: encoding)
        try await run.execute(
            scenario, settings: settings,
            described: [
                "target": target, "subscribers": "\(subscribers)", "publishers": "\(publishers)", "nodes": "\(addresses.count)", "rate": rate,
                "window": "\(window)", "size": "\(size)",
                "channel": channel, "duration": run.duration, "encoding": protocolEncoding.encoding,
            ])
    }
}

struct Storm: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Clients subscribed with recovery while the server API publishes: restart or kill the server meanwhile and read how they came back and whether any acknowledged publication is missing."
    )

    @Option(help: "WebSocket URL of the hub; repeat it for the nodes of a cluster (a client that loses its node moves to the next).")
    var url: [String] = ["ws://127.0.0.1:8000/connection/websocket"]
    @Option(help: "Number of clients.") var clients: Int = 20_000
    @Option(help: "Number of channels (client i subscribes to channel i mod N).") var channels: Int = 300
    @Option(help: "The channels' namespace: it needs history_size, history_ttl and history_durable.") var namespace: String = "storm"
    @Option(name: .customLong("publish-rate"), help: "Server API publications per second, over all channels.") var publishRate: String = "200/s"
    @Option(help: "Server API calls in flight at once.") var publishers: Int = 4
    @Option(help: "Publishing stops this long before the end, for the clients to catch up before the audit.") var settle: String = "10s"
    @Option(name: .customLong("reconnect-min"), help: "The SDK back-off's least delay (centrifuge-js: 500ms).") var reconnectMin: String = "500ms"
    @Option(name: .customLong("reconnect-max"), help: "The SDK back-off's longest delay (centrifuge-js: 20s).") var reconnectMax: String = "20s"
    @Option(help: "Seed of the back-off's jitter (printed; default: from the clock).") var seed: UInt64?
    @Option(help: "The hub's token secret (tokens are minted here); without it, dev login is used.") var secret: String?
    @Option(name: .customLong("api-key"), help: "The hub's server API key.") var apiKey: String
    @OptionGroup var run: RunOptions

    func run() async throws {
        var options = StormOptions()
        guard (1...1000).contains(publishers) else { throw LoadError("--publishers must be 1...1000, got \(publishers)") }
        options.clients = clients
        options.channels = channels
        options.namespace = namespace
        options.publishers = publishers
        options.publishRate = try LoadArguments.rate(publishRate, option: "--publish-rate")
        guard options.publishRate >= Double(publishers) / 60, options.publishRate <= 100_000 else {
            throw LoadError("--publish-rate must be \(publishers)/min...100000/s, got '\(publishRate)'")
        }
        options.settle = try LoadArguments.duration(settle, option: "--settle")
        var settings = try run.settings()
        options.duration = settings.duration
        try options.check()
        let low = try LoadArguments.duration(reconnectMin, option: "--reconnect-min")
        let high = try LoadArguments.duration(reconnectMax, option: "--reconnect-max")
        guard low > .zero, low <= high, high <= .seconds(300) else {
            throw LoadError("--reconnect-min must be more than 0 and at most --reconnect-max, which is at most 5m")
        }
        let jitterSeed = seed ?? UInt64(truncatingIfNeeded: MonotonicClock.nanoseconds())
        print("back-off seed: \(jitterSeed)")
        settings.reconnect = .backoff(min: low, max: high, seed: jitterSeed)
        let addresses = try url.map(WebSocketURL.init)
        print("minting \(clients) tokens…")
        let tokens = try await TokenSource(secret: secret, hub: addresses[0]).tokens(for: (0..<clients).map { "storm\($0)" })
        let scenario = try StormScenario(
            urls: addresses, options: options, tokens: tokens, apis: addresses.map { ServerAPIClient(base: $0.httpBase, key: apiKey) })
        try await run.execute(
            scenario, settings: settings,
            described: [
                "clients": "\(clients)", "channels": "\(channels)", "nodes": "\(addresses.count)", "publish_rate": publishRate,
                "settle": settle, "duration": run.duration, "reconnect_min": reconnectMin, "reconnect_max": reconnectMax,
                "seed": "\(jitterSeed)",
            ])
    }
}

struct Chart: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Draws columns of a CSV file (a header line, then numbers) as stacked SVG panels against one column.")

    @Option(help: "The CSV file.") var csv: String
    @Option(help: "The column along the x axis.") var x: String
    @Option(help: "A panel: 'TITLE=COLUMN,COLUMN…'; repeat it for more panels, drawn top to bottom.") var panel: [String]
    @Option(help: "The chart's title.") var title: String
    @Option(help: "Where to write the SVG.") var svg: String

    static let colors = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]

    func run() throws {
        let text: String
        do { text = try String(contentsOfFile: csv, encoding: .utf8) } catch { throw LoadError("--csv \(csv): \(error.localizedDescription)") }
        let lines = text.split(whereSeparator: \.isNewline).map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        guard let header = lines.first else { throw LoadError("--csv \(csv) is empty") }
        func column(_ name: String) throws -> [Double] {
            guard let index = header.firstIndex(of: name) else {
                throw LoadError("--csv \(csv) has no column '\(name)' (it has \(header.joined(separator: ", ")))")
            }
            return try lines.dropFirst().enumerated().map { row, fields in
                guard index < fields.count, let value = Double(fields[index]) else {
                    throw LoadError("--csv \(csv), line \(row + 2): '\(name)' is not a number")
                }
                return value
            }
        }
        let xs = try column(x)
        var panels: [(title: String, series: [SVGChart.Series])] = []
        for entry in panel {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[1].isEmpty else { throw LoadError("--panel must be 'TITLE=COLUMN,COLUMN…', got '\(entry)'") }
            let names = parts[1].split(separator: ",").map(String.init)
            let series = try names.enumerated().map { index, name in
                (name: name, color: Self.colors[index % Self.colors.count], points: Array(zip(xs, try column(name))))
            }
            panels.append((parts[0], series))
        }
        guard !panels.isEmpty else { throw LoadError("at least one --panel is needed") }
        try SVGChart.render(title: title, xLabel: x, panels: panels).write(toFile: svg, atomically: true, encoding: .utf8)
    }
}
