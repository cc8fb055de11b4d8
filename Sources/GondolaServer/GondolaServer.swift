import Foundation
import GRPCNIOTransportHTTP2
@_spi(Engine) import GondolaCluster
import GondolaDomain
@_spi(Engine) import GondolaHub
import GondolaPostgres
import GondolaProtocol
import GondolaServices
import GondolaStore
import GondolaTravel
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import Metrics
import NIOCore
import NIOSSL
import ServiceLifecycle
import UnixSignals

/// A Gondola server: the hub wired to SQLite, the WebSocket endpoint and the HTTP API.
public final class GondolaServer: Sendable {
    public let configuration: ServerConfiguration
    public let node: Node
    /// The SQLite database; nil in cluster mode.
    public let database: GondolaDatabase?
    /// The link to the other nodes in cluster mode.
    @_spi(Engine) public let cluster: (any ClusterNodeLink)?
    /// Where the development sign-in keeps users; nil on Redis alone (no database).
    public let users: (any UserRepository)?
    /// The installed domains by name, in registration order.
    let domains: [(name: String, installed: InstalledDomain)]
    let tokens: ConnectionTokens
    /// The JWKS URL's keys, fetched by a background service, when one is configured.
    let jwks: JWKSEndpoint?
    let metrics: ServerMetrics
    /// Where spans go, with `opentelemetry`.
    let telemetry: Telemetry?
    /// The logger given, from which each component's is made (`LogSettings`).
    private let rootLogger: Logger
    /// The server's own lines: start, stop, drain.
    let logger: Logger
    private let connections = OpenConnections()
    /// The origin check and connection limits every client transport asks before a session opens.
    let admission: ConnectionAdmission
    /// Carries proxy requests to the app's backend; a reload replaces its endpoints.
    let proxyTransport: HTTPProxyTransport
    /// The certificates of the listeners that serve TLS, read again at `tls_reload_interval`.
    private let certificates: ListenerCertificates
    /// The TLS configuration of each HTTP listener that serves TLS.
    private let tlsConfigurations: [TLSListener: TLSConfiguration]
    /// The TLS of each GRPC listener that serves TLS.
    private let grpcSecurity: [TLSListener: HTTP2ServerTransport.Posix.TransportSecurity]

