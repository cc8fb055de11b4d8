import Foundation
import GondolaGeo
import GondolaLoad
import GondolaProtocol
import Testing

/// gondola-load's scenarios against a real server over real sockets (libwebsockets on the client side).
@Suite struct LoadScenarioTests {
    static let resort = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../resorts/demo.geojson")

    /// Runs `scenario` quietly: ready within 30 s, then `warmUp`, then `duration` measured.
    static func run(_ scenario: LoadScenario, for duration: Duration, warmUp: Duration, compression: Bool = false) async throws -> LoadReport {
        var settings = LoadSettings()
        settings.offerCompression = compression
        settings.duration = duration
        settings.warmUp = warmUp
        settings.readyTimeout = .seconds(30)
        settings.progress = false
        return try await LoadDriver(scenario: scenario, settings: settings).run()
    }

    @Test(arguments: ProtocolEncoding.allCases)
    func fiftyTravellersForTenSeconds(_ encoding: ProtocolEncoding) async throws {
        let server = try await startTravelServer()
        let base = "http://127.0.0.1:\(server.port)"
        let cast = try await TravellerCast.prepare(travellers: 50, trips: 2, prefix: "lt", api: ServerAPIClient(base: base, key: RunningServer.apiKey),
                                                   tokens: .secret(RunningServer.secret))
        #expect(cast.trips.count == 2 && cast.tokens.count == 52)
        var options = TravellerOptions()
        options.chatShare = 0.2
        options.chatInterval = .seconds(2)
        options.rsvpShare = 0.3
        options.rsvpInterval = .seconds(2)
        options.encoding = encoding
        let graph = try SkiResort(geoJSON: Data(contentsOf: Self.resort)).graph
        let scenario = try TravellerScenario(urls: [server.loadURL()], cast: cast, graph: graph, options: options)
        let report = try await Self.run(scenario, for: .seconds(10), warmUp: .seconds(3))

        #expect(report.connected == 52)
        #expect(report.connectionErrors.isEmpty && report.errorReplies.isEmpty && report.reconnects == 0,
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
    }

    /// The same travellers with and without fossil deltas and permessage-deflate: with both,
    /// every frame is rebuilt from its delta (a frame that cannot be is an error reply), the
    /// same latencies are measured, and fewer bytes travel than the messages hold.
    @Test(arguments: ProtocolEncoding.allCases)
    func travellersWithDeltasAndCompressionRebuildEveryFrame(_ encoding: ProtocolEncoding) async throws {
        // libwebsockets' client needs every message of a compressed connection compressed.
        let server = try await startTravelServer {
            $0.webSocketCompression = true
            $0.webSocketCompressionMinBytes = 0
        }
        let base = "http://127.0.0.1:\(server.port)"
        let graph = try SkiResort(geoJSON: Data(contentsOf: Self.resort)).graph
        var reports: [LoadReport] = []
        for saving in [false, true] {
            let cast = try await TravellerCast.prepare(travellers: 30, trips: 1, prefix: "lb\(saving)\(encoding.rawValue)",
                                                       api: ServerAPIClient(base: base, key: RunningServer.apiKey), tokens: .secret(RunningServer.secret))
            var options = TravellerOptions()
            options.chatShare = 0
            options.rsvpShare = 0
            options.encoding = encoding
            options.delta = saving
            let scenario = try TravellerScenario(urls: [server.loadURL()], cast: cast, graph: graph, options: options)
            let report = try await Self.run(scenario, for: .seconds(6), warmUp: .seconds(2), compression: saving)
            #expect(report.connected == 31)
            #expect(report.connectionErrors.isEmpty && report.errorReplies.isEmpty && report.reconnects == 0,
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
        #expect(savingWire < plainWire / 2, "deltas and deflate: \(savingWire) bytes per traveller-hour against \(plainWire)")
        #expect(saving.figures["wire_bytes_per_host_hour"] != nil)
        try await server.stop()
    }

    @Test(arguments: [ChatMode.group, .direct], ProtocolEncoding.allCases)
    func chatSendersAreAnsweredAndEveryMemberGetsEachMessage(_ mode: ChatMode, _ encoding: ProtocolEncoding) async throws {
        let server = try await startTravelServer()
        let base = "http://127.0.0.1:\(server.port)"
        // 20 clients in trips of 10: two group chats of 10, or ten 1:1 chats.
        let cast = try await TravellerCast.prepare(travellers: 20, trips: 2, prefix: "lc\(mode.rawValue)\(encoding.rawValue)",
                                                   api: ServerAPIClient(base: base, key: RunningServer.apiKey), tokens: .secret(RunningServer.secret))
        let scenario = try ChatScenario(url: server.loadURL(), cast: cast, mode: mode, rate: 40, encoding: encoding)
        let report = try await Self.run(scenario, for: .seconds(4), warmUp: .seconds(1))

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
    }

    @Test(arguments: ProtocolEncoding.allCases)
    func fanoutDeliversEveryPublicationToEverySubscriber(_ encoding: ProtocolEncoding) async throws {
        let server = try await startTravelServer()
        let tokens = try await TokenSource.secret(RunningServer.secret).tokens(for: (0..<21).map { "fo\($0)" })
        let scenario = try FanoutScenario(target: .gondola, urls: [server.loadURL()], subscribers: 20, rate: .fixed(50), payloadBytes: 64,
                                          channel: "fanout-\(encoding.rawValue)", tokens: tokens, encoding: encoding)
        let report = try await Self.run(scenario, for: .seconds(3), warmUp: .seconds(1))
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
    }
}

extension RunningServer {
    /// The address gondola-load connects to.
    func loadURL() throws -> WebSocketURL { try WebSocketURL("ws://127.0.0.1:\(port)/connection/websocket") }
}
