import Foundation
import GondolaCluster
import GondolaDomain
import GondolaHub
import GondolaPostgres
import GondolaProtocol
import GondolaRedis
import GondolaTravel
import Logging

/// Everything `gondola serve` can be told, by the names of the configuration file.
public struct ServerConfiguration: Sendable {
    public var listenHost = "127.0.0.1"
    public var listenPort = 8000
    /// The internal listener (`internal_listen`): when set, the server API, metrics and
    /// health are served there only, and the public listener serves client transports and pages.
    public var internalListen: (host: String, port: Int)?
    /// The GRPC server API's listener (`grpc_api_listen`), off when nil.
    public var grpcAPIListen: (host: String, port: Int)?
    /// The unidirectional GRPC client stream's listener (`uni_grpc_listen`), off when nil.
    public var uniGRPCListen: (host: String, port: Int)?
    /// The key GRPC calls present as `authorization: apikey <key>` (`grpc_api_key`); the
    /// HTTP API's `api_key` when empty.
    public var grpcAPIKey = ""
    /// Which `Origin`s may open a client connection from a browser (`allowed_origins`); by
    /// default only the server's own (the host page).
    public var allowedOrigins = OriginCheck()
    /// Most client connections this node holds at once (`client_connection_limit`); 0: no limit.
    public var clientConnectionLimit = 0
    /// Most new client connections this node accepts a second (`client_connection_rate_limit`); 0: no limit.
    public var clientConnectionRateLimit = 0
    /// A SQLite file, or a `postgres://` URL for the cluster mode.
    public var database = "var/gondola.sqlite"
    /// Where generated secrets and files are kept; empty: beside the SQLite file (`var/` in cluster mode).
    public var dataFolderSetting = ""
    /// PostgreSQL connections per node in cluster mode.
    public var databasePoolSize = 16
    /// The cluster mode's engine and timings (heartbeat, node timeout, bus batching).
    public var cluster = ClusterSettings()
    /// What `engine` names; nil: chosen by `database` (memory for SQLite, postgres for PostgreSQL).
    public var engineName: EngineName?
    /// The Redis servers of the `redis` engine, one shard each.
    public var redisAddresses = [RedisAddress(host: "127.0.0.1", port: 6379)]
    /// The trust and identity of the `rediss://` addresses (`redis_tls_*`).
    public var redisTLS = RedisTLS()
    /// The names the `redis` engine keeps in Redis, under `redis_prefix`.
    public var redisKeys = RedisKeys()

    /// Redis Sentinel (`redis_sentinel_addresses`): the Sentinels to ask; empty: no Sentinel.
    public var redisSentinels: [RedisAddress] = []
    /// Redis Sentinel (`redis_sentinel_master_name`): the masters, one shard each; `host` is
    /// the name the Sentinels know it by.
    public var redisSentinelMasters: [RedisAddress] = []
    /// Redis Cluster (`redis_cluster_addresses`): nodes to ask for the cluster's slots; empty: no Redis Cluster.
    public var redisClusterSeeds: [RedisAddress] = []
    /// Redis Cluster (`redis_cluster_partitions`): how many partitions the channels spread over,
    /// each in one slot with its own shard channel; every node of a Gondola cluster needs the same.
    public var redisClusterPartitions = 16
    /// Whether `redis_addresses` was given (it cannot be with Sentinel or Redis Cluster, which name the servers).
    var redisAddressesGiven = false

    /// The shards of the `redis` engine: the partitions of a Redis Cluster, each Sentinel
    /// master, or else each of `redisAddresses`, with `redisTLS` on those that use TLS.
    public var redisServers: [RedisServer] {
        func applyingTLS(_ address: RedisAddress) -> RedisAddress {
            var server = address
            if server.tls != nil { server.tls = redisTLS }
            return server
        }
        if !redisClusterSeeds.isEmpty {
            let seeds = redisClusterSeeds.map(applyingTLS)
            return RedisSlot.evenTags(count: redisClusterPartitions).map { .cluster(RedisClusterSlot(seeds: seeds, tag: $0)) }
        }
        guard !redisSentinels.isEmpty else { return redisAddresses.map { .address(applyingTLS($0)) } }
        let sentinels = redisSentinels.map(applyingTLS)
        return redisSentinelMasters.map { .sentinel(RedisSentinel(sentinels: sentinels, master: applyingTLS($0))) }
    }