    /// Opens the database with every built-in domain's schema, builds the hub and
    /// installs the domains `domains` enables (all when unset). The configuration
    /// must carry a token secret and an API key (see `GeneratedSecrets.complete`).
    /// Telegram messages go through `telegram` when given, else through the Bot API
    /// when `telegram_bot_token` is set, else nowhere. An embedding program adds its own
    /// domains with `additionalDomains`, installed after the built-in ones. A name that two
    /// domains (or a domain and the hub) claim — an RPC method, namespace, channel, replica
    /// topic, server API method or route — stops the start with a `ConfigurationError`
    /// naming both, before any of the second domain's registrations reach the node.
    ///
    /// With `opentelemetry` the server's spans go to `telemetry`, else to an OTLP exporter the
    /// `OTEL_*` variables configure; without it `telemetry` is not used.
    public init(
        configuration: ServerConfiguration, telegram: (any TelegramNotifier)? = nil, additionalDomains: [any Domain] = [],
        telemetry: Telemetry? = nil, logger: Logger = Logger(label: "gondola")
    ) async throws {
        precondition(!configuration.tokenHMACSecret.isEmpty && !configuration.apiKey.isEmpty, "secrets must be set")
        self.configuration = configuration
        try configuration.checkTelemetry()
        self.telemetry = configuration.opentelemetry ? try telemetry ?? Telemetry.fromEnvironment() : nil
        let tracing = HubTracing(tracer: self.telemetry?.tracer)
        self.rootLogger = logger
        self.logger = logger.component("server", configuration.logging)
        let log = { (component: String) in logger.component(component, configuration.logging) }
        let notifier = telegram ?? (configuration.telegramBotToken.isEmpty ? NoTelegramBot() : TelegramBotAPI(token: configuration.telegramBotToken))
        // Every domain's schema is kept whether it is enabled or not; additional domains are always enabled.
        let builtIn = BuiltInDomains.all(configuration, telegram: notifier)
        let known = builtIn + additionalDomains
        let enabled = builtIn.filter { configuration.domains?.contains($0.name) ?? true } + additionalDomains
        self.metrics = ServerMetrics()
        self.admission = ConnectionAdmission(
            origins: configuration.allowedOrigins, connectionLimit: configuration.clientConnectionLimit,
            connectionRateLimit: configuration.clientConnectionRateLimit, metrics: metrics.factory, logger: log("connections"))
        (self.tokens, self.jwks) = try await Self.tokens(configuration, metrics: metrics, logger: log("tokens"))
        // The files are read once, by the certificates' reloaders.
        try configuration.checkTLSListeners()
        let certificates = try ListenerCertificates(configuration.tls, refreshInterval: configuration.tlsReloadInterval, logger: log("http"))
        self.certificates = certificates
        self.tlsConfigurations = try [TLSListener.main, .internal].reduce(into: [:]) { (all, listener) throws(ConfigurationError) in
            all[listener] = try certificates.serverConfiguration(for: listener)
        }
        self.grpcSecurity = try [TLSListener.grpcAPI, .uniGRPC].reduce(into: [:]) { (all, listener) throws(ConfigurationError) in
            all[listener] = try certificates.grpcSecurity(for: listener)
        }
        try configuration.checkProxyNames()
        try configuration.admin.check()
        // Made even with no endpoint, so that a reload can add some.
        let proxy = HTTPProxyTransport(
            endpoints: configuration.liveProxyEndpoints, named: configuration.namedProxies, maxInFlight: configuration.proxyMaxInFlight,
            metrics: metrics.factory, logger: log("proxy"))
        self.proxyTransport = proxy
        let uid = UUID().uuidString.lowercased()
        _ = try configuration.engine()
        let storage: DomainStorage?
        if configuration.isCluster {
            let cluster = try await ClusterStorage.open(configuration, domains: known, nodeUID: uid, logger: log("cluster"))
            storage = cluster.sharedDatabase.map { .postgres($0, bus: cluster) }
            self.database = nil
            self.cluster = cluster
            self.users = cluster.sharedDatabase.map { PostgresUserRepository(pool: $0) }
            self.node = Node(
                configuration: configuration.hub, tokens: tokens, proxy: proxy, cluster: cluster, uid: uid, metricsFactory: metrics.factory,
                tracing: tracing, logger: log("hub"))
            self.logger.info(
                "cluster node",
                metadata: [
                    "uid": "\(uid)", "database": "\(cluster.sharedDatabase.map { "\($0.location)" } ?? "none (Redis alone)")",
                    "engine": "\(cluster.health.engine)",
                ])
        } else {
            let database = try GondolaDatabase(path: configuration.database) { migrator in
                for domain in known { domain.registerMigrations(in: &migrator) }
            }
            self.database = database
            storage = .sqlite(database)
            self.cluster = nil
            self.users = SQLiteUserRepository(database: database)
            self.node = Node(
                configuration: configuration.hub, tokens: tokens, proxy: proxy,
                durableHistory: SQLiteHistoryStore(database: database), uid: uid,
                metricsFactory: metrics.factory, tracing: tracing, logger: log("hub"))
        }
        self.domains = try await Self.install(
            enabled, configuration: configuration, node: node, storage: storage, tokens: tokens,
            metrics: metrics.factory, logger: logger)
        try claimRoutes()
    }

    /// The token verifier of `configuration`, with the JWKS URL's key set when one is configured.
    private static func tokens(
        _ configuration: ServerConfiguration, metrics: ServerMetrics,
        logger: Logger
    ) async throws(ConfigurationError) -> (ConnectionTokens, JWKSEndpoint?) {
        var keys = try configuration.tokenKeys()
        let jwks =
            configuration.tokenJWKSPublicEndpoint.isEmpty
            ? nil
            : JWKSEndpoint(url: configuration.tokenJWKSPublicEndpoint, metrics: metrics.factory, logger: logger)
        keys.remoteKeySet = jwks
        do {
            return (try await ConnectionTokens(keys: keys), jwks)
        } catch {
            throw ConfigurationError(error.description)
        }
    }

