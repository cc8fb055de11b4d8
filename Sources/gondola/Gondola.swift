import ArgumentParser
import CAllocator
import Foundation
import GondolaDomain
import GondolaGeo
import GondolaHub
import GondolaOSM
import GondolaRentals
import GondolaServer
import GondolaStore
import GondolaTravel
import Logging

/// The `gondola` command.
@main
struct Gondola: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Gondola: a real-time location and messaging hub speaking the Centrifuge protocol.",
        subcommands: [
            Serve.self, Token.self, GenToken.self, GenSubToken.self, CheckToken.self, CheckConfig.self, GenConfig.self, Keys.self, ImportCars.self,
            ImportResort.self, Catalog.self,
        ],
        defaultSubcommand: Serve.self)
}

/// Options shared by every command that reads the server configuration.
struct ConfigurationOptions: ParsableArguments {
    @Option(help: "Configuration file: .json, .yaml, .yml or .toml.") var config: String?
    @Argument(
        parsing: .allUnrecognized,
        help: ArgumentHelp(
            "Any configuration key as --<key-with-dashes> <value>, such as --listen 127.0.0.1:8000 or --ping-interval=25s; `gondola keys` lists them.",
            valueName: "--key value"))
    var settingFlags: [String] = []

    /// The keys and values of `settingFlags`, checked by `validate`.
    var flags: [String: String] { (try? ConfigurationFlags.parse(settingFlags)) ?? [:] }