    /// Refuses a Sentinel setup that is half there, and more than one way of naming the servers.
    func checkRedisServers() throws(ConfigurationError) {
        switch (redisSentinels.isEmpty, redisSentinelMasters.isEmpty) {
        case (false, true):
            throw ConfigurationError("redis_sentinel_addresses needs redis_sentinel_master_name (the masters to ask the Sentinels for)")
        case (true, false):
            throw ConfigurationError("redis_sentinel_master_name needs redis_sentinel_addresses (the Sentinels that know the masters)")
        case (false, false) where redisAddressesGiven:
            throw ConfigurationError("redis_addresses cannot be used with redis_sentinel_addresses: the Sentinels name the servers")
        default: break
        }
        guard !redisClusterSeeds.isEmpty else { return }
        if redisAddressesGiven {
            throw ConfigurationError("redis_addresses cannot be used with redis_cluster_addresses: the cluster names its nodes")
        }
        if !redisSentinels.isEmpty {
            throw ConfigurationError("redis_sentinel_addresses cannot be used with redis_cluster_addresses: a Redis Cluster fails over by itself")
        }
    }
    public var tokenHMACSecret = ""
    /// PEM files of the public keys that verify RS256/384/512 and ES256/384/512 tokens; empty: none.
    public var tokenRSAPublicKeyFile = ""
    public var tokenECDSAPublicKeyFile = ""
    /// A JSON Web Key Set file: tokens whose header names a `kid` are verified with that key.
    public var tokenJWKSFile = ""
    /// A JWKS URL (`token_jwks_public_endpoint`), fetched in the background and again when a
    /// token names an unknown `kid` (`JWKSEndpoint`); empty: none.
    public var tokenJWKSPublicEndpoint = ""
    /// The claim naming the user in tokens (`token_user_id_claim`).
    public var tokenUserIDClaim = "sub"
    /// The HMAC secret before the current one, accepted until `tokenHMACSecretPreviousUntil`.
    public var tokenHMACSecretPrevious = ""
    public var tokenHMACSecretPreviousUntil: Date?
    /// The app's backend, asked where Centrifugo's proxy asks it; an endpoint with an empty
    /// URL (only its timeout set) is not used.
    public var proxyEndpoints: [ProxyKind: ProxyEndpoint] = [:]
    /// Proxies by name (`proxies`), which namespaces (`subscribe_proxy_name`, ...) and RPC
    /// method prefixes (`rpc_proxies`) choose.
    public var namedProxies: [String: ProxyEndpoint] = [:]
    /// The WebSocket upgrade's headers sent along with every proxy request (`Cookie`, `Authorization`, ...).
    public var proxyHTTPHeaders: [String] = []
    /// Most proxy requests waiting on the backend at once; more are refused with 100.
    public var proxyMaxInFlight = 1_000
    /// When set, tokens must name it in `aud` / carry it as `iss`.
    public var tokenAudience = ""
    public var tokenIssuer = ""
    public var apiKey = ""
    /// Serve the server API's OpenAPI document (`swagger`, `ServerAPIOpenAPI`).
    public var swagger = false
    /// `http_api_error_mode: transport`: every server API error answers with an HTTP status
    /// (Centrifugo's transport error mode), not only for callers that ask for it.
    public var apiTransportErrors = false
    public var devLogin = false
    public var telegramBotToken = ""
    public var maxFrameBytes = 65536
    /// Offer permessage-deflate on the WebSocket endpoint.
    public var webSocketCompression = false
    /// Outgoing frames shorter than this are sent uncompressed.
    public var webSocketCompressionMinBytes = 256
    /// zlib's compression level (1 fastest … 9 smallest).
    public var webSocketCompressionLevel = 1
    /// zlib's window for outgoing messages, 2^bits bytes (9…15).
    public var webSocketCompressionWindowBits = 15
    /// zlib's memory level for outgoing messages (1 least … 9 most).
    public var webSocketCompressionMemoryLevel = 8
    /// Whether a compressed connection keeps its context from message to message (a zlib
    /// stream of its own each way); without it, each message is compressed on its own and a
    /// publication once per event loop for all its subscribers (`WebSocketCompression`).
    public var webSocketCompressionContextTakeover = false
    /// The client transports served besides the WebSocket (`ClientTransports`): HTTP-streaming
    /// and SSE with `/emulation` (on by default, the fallbacks of centrifuge-js), and the
    /// unidirectional ones (off by default, as in Centrifugo).
    public var transports = ClientTransports()
    /// How long tokens minted by the sign-in endpoints stay valid.
    public var signInTokenTTL: Duration = .seconds(24 * 3600)
    public var hub = HubConfiguration()
    /// The values of the keys the domains declare (`Domain.settingKeys`), for them to check.
    public var domainSettings = DomainSettings()
    /// The domains to install (`BuiltInDomains`); nil installs every one.
    public var domains: Set<String>?
    /// `log_format`, `log_level`, `log_levels`.
    public var logging = LogSettings()
    /// The listeners that serve TLS, with their certificate and key files.
    public var tls: [TLSListener: TLSFiles] = [:]
    /// How often the listeners' certificate files are read again.
    public var tlsReloadInterval = Duration.seconds(60)
    /// The admin page (`admin`, `admin_password`, …).
    public var admin = AdminSettings()
    /// Export OpenTelemetry spans (`opentelemetry`) over OTLP, as the `OTEL_*` variables say
    /// (`Telemetry`): publications and their delivery on every node, client commands, proxy and
    /// outbound calls.
    public var opentelemetry = false
    /// Also trace the server API (`opentelemetry_api`), continuing a request's `traceparent`;
    /// needs `opentelemetry`.
    public var opentelemetryAPI = false