    private static func install(
        _ enabled: [any Domain], configuration: ServerConfiguration, node: Node, storage: DomainStorage?,
        tokens: ConnectionTokens, metrics: any MetricsFactory,
        logger: Logger
    ) async throws -> [(name: String, installed: InstalledDomain)] {
        try Self.claim { () throws(NameClaimError) in try node.install(PersonalChannel.registrations, by: NameClaims.hub) }
        guard !enabled.isEmpty else { return [] }
        // Only a cluster on Redis alone has no storage, and its configuration enables no domain.
        guard let storage else { throw ConfigurationError("the domains \(enabled.map(\.name)) need a database") }
        var context = DomainContext(
            node: node, storage: storage, authentication: BearerAuthentication(tokens: tokens),
            links: SignedLinks(secret: configuration.tokenHMACSecret),
            signIn: SignInTokens(tokens: tokens, ttl: configuration.signInTokenTTL), dataFolder: configuration.dataFolder,
            notices: NoticeBoard(), metrics: metrics, logger: logger)
        var installed: [(name: String, installed: InstalledDomain)] = []
        var apiNames = NameClaims(kind: "server API method", hubNames: ServerAPI(node: node).names)
        for domain in enabled {
            let domainInstalled: InstalledDomain
            context.logger = logger.component(domain.name, configuration.logging)
            do {
                domainInstalled = try await domain.install(in: context)
            } catch let error as DomainSetupError {
                throw ConfigurationError("\(domain.name): \(error)")
            }
            try claim { () throws(NameClaimError) in
                try apiNames.claim(domainInstalled.serverMethods.names.sorted(), kind: "server API method", by: domain.name)
                try node.install(domainInstalled.registrations, by: domain.name)
            }
            installed.append((domain.name, domainInstalled))
        }
        return installed
    }

    /// Runs `claims`; a name claimed twice stops the start.
    private static func claim(_ claims: () throws(NameClaimError) -> Void) throws(ConfigurationError) {
        do {
            try claims()
        } catch {
            throw ConfigurationError(error.description)
        }
    }

    /// Stops the start when a domain adds a route (method and path) that the server or
    /// another domain has.
    private func claimRoutes() throws(ConfigurationError) {
        var routes = NameClaims(kind: "route", hubNames: Self.routeNames { addOwnRoutes(to: $0, api: ServerAPI(node: node)) })
        for (name, domain) in domains {
            try Self.claim { () throws(NameClaimError) in try routes.claim(Self.routeNames(domain.routes), kind: "route", by: name) }
        }
    }

    /// The routes `addRoutes` adds, as "GET /health".
    private static func routeNames(_ addRoutes: (HTTPRouter) -> Void) -> [String] {
        let router = HTTPRouter(context: HTTPRequestContext.self)
        addRoutes(router)
        return router.routes.map(\.description).sorted()
    }

    /// The server's own routes: the client-facing ones and the operational ones.
    private func addOwnRoutes(to router: HTTPRouter, api: ServerAPI) {
        addClientTransports(to: router)
        addSignIn(to: router)
        addOperationalRoutes(to: router, api: api)
    }

    /// The client transports served as plain HTTP (HTTP-streaming, SSE, the unidirectional ones).
    private func addClientTransports(to router: HTTPRouter) {
        HTTPTransports(
            node: node, admission: admission, connections: connections, forwardedHeaderNames: forwardedHeaderNames,
            enabled: configuration.transports
        ).addRoutes(to: router)
    }

    /// The development sign-in (`/api/auth/dev`).
    private func addSignIn(to router: HTTPRouter) {
        AuthEndpoints(configuration: configuration, tokens: tokens, users: users).addRoutes(to: router)
    }