    func validate() throws {
        do {
            _ = try ConfigurationFlags.parse(settingFlags)
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// The validated configuration with generated secrets filled in; prints which were generated.
    func load() throws -> ServerConfiguration {
        let (configuration, generated) = try loadGenerating()
        for path in generated { FileHandle.standardError.write(Data("gondola: generated \(path)\n".utf8)) }
        return configuration
    }

    /// The configuration read again as `serve` read it, with the secrets it generated at its
    /// start filled in, for a reload (SIGHUP).
    func checkForReload() -> ConfigurationCheck {
        ConfigurationLoader.check(file: config, environment: ProcessInfo.processInfo.environment, flags: flags).withGeneratedSecrets()
    }

    /// The validated configuration with generated secrets filled in, and the paths of the secrets generated now.
    func loadGenerating() throws -> (ServerConfiguration, generated: [String]) {
        var configuration: ServerConfiguration
        do {
            configuration = try ConfigurationLoader.load(file: config, environment: ProcessInfo.processInfo.environment, flags: flags)
        } catch {
            throw ValidationError(error.description)
        }
        let generated = try GeneratedSecrets.complete(&configuration)
        return (configuration, generated.map { "\(configuration.dataFolder)/\($0)" })
    }
}

/// `gondola serve`: runs the hub.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the hub (SQLite at var/gondola.sqlite unless told otherwise).")

    @OptionGroup var options: ConfigurationOptions
    @Flag(help: "Demo mode: a running trip on the demo resort whose travellers move, the demo car fleet, and dev_login on.") var demo = false

    func run() async throws {
        var (loaded, generated) = try options.loadGenerating()
        if demo { loaded.devLogin = true }
        let configuration = loaded
        // Traced, the tracer is the process's before anything calls out, so that outbound HTTP calls are spans too.
        let telemetry = configuration.opentelemetry ? try Telemetry.fromEnvironment() : nil
        telemetry?.bootstrapProcess()
        configuration.logging.bootstrap(traced: telemetry != nil)
        let logger = Logger(label: "gondola").component("server", configuration.logging)
        // The banner: plain lines on standard output, or log lines when the logs are JSON, so that
        // every line a JSON-logging hub writes (`journalctl -o cat`) is one JSON object.
        let announce: @Sendable (String) -> Void
        if configuration.logging.format == .json {
            announce = { line in logger.notice("\(line)") }
        } else {
            announce = { line in
                print(line)
                fflush(nil)
            }
        }
        for path in generated { logger.notice("generated a secret", metadata: ["path": "\(path)"]) }
        logger.info(
            "allocator",
            metadata: [
                "jemalloc": "\(String(cString: gondola_allocator_version()))",
                "background_threads": "\(gondola_allocator_background_threads())",
            ])
        if !configuration.isCluster {
            if let block = SQLitePageCache.reserve() {
                logger.info("sqlite page cache", metadata: ["reserved_bytes": "\(block.bytes)", "slots": "\(block.slots)"])
            } else {
                logger.warning("sqlite page cache not reserved: SQLite allocates its pages from the heap as its caches fill")
            }
        }
        if let files = OpenFileLimit.raiseToHardLimit() {
            logger.info("open-file limit", metadata: ["soft": "\(files.soft)", "hard": "\(files.hard)"])
            if configuration.clientConnectionLimit > 0, files.soft < UInt64(configuration.clientConnectionLimit) + 1024 {
                logger.warning(
                    "client_connection_limit is above what the open-file limit allows",
                    metadata: ["client_connection_limit": "\(configuration.clientConnectionLimit)", "open_file_limit": "\(files.soft)"])
            }
        }
        let server = try await GondolaServer(configuration: configuration, telemetry: telemetry)
        var demoTravellers: Task<Void, Never>?
        if demo {
            let travel = server.service(TravelService.self)
            let rentals = server.service(RentalService.self)
            guard travel != nil || rentals != nil else {
                throw ValidationError("--demo needs the travel or the rentals domain, which 'domains' leaves out")
            }
            do {
                if let travel {
                    let trip = DemoTrip(travel: travel)
                    try await trip.seed()
                    demoTravellers = Task { await trip.run() }
                }
                if let rentals {
                    if let added = try await rentals.seedDemoFleet() {
                        announce(
                            "demo: \(added) cars added from the demo fleet in Innsbruck (\(rentals.carCount) on the map); try cars.near {\"lat\": 47.2654, \"lon\": 11.3927}"
                        )
                    } else {
                        announce("demo: no demo fleet at \(rentals.fleetsFolder)/demo.json ('fleets' names the folder); no cars added")
                    }
                }
            } catch {
                throw ValidationError("\(error)")
            }
        }
        defer { demoTravellers?.cancel() }
        let reloading = GondolaServer.ConfigurationSource(load: { [options] in options.checkForReload() }, initial: options.checkForReload())
        try await server.run(
            reloading: reloading,
            onServerRunning: { port in
                let address = "\(configuration.listenHost):\(port)"
                let (http, ws) = configuration.tls[.main] == nil ? ("http", "ws") : ("https", "wss")
                announce(
                    "gondola listening on \(http)://\(address) (WebSocket \(ws)://\(address)/connection/websocket), database \(configuration.database)"
                )
                announce("mint a connection token with: gondola token --user alice" + (options.config.map { " --config \($0)" } ?? ""))
                if demo, server.service(TravelService.self) != nil { announce(Self.demoHelp(address: address)) }
            },
            onInternalServerRunning: { port in
                let http = configuration.tls[.internal] == nil ? "http" : "https"
                announce("gondola internal listener on \(http)://\(configuration.internalListen?.host ?? ""):\(port) (server API, metrics, health)")
            },
            onGRPCServerRunning: { port in
                let tls = configuration.tls[.grpcAPI] == nil ? "" : " with TLS"
                announce(
                    "gondola GRPC server API on \(configuration.grpcAPIListen?.host ?? ""):\(port)\(tls) (centrifugal.centrifugo.api.CentrifugoApi)")
            },
            onUniGRPCServerRunning: { port in
                announce(
                    "gondola unidirectional GRPC stream on \(configuration.uniGRPCListen?.host ?? ""):\(port) (centrifugal.centrifugo.unistream.CentrifugoUniStream)"
                )
            })
    }

    static func demoHelp(address: String) -> String {
        """
        demo: trip '\(DemoTrip.tripID)' on the demo resort, host \(DemoTrip.host.id), travellers \(DemoTrip.travellers.map(\.0).joined(separator: ", ")) (moving now)
          token for the host:  curl -s -XPOST http://\(address)/api/auth/dev -d '{"user":"\(DemoTrip.host.id)"}'
          then subscribe to locations:\(DemoTrip.tripID) (every traveller), friends:#\(DemoTrip.host.id) or nearby:#\(DemoTrip.host.id)
          or open the host page: http://\(address)/host/ and sign in as \(DemoTrip.host.id)
        """
    }
}

/// `gondola token`: prints a connection JWT signed with the server's secret.
struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a connection token (JWT HS256) for a user.")

    @Option(help: "User id (the token's sub).") var user: String
    @Option(help: "Lifetime such as 30m, 1h or 24h; none when omitted.") var ttl: String?
    @OptionGroup var options: ConfigurationOptions

    func run() async throws {
        guard !user.isEmpty else { throw ValidationError("--user must not be empty") }
        var lifetime: Duration?
        if let ttl {
            guard let parsed = DurationText.parse(ttl), parsed > .zero else {
                throw ValidationError("--ttl '\(ttl)' is not a duration like 30m, 1h or 24h")
            }
            lifetime = parsed
        }
        let configuration = try options.load()
        let tokens = try await ConnectionTokens(secret: configuration.tokenHMACSecret)
        print(try await tokens.mint(user: user, ttl: lifetime))
    }
}