    public init() {}

    /// Stops the start when the server API is to be traced without tracing.
    public func checkTelemetry() throws(ConfigurationError) {
        guard !opentelemetryAPI || opentelemetry else {
            throw ConfigurationError("'opentelemetry_api' needs 'opentelemetry' (the server API's spans are exported with the others)")
        }
    }

    /// Stops the start when a listener's TLS names a certificate without its key (or the other
    /// way round), is set for a listener that is not configured, or has files that do not load.
    public func checkTLS() throws(ConfigurationError) {
        try checkTLSListeners()
        for (listener, pair) in tls { try ListenerCertificates.check(listener, pair) }
    }

    /// The part of `checkTLS` that reads no file: whole pairs, for listeners that exist.
    func checkTLSListeners() throws(ConfigurationError) {
        for listener in TLSListener.allCases {
            guard let pair = tls[listener] else { continue }
            guard !pair.certificateFile.isEmpty, !pair.privateKeyFile.isEmpty else {
                throw ConfigurationError("'\(listener.certificateKey)' and '\(listener.privateKeyKey)' go together; only one is set")
            }
            let listening: Bool =
                switch listener {
                case .main: true
                case .internal: internalListen != nil
                case .grpcAPI: grpcAPIListen != nil
                case .uniGRPC: uniGRPCListen != nil
                }
            guard listening else {
                throw ConfigurationError("'\(listener.certificateKey)' is set but '\(listener.keyPrefix)listen' is not: there is no such listener")
            }
        }
    }