    /// The opening request's headers that go with a session's proxy requests (`proxy_http_headers`).
    private var forwardedHeaderNames: Set<String> { Set(configuration.proxyHTTPHeaders.map { $0.lowercased() }) }

    /// Health, metrics, the server API (`api`) and its OpenAPI document (`swagger`): on the internal listener when
    /// `internal_listen` is set, else on the public one.
    private func addOperationalRoutes(to router: HTTPRouter, api: ServerAPI) {
        router.get("/health") { [cluster] _, _ in JSONResponse.make(Self.health(of: cluster?.health)) }
        router.get("/metrics") { [metrics, node, database, cluster] _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.render(node: node, checkpointer: database?.checkpointer, engine: cluster?.health))))
        }
        ServerAPIEndpoint(api: api, apiKey: configuration.apiKey, transportErrors: configuration.apiTransportErrors, logger: httpLogger)
            .addRoutes(to: router)
        if configuration.swagger {
            let document = JSONResponse.make(ServerAPIOpenAPI.document(api.contracts, version: node.version))
            router.get(RouterPath(ServerAPIOpenAPI.path)) { _, _ in document }
        }
    }

    /// The admin page and its endpoints when `admin` is on, on the listener `onInternal` names:
    /// the internal one when there is one (unless `admin_external`), else the public one.
    private func addAdminRoutes(to router: HTTPRouter, onInternal: Bool) {
        let admin = configuration.admin
        guard admin.enabled, onInternal == (configuration.internalListen != nil && !admin.external) else { return }
        AdminEndpoints(settings: admin, api: serverAPI(), node: node, connections: connections, logger: httpLogger).addRoutes(to: router)
    }

    /// The server API with every installed domain's methods.
    private func serverAPI() -> ServerAPI {
        var api = ServerAPI(node: node, tracing: configuration.opentelemetryAPI ? node.tracing : .off)
        for (name, domain) in domains { api.add(domain.serverMethods, owner: name) }
        return api
    }

    /// `/health`'s answer: `ok`, or `degraded` while a part of a cluster's engine is
    /// down (the node keeps serving; what needs that part answers 108), with the parts and,
    /// for PostgreSQL, the last measured round trip (`round_trip_ms`): a slow database shows
    /// there before its callers time out.
    static func health(of engine: EngineHealth?) -> JSON {
        guard let engine else { return ["status": "ok", "engine": "memory"] }
        return [
            "status": engine.isUp ? "ok" : "degraded", "engine": .string(engine.engine),
            "parts": .array(
                engine.parts.map { part in
                    let fields: JSON = ["name": .string(part.name), "up": .bool(part.up)]
                    guard let roundTrip = part.roundTrip else { return fields }
                    return fields.adding("round_trip_ms", .double((roundTrip.timeInterval * 10_000).rounded() / 10))
                }),
        ]
    }

    /// The server API's method names: the hub's own and the installed domains'.
    public var serverAPIMethodNames: Set<String> { serverAPI().names }

    /// Every contract the server serves: the node's RPC methods, provided namespaces and
    /// replica topics, and the server API's methods (`gondola catalog` prints it).
    public var catalog: MethodCatalog {
        var catalog = node.catalog
        for method in serverAPI().contracts { catalog.add(method) }
        return catalog
    }

    /// The main service of an installed domain (for example `TravelService`), or nil
    /// when no enabled domain has one of that type.
    public func service<Service>(_ type: Service.Type) -> Service? {
        domains.lazy.compactMap { $0.installed.service as? Service }.first
    }

    /// The public HTTP application (client transports, pages, the domains' routes, and the
    /// operational routes unless `internal_listen` is set); `onServerRunning` gets the bound port.
    public func application(onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
        let router = HTTPRouter(context: HTTPRequestContext.self)
        // The routes that log their own refusals come before the log of the rest (see `RefusedRequestLog`).
        addClientTransports(to: router)
        if configuration.internalListen == nil { addOperationalRoutes(to: router, api: serverAPI()) }
        router.add(middleware: RefusedRequestLog(logger: httpLogger))
        addSignIn(to: router)
        for (_, domain) in domains { domain.routes(router) }
        addAdminRoutes(to: router, onInternal: false)

        let compression =
            configuration.webSocketCompression
            ? WebSocketCompression(
                minBytes: configuration.webSocketCompressionMinBytes, level: configuration.webSocketCompressionLevel,
                windowBits: configuration.webSocketCompressionWindowBits,
                memoryLevel: configuration.webSocketCompressionMemoryLevel,
                contextTakeover: configuration.webSocketCompressionContextTakeover)
            : nil
        var webSocket = WebSocketEndpoint(
            node: node, maxFrameBytes: configuration.maxFrameBytes, compression: compression, connections: connections,
            admission: admission, unidirectional: configuration.transports.uniWebSocket)
        webSocket.forwardedHeaderNames = forwardedHeaderNames
        let endpoint = webSocket
        return Application(
            router: router,
            server: HTTPServerBuilder { [tls = tlsConfigurations[.main]] responder in
                let channel = HubChildChannel(responder: responder, endpoint: endpoint, secure: tls != nil)
                return try tls.map { try TLSChannel(channel, tlsConfiguration: $0) } ?? channel
            },
            configuration: .init(
                address: .hostname(configuration.listenHost, port: configuration.listenPort), serverName: "gondola",
                backlog: ListenBacklog.system),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: httpLogger)
    }

    /// What the HTTP listeners log with.
    private var httpLogger: Logger { rootLogger.component("http", configuration.logging) }

    /// The internal HTTP application on `internal_listen`: health, metrics and the server
    /// API, nothing a client uses; `onServerRunning` gets the bound port.
    public func internalApplication(
        host: String, port: Int,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = HTTPRouter(context: HTTPRequestContext.self)
        addOperationalRoutes(to: router, api: serverAPI())
        router.add(middleware: RefusedRequestLog(logger: httpLogger))
        addAdminRoutes(to: router, onInternal: true)
        return Application(
            router: router,
            server: HTTPServerBuilder { [tls = tlsConfigurations[.internal]] responder in
                let channel = UpgradeFilteredHTTP1Channel(channel: HTTP1Channel(responder: responder))
                return try tls.map { try TLSChannel(channel, tlsConfiguration: $0) } ?? channel
            },
            configuration: .init(address: .hostname(host, port: port), serverName: "gondola"),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) }, logger: httpLogger)
    }

    /// Runs until SIGTERM or SIGINT, then drains: clients get 3001 and the process
    /// ends once their connections are closed (at most a few seconds).
    public func run(
        reloading: ConfigurationSource? = nil,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in },
        onInternalServerRunning: @escaping @Sendable (Int) async -> Void = { _ in },
        onGRPCServerRunning: @escaping @Sendable (Int) async -> Void = { _ in },
        onUniGRPCServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws {
        let group = serviceGroup(
            signals: [.sigterm, .sigint], reloading: reloading, onServerRunning: onServerRunning, onInternalServerRunning: onInternalServerRunning,
            onGRPCServerRunning: onGRPCServerRunning, onUniGRPCServerRunning: onUniGRPCServerRunning)
        try await group.run()
    }

    /// Where a reload reads the configuration again (SIGHUP), and what the running one was given.
    public struct ConfigurationSource: Sendable {
        public let load: @Sendable () -> ConfigurationCheck
        public let initial: ConfigurationCheck

        public init(load: @escaping @Sendable () -> ConfigurationCheck, initial: ConfigurationCheck) {
            self.load = load
            self.initial = initial
        }
    }

    /// The services of a running server: the background loops (the hub's
    /// maintenance, the cluster link, each domain's work such as the travel frame
    /// loop), then the HTTP server, then the hub. A graceful shutdown goes in
    /// reverse: the hub closes its clients first, the HTTP server stops next, and
    /// the background loops end last, so frames and pings go on while clients leave.
    public func serviceGroup(
        signals: [UnixSignal], reloading: ConfigurationSource? = nil, onServerRunning: @escaping @Sendable (Int) async -> Void,
        onInternalServerRunning: @escaping @Sendable (Int) async -> Void = { _ in },
        onGRPCServerRunning: @escaping @Sendable (Int) async -> Void = { _ in },
        onUniGRPCServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> ServiceGroup {
        var background = [BackgroundService(name: "maintenance") { [node] in await node.runMaintenance() }]
        if let cluster { background.append(BackgroundService(name: "cluster") { await cluster.run() }) }
        if let jwks { background.append(BackgroundService(name: "jwks") { await jwks.run() }) }
        for domain in domains {
            if let work = domain.installed.background { background.append(BackgroundService(name: domain.name, work: work)) }
        }
        // The exporter comes first, so that it stops last and sends the spans of the shutdown.
        var services = telemetry.map { [ServiceGroupConfiguration.ServiceConfiguration(service: $0.exporter)] } ?? []
        services += background.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0, successTerminationBehavior: .ignore) }
        services += certificates.services.map { .init(service: $0, successTerminationBehavior: .ignore) }
        if let reloading {
            let reload = HangupReload(server: self, load: reloading.load, initial: reloading.initial, logger: logger)
            services.append(.init(service: reload, successTerminationBehavior: .ignore))
        }
        if let (host, port) = configuration.internalListen {
            services.append(.init(service: internalApplication(host: host, port: port, onServerRunning: onInternalServerRunning)))
        }
        if let (host, port) = configuration.grpcAPIListen {
            let key = configuration.grpcAPIKey.isEmpty ? configuration.apiKey : configuration.grpcAPIKey
            let api = GRPCListener(
                services: [GRPCServerAPI(api: serverAPI())],
                interceptors: [APIKeyCheck(key: key), TraceContextPropagation(tracing: node.tracing)], maxRequestBytes: ServerAPIEndpoint.bodyLimit,
                host: host, port: port, security: grpcSecurity[.grpcAPI] ?? .plaintext, onServerRunning: onGRPCServerRunning)
            services.append(.init(service: api))
        }
        if let (host, port) = configuration.uniGRPCListen {
            let stream = UniGRPCService(node: node, admission: admission, connections: connections)
            services.append(
                .init(
                    service: GRPCListener(
                        services: [stream], maxRequestBytes: HTTPTransports.maxRequestBytes, host: host, port: port,
                        security: grpcSecurity[.uniGRPC] ?? .plaintext, onServerRunning: onUniGRPCServerRunning)))
        }
        services += [.init(service: application(onServerRunning: onServerRunning)), .init(service: HubService(server: self))]
        return ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: signals, logger: logger))
    }

    /// WebSocket connections still open.
    public var openConnections: Int { connections.value }

    /// WebSocket connections with a task handling their messages right now; an idle
    /// connection has none.
    public var connectionsHandlingMessages: Int { connections.handlingMessages }
}