/// `gondola import-cars FILE.json`: sends a fleet file to a running hub's server API
/// (`car_import`, 2,000 cars per call), so that the live map shows the cars at once.
struct ImportCars: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import-cars",
        abstract: "Import cars from a JSON file ([...] or {\"cars\": [...]}) into a running hub.")

    @Argument(help: "The JSON file of cars.") var file: String
    @Option(help: "The hub's address (default: the configured internal_listen address, else listen).") var url: String?
    @OptionGroup var options: ConfigurationOptions

    func run() async throws {
        let configuration = try options.load()
        guard let data = FileManager.default.contents(atPath: file) else { throw ValidationError("cannot read '\(file)'") }
        let (host, port) = configuration.internalListen ?? (configuration.listenHost, configuration.listenPort)
        let base = url ?? "http://\(host):\(port)"
        let importer = CarImporter(url: base + "/api/car_import", apiKey: configuration.apiKey)
        do {
            let count = try await importer.send(data)
            print("imported \(count) cars from \(file) into \(base)")
        } catch {
            throw ValidationError("\(file): \(error)")
        }
    }
}

/// `gondola import-resort FILE --id ID`: reads an OpenStreetMap export of a ski area
/// (OSM XML, Overpass JSON or GeoJSON) and writes `<id>.geojson`, plus `<id>.asc`
/// with `--dem`, into the configured resorts folder. The hub loads it at its next start.
struct ImportResort: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import-resort",
        abstract: "Import a ski resort from an OpenStreetMap export (.osm XML, Overpass JSON or GeoJSON) into the resorts folder.")

    @Argument(help: "The OpenStreetMap export.") var file: String
    @Option(help: "The resort's id (lower-case letters, digits, '-' and '_'; at most 64).") var id: String
    @Option(help: "The resort's name (default: the boundary's name, else the id).") var name: String?
    @Option(help: "Elevation model: an ESRI ASCII grid (.asc) or an SRTM tile (.hgt, named like N39W106.hgt).") var dem: String?
    @OptionGroup var options: ConfigurationOptions

    static let idCharacters = Set("abcdefghijklmnopqrstuvwxyz0123456789-_")

    func run() async throws {
        guard (1...64).contains(id.count), id.allSatisfy(Self.idCharacters.contains) else {
            throw ValidationError("--id '\(id)' must be 1 to 64 lower-case letters, digits, '-' or '_'")
        }
        if let name, name.isEmpty || name.count > 200 { throw ValidationError("--name must be 1 to 200 characters") }
        let folder: String
        do {
            let configuration = try ConfigurationLoader.load(
                file: options.config, environment: ProcessInfo.processInfo.environment,
                flags: options.flags)
            folder = try TravelSettings(configuration.domainSettings).resortsFolder
        } catch let error as ConfigurationError {
            throw ValidationError(error.description)
        } catch {
            throw ValidationError("\(error)")
        }
        guard let data = FileManager.default.contents(atPath: file) else { throw ValidationError("cannot read '\(file)'") }
        let started = ContinuousClock.now
        let grid = try dem.map(Self.readElevation)
        let resort: ImportedResort
        do {
            resort = try ResortImporter.importResort(try OSMReader.read(data), id: id, name: name, elevation: grid, file: file)
        } catch {
            throw ValidationError("\(file): \(error)")
        }
        // Everything is checked before anything is written: a refused import leaves the folder as it was.
        var croppedGrid: ElevationGrid?
        if let grid {
            let bounds = BoundingBox(covering: resort.boundary)
            guard let cropped = grid.cropped(to: bounds) else {
                throw ValidationError("--dem \(dem!): the grid does not cover the resort (\(bounds))")
            }
            croppedGrid = cropped
        }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let target = URL(fileURLWithPath: folder).appendingPathComponent("\(id).geojson")
        let gridTarget = target.deletingPathExtension().appendingPathExtension("asc")
        try resort.geoJSON().write(to: target, options: .atomic)
        if let croppedGrid {
            try Data(croppedGrid.asciiGrid().utf8).write(to: gridTarget, options: .atomic)
        } else if FileManager.default.fileExists(atPath: gridTarget.path) {
            try FileManager.default.removeItem(at: gridTarget)
        }
        for line in resort.report.lines { print(line) }
        let elapsed = ContinuousClock.now - started
        print(
            "wrote \(target.path)" + (grid != nil ? " and \(gridTarget.path)" : "")
                + " in \(elapsed.formatted(.units(allowed: [.milliseconds]))); restart the hub to load resort '\(id)' (\(resort.name))")
    }

    static func readElevation(_ path: String) throws -> ElevationGrid {
        guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("--dem: cannot read '\(path)'") }
        do {
            if path.lowercased().hasSuffix(".hgt") { return try ElevationGrid(hgt: data, named: path) }
            if path.lowercased().hasSuffix(".asc") { return try ElevationGrid(asciiGrid: String(decoding: data, as: UTF8.self)) }
        } catch {
            throw ValidationError("--dem \(path): \(error)")
        }
        throw ValidationError("--dem '\(path)' must be an ESRI ASCII grid (.asc) or an SRTM tile (.hgt)")
    }
}