    /// Stops the start when a namespace or an RPC prefix names a proxy `proxies` does not have.
    public func checkProxyNames() throws(ConfigurationError) {
        let references =
            hub.namespaces.values.sorted { $0.name < $1.name }.flatMap { options in
                [
                    ("subscribe_proxy_name", options.subscribeProxyName), ("publish_proxy_name", options.publishProxyName),
                    ("sub_refresh_proxy_name", options.subRefreshProxyName),
                ].compactMap { key, name in
                    name.map { ("namespace '\(options.name)' \(key)", $0) }
                }
            } + hub.rpcProxies.map { ("rpc_proxies prefix '\($0.prefix)'", $0.proxy) }
        if let (place, name) = references.first(where: { namedProxies[$0.1] == nil }) {
            throw ConfigurationError("\(place) names the proxy '\(name)', which 'proxies' does not define")
        }
    }

    /// The keys tokens are verified with: the secret, and the key files read now (a file that
    /// cannot be read stops the start, naming the setting and the path).
    public func tokenKeys() throws(ConfigurationError) -> TokenKeys {
        func contents(_ path: String, _ setting: String) throws(ConfigurationError) -> String? {
            guard !path.isEmpty else { return nil }
            do {
                return try String(contentsOfFile: path, encoding: .utf8)
            } catch {
                throw ConfigurationError("'\(setting)' cannot read \(path): \(error.localizedDescription)")
            }
        }
        var keys = TokenKeys(
            hmacSecret: tokenHMACSecret, rsaPublicKeyPEM: try contents(tokenRSAPublicKeyFile, "token_rsa_public_key_file"),
            ecdsaPublicKeyPEM: try contents(tokenECDSAPublicKeyFile, "token_ecdsa_public_key_file"),
            jwksJSON: try contents(tokenJWKSFile, "token_jwks_file"),
            audience: tokenAudience.isEmpty ? nil : tokenAudience, issuer: tokenIssuer.isEmpty ? nil : tokenIssuer)
        keys.userIDClaim = tokenUserIDClaim
        if !tokenHMACSecretPrevious.isEmpty {
            guard let until = tokenHMACSecretPreviousUntil else {
                throw ConfigurationError("'token_hmac_secret_previous' needs 'token_hmac_secret_previous_until', the date it stops being accepted")
            }
            keys.previousHMACSecret = tokenHMACSecretPrevious
            keys.previousHMACSecretUntil = until
        }
        return keys
    }

    /// The proxy kinds with an endpoint URL.
    var liveProxyEndpoints: [ProxyKind: ProxyEndpoint] { proxyEndpoints.filter { !$0.value.url.isEmpty } }

    /// Whether `database` is a PostgreSQL URL: the node keeps its tables there, shared with the other nodes.
    public var usesPostgres: Bool { PostgresLocation.isURL(database) }

    /// Whether the node is one of a cluster: on a PostgreSQL database, or on Redis alone
    /// (`engine: redis` without a PostgreSQL database: a bare hub, checked by `checkRedisOnly`).
    public var isCluster: Bool { usesPostgres || engineName == .redis }

    /// The engines `engine` can name.
    public enum EngineName: String, Sendable, CaseIterable {
        /// A node alone: streams in memory and the SQLite file, presence in the node.
        case memory
        /// A cluster on its PostgreSQL database: bus, streams and presence in it.
        case postgres
        /// A cluster on Redis (`redis_addresses`), tables in its PostgreSQL database; or, with
        /// none, on Redis alone (a hub with no domain).
        case redis
    }

    /// The engine `engine` names, or the one `database` implies (memory for SQLite,
    /// postgres for PostgreSQL); an engine that does not suit `database` is refused.
    public func engine() throws(ConfigurationError) -> EngineName {
        let name = engineName ?? (usesPostgres ? .postgres : .memory)
        switch (name, usesPostgres) {
        case (.memory, true):
            throw ConfigurationError(
                "engine 'memory' keeps a node alone and needs a SQLite database; database is a PostgreSQL URL (use engine 'postgres' or 'redis')")
        case (.postgres, false):
            throw ConfigurationError("engine 'postgres' runs a cluster and needs database to be a postgres:// URL, got '\(database)'")
        case (.redis, false):
            try checkRedisOnly()
            return name
        default: return name
        }
    }