/// A loop that runs while the server runs and is cancelled once the services after it have shut down.
struct BackgroundService: Service, CustomStringConvertible {
    let name: String
    let work: @Sendable () async -> Void

    var description: String { name }

    func run() async throws {
        await cancelWhenGracefulShutdown { await work() }
    }
}

/// On graceful shutdown closes every client with 3001 and waits (up to 3 s) for their connections to end.
struct HubService: Service {
    let server: GondolaServer

    func run() async throws {
        try? await gracefulShutdown()
        server.node.shutdown()
        let deadline = ContinuousClock.now + .seconds(3)
        while server.openConnections > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }
}

/// `POST /api/<method>` with the `X-API-Key` header. A method's error answers `200` with
/// `{"error": {...}}`, or, in Centrifugo's transport error mode (`transportErrors`, or the
/// request's `X-Centrifugo-Error-Mode: transport`), the HTTP status `status(ofError:)` maps
/// its code to, with the error object as the body; `batch` answers its replies either way.
/// Every refusal (a wrong key, a body that is not a JSON object, an unknown method, a method's
/// error) is logged with the caller's address, the method, the code and the reason, at most
/// once every few seconds per method and code (`RefusalLog`).
struct ServerAPIEndpoint: Sendable {
    let api: ServerAPI
    let transportErrors: Bool
    let refusals: RefusalLog
    /// Where the methods are (`/api` for the server API, `/admin/api` for the admin page).
    var prefix = "/api"
    /// The refusal of a request its caller may not make, nil when it may.
    let authorize: @Sendable (Request) -> Response?
    static let bodyLimit = 1 << 20