    /// Refuses what a cluster on Redis alone cannot keep: every domain keeps its tables in
    /// PostgreSQL, `history_durable` streams are committed there, and `dev_login` signs in the
    /// users kept there.
    func checkRedisOnly() throws(ConfigurationError) {
        let needPostgres = "a cluster on Redis alone (engine 'redis' without a postgres:// database) runs a hub with no domain"
        let enabled = BuiltInDomains.names.filter { domains?.contains($0) ?? true }
        if !enabled.isEmpty {
            throw ConfigurationError(
                "\(needPostgres): set domains to [] or database to a postgres:// URL (the domains keep their tables there); enabled now: \(enabled.joined(separator: ", "))"
            )
        }
        if let durable = hub.namespaces.filter({ $0.value.historyDurable }).keys.sorted().first {
            throw ConfigurationError("\(needPostgres): namespace '\(durable)' has history_durable, whose streams are committed in PostgreSQL")
        }
        if devLogin { throw ConfigurationError("\(needPostgres): dev_login signs in users kept in PostgreSQL") }
    }

    /// The folder where generated secrets are kept: `data_folder`, else the SQLite
    /// database's folder (`var` in cluster mode).
    public var dataFolder: String {
        if !dataFolderSetting.isEmpty { return dataFolderSetting }
        return isCluster ? "var" : URL(fileURLWithPath: database).deletingLastPathComponent().path
    }
}

/// What reading a configuration found: the configuration as far as it could be read, and
/// each problem (none when it loads).
public struct ConfigurationCheck: Sendable {
    public let configuration: ServerConfiguration
    public let problems: [ConfigurationError]
    /// Each key given, with the value its last source gave (a file's JSON, YAML or TOML
    /// value; a variable's or flag's text): what a reload compares to tell what changed.
    public let values: [String: JSON]
}

/// Reads the configuration from a JSON file, `GONDOLA_*` environment variables
/// and command-line flags, in that order of precedence from lowest to highest.
public enum ConfigurationLoader {
    /// Keys whose value is a JSON document when given as text (environment or flag).
    private static let jsonKeys: Set<String> = ["namespaces"]

    /// Every part's keys, under the title the docs give the part, in the docs' order.
    public static let parts: [(title: String, keys: [ConfigurationKey<ServerConfiguration>])] = serverParts + BuiltInDomains.settingParts

    private static let serverParts: [(title: String, keys: [ConfigurationKey<ServerConfiguration>])] = [
        ("Listeners and connections", ServerConfiguration.listenerKeys),
        ("Client transports", ClientTransports.keys.map { $0.within(\.transports) }),
        ("Engine: connections, channels and commands", HubConfiguration.keys.map { $0.within(\.hub) }),
        ("Tokens, the server API and sign-in", ServerConfiguration.tokenSettingKeys),
        ("Storage and cluster", ServerConfiguration.storageKeys),
        ("The app's backend (proxies)", ServerConfiguration.proxyKeys),
        ("Admin page", AdminSettings.keys.map { $0.within(\.admin) }),
        ("Logs", LogSettings.keys.map { $0.within(\.logging) }),
        ("Namespaces, domains and tracing", ServerConfiguration.wholeServerKeys),
    ]

    /// Every key the configuration knows, each part's table in turn.
    public static let table = parts.flatMap(\.keys)

    /// The keys' names, in the tables' order.
    public static let keys = table.map(\.name)

    private static let tableByName = Dictionary(uniqueKeysWithValues: table.map { ($0.name, $0) })