    /// The server API of callers with `apiKey` in their `X-API-Key` header.
    init(api: ServerAPI, apiKey: String, transportErrors: Bool, logger: Logger) {
        self.api = api
        self.transportErrors = transportErrors
        self.refusals = RefusalLog(logger: logger)
        self.authorize = { request in
            let given = request.headers[.init("X-API-Key")!] ?? request.headers[.authorization].flatMap(Self.apiKey(inAuthorization:))
            guard let given, ConstantTime.equal(given, apiKey) else {
                return JSONResponse.error(.unauthorized, code: 101, "missing or wrong X-API-Key (or Authorization: apikey <key>)")
            }
            return nil
        }
    }

    /// The key of an `Authorization: apikey <key>` header (the scheme in any case), as Centrifugo takes it.
    static func apiKey(inAuthorization header: String) -> String? {
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "apikey" else { return nil }
        return String(parts[1])
    }

    /// The server API under `prefix` for callers `authorize` lets in.
    init(api: ServerAPI, prefix: String, logger: Logger, authorize: @escaping @Sendable (Request) -> Response?) {
        self.api = api
        self.transportErrors = false
        self.refusals = RefusalLog(logger: logger)
        self.prefix = prefix
        self.authorize = authorize
    }

    func addRoutes(to router: HTTPRouter) {
        router.post(RouterPath("\(prefix)/:method")) { request, context in
            let method = context.parameters.get("method") ?? ""
            let refused = { (code: Int64, reason: String) in
                refusals.log(
                    "\(method) \(code)", "server API call refused",
                    metadata: ["peer": "\(context.clientAddress)", "path": "\(prefix)/\(method)", "code": "\(code)", "reason": "\(reason)"])
            }
            if let refusal = authorize(request) {
                refused(101, "not authorized (\(refusal.status.code))")
                return refusal
            }
            let body: JSON
            // A batch's requests sit at depth 4: body, `commands`, the command, the method's request.
            let depth = method == "batch" ? 4 : 1
            switch await JSONBody.object(of: request, limit: Self.bodyLimit, keepingRaw: ["data", "info"], atDepth: depth) {
            case let .success(json): body = json
            case let .failure(error):
                refused(107, error.message)
                return JSONResponse.error(error.status, code: 107, error.message)
            }
            guard let answer = await api.call(method, body: body, traceParent: request.headers[.init(HubTracing.traceParentHeader)!]) else {
                refused(104, "unknown method")
                return JSONResponse.error(.notFound, code: 104, "unknown server API method '\(method)'")
            }
            if let error = answer["error"], case let .int(code)? = error["code"], case let .string(message)? = error["message"] {
                refused(code, message)
            }
            if transportErrors || request.headers[.init("X-Centrifugo-Error-Mode")!] == "transport", let error = answer["error"],
                case let .int(code)? = error["code"]
            {
                return JSONResponse.make(error, status: Self.status(ofError: code))
            }
            return JSONResponse.make(answer)
        }
    }

    /// The HTTP status of an error code in the transport error mode, as Centrifugo maps them.
    static func status(ofError code: Int64) -> HTTPResponse.Status {
        switch code {
        case 102, 104: .notFound
        case 107, 108: .badRequest
        case 112: .rangeNotSatisfiable
        case 113: .conflict
        default: .internalServerError
        }
    }
}