    /// Loads and validates; the error names every bad key with its source (a file's line,
    /// an environment variable or a flag) and the bad value, one per line.
    public static func load(file: String?, environment: [String: String], flags: [String: String]) throws(ConfigurationError) -> ServerConfiguration {
        let checked = check(file: file, environment: environment, flags: flags)
        guard checked.problems.isEmpty else { throw ConfigurationError(checked.problems.map(\.description).joined(separator: "\n")) }
        return checked.configuration
    }

    /// Reads the file (JSON, YAML or TOML, by its extension), then `GONDOLA_*` variables, then
    /// flags, each overriding the one before, and checks what they say together. Every key is
    /// read even after one fails, so that one run names every problem; the checks across keys
    /// (the engine, the Redis servers, proxy names, TLS certificates, token key files, the
    /// enabled domains' settings) run once each key reads.
    public static func check(file: String?, environment: [String: String], flags: [String: String]) -> ConfigurationCheck {
        var configuration = ServerConfiguration()
        var problems: [ConfigurationError] = []
        var values: [String: JSON] = [:]
        func attempt(_ step: (inout ServerConfiguration) throws(ConfigurationError) -> Void) {
            do throws(ConfigurationError) {
                try step(&configuration)
            } catch {
                problems.append(error)
            }
        }
        if let file {
            do throws(ConfigurationError) {
                let document = try ConfigurationDocument(path: file)
                for member in document.members {
                    values[member.key] = member.value
                    attempt { (configuration) throws(ConfigurationError) in
                        try apply(member.key, member.value, to: &configuration, source: document.source(of: member))
                    }
                }
            } catch {
                problems.append(error)
            }
        }
        for (name, value) in environment.sorted(by: { $0.key < $1.key }) where name.hasPrefix("GONDOLA_") {
            let key = String(name.dropFirst("GONDOLA_".count)).lowercased()
            values[key] = .string(value)
            attempt { (configuration) throws(ConfigurationError) in
                let source = "environment variable \(name)"
                try apply(key, try textValue(key, value, source: source), to: &configuration, source: source)
            }
        }
        for (key, value) in flags.sorted(by: { $0.key < $1.key }) {
            let flag = "--" + key.replacingOccurrences(of: "_", with: "-")
            values[key] = .string(value)
            attempt { (configuration) throws(ConfigurationError) in
                try apply(key, try textValue(key, value, source: "flag \(flag)"), to: &configuration, source: "flag \(flag)")
            }
        }
        if problems.isEmpty {
            attempt { (configuration) throws(ConfigurationError) in
                _ = try configuration.engine()
                try configuration.checkRedisServers()
            }
            attempt { (configuration) throws(ConfigurationError) in try configuration.checkProxyNames() }
            attempt { (configuration) throws(ConfigurationError) in try configuration.checkTLS() }
            attempt { (configuration) throws(ConfigurationError) in try configuration.admin.check() }
            attempt { (configuration) throws(ConfigurationError) in try configuration.checkTelemetry() }
            attempt { (configuration) throws(ConfigurationError) in _ = try configuration.tokenKeys() }
            for domain in BuiltInDomains.enabled(by: configuration) {
                attempt { _ throws(ConfigurationError) in try BuiltInDomains.checkSettings(of: domain) }
            }
        }
        return ConfigurationCheck(configuration: configuration, problems: problems, values: values)
    }

    private static func textValue(_ key: String, _ text: String, source: String) throws(ConfigurationError) -> JSON {
        guard jsonKeys.contains(key) else { return .string(text) }
        do {
            return try JSONParser.parse(text)
        } catch {
            throw ConfigurationError("\(source): '\(key)' must be JSON: \(error)")
        }
    }

    private static func apply(_ key: String, _ value: JSON, to configuration: inout ServerConfiguration, source: String) throws(ConfigurationError) {
        guard let row = tableByName[key] else {
            throw ConfigurationError("\(source): unknown key '\(key)' (known keys: \(keys.joined(separator: ", ")))")
        }
        try row.apply(ValueReader(key: key, value: value, source: source), to: &configuration)
    }
}
