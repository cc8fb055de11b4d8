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
    fileprivate(set) var redisAddressesGiven = false

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

/// A configuration value that cannot be used, naming the key and the value.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Reads the configuration from a JSON file, `GONDOLA_*` environment variables
/// and command-line flags, in that order of precedence from lowest to highest.
public enum ConfigurationLoader {
    /// Keys whose value is a JSON document when given as text (environment or flag).
    private static let jsonKeys: Set<String> = ["namespaces"]

    /// The keys the configuration knows.
    public static let keys: [String] =
        [
            "listen", "database", "token_hmac_secret", "token_rsa_public_key_file", "token_ecdsa_public_key_file", "token_jwks_file",
            "token_jwks_public_endpoint", "token_user_id_claim", "token_hmac_secret_previous", "token_hmac_secret_previous_until",
            "token_audience", "token_issuer", "proxy_http_headers", "proxy_emulated_headers", "proxy_max_in_flight", "proxies", "rpc_proxies",
            "api_key", "http_api_error_mode",
            "dev_login",
            "telegram_bot_token",
            "ping_interval", "pong_timeout", "client_queue_max_bytes",
            "max_frame_bytes", "websocket_compression", "websocket_compression_min_bytes", "websocket_compression_level",
            "websocket_compression_window_bits", "websocket_compression_memory_level", "websocket_compression_context_takeover",
            "http_stream", "sse", "uni_websocket", "uni_sse", "uni_http_stream",
            "max_channels_per_client", "user_subscribe_to_personal", "user_personal_channel_namespace", "user_personal_single_connection",
            "client_user_connection_limit", "client_connection_limit", "client_connection_rate_limit", "channel_max_length",
            "allow_anonymous_connect_without_token", "allowed_origins", "internal_listen", "grpc_api_listen", "grpc_api_key", "uni_grpc_listen",
            "command_rate",
            "command_burst", "namespaces",
            "domains", "node_name", "data_folder", "database_pool_size", "engine", "redis_addresses", "redis_tls_ca_file", "redis_tls_cert_file",
            "redis_tls_key_file",
            "redis_tls_server_name", "redis_prefix", "redis_sentinel_addresses", "redis_sentinel_master_name", "redis_cluster_addresses",
            "redis_cluster_partitions", "cluster_presence_ttl",
            "cluster_node_timeout", "cluster_bus_linger", "cluster_bus_max_batch", "cluster_survey_timeout", "log_level", "log_format",
            "log_levels", "tls_reload_interval", "opentelemetry", "opentelemetry_api",
        ] + AdminSettings.keys + TLSListener.allCases.flatMap { [$0.certificateKey, $0.privateKeyKey] } + BuiltInDomains.settingKeys
        + proxyKindKeys

    /// `proxy_<kind>_endpoint`, `_timeout` and `_binary_encoding` of every proxy kind.
    static let proxyKindKeys = ProxyKind.allCases.flatMap {
        ["proxy_\($0.rawValue)_endpoint", "proxy_\($0.rawValue)_timeout", "proxy_\($0.rawValue)_binary_encoding"]
    }

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
        let field = ValueReader(key: key, value: value, source: source)
        if let listener = TLSListener.allCases.first(where: { $0.certificateKey == key }) {
            configuration.tls[listener, default: TLSFiles()].certificateFile = try field.readableFile()
            return
        }
        if let listener = TLSListener.allCases.first(where: { $0.privateKeyKey == key }) {
            configuration.tls[listener, default: TLSFiles()].privateKeyFile = try field.readableFile()
            return
        }
        switch key {
        case "listen":
            (configuration.listenHost, configuration.listenPort) = try field.hostAndPort()
        case "database":
            let database = try field.nonEmptyString()
            if PostgresLocation.isURL(database) {
                do {
                    _ = try PostgresLocation(url: database)
                } catch {
                    throw field.error(error.description)
                }
            }
            configuration.database = database
        case "data_folder": configuration.dataFolderSetting = try field.nonEmptyString()
        case "database_pool_size": configuration.databasePoolSize = try field.integer(min: 2)
        case "node_name": configuration.hub.nodeName = try field.nonEmptyString()
        case "cluster_node_timeout":
            let timeout = try field.duration(allowZero: false)
            guard timeout >= configuration.cluster.heartbeat * 2 else {
                throw field.error("must be at least two heartbeats (\(configuration.cluster.heartbeat * 2)), got \(timeout)")
            }
            configuration.cluster.nodeTimeout = timeout
        case "engine":
            let text = try field.string()
            guard let name = ServerConfiguration.EngineName(rawValue: text) else {
                throw field.error("expected one of \(ServerConfiguration.EngineName.allCases.map(\.rawValue).joined(separator: ", ")), got '\(text)'")
            }
            configuration.engineName = name
        case "redis_addresses":
            let entries = try field.list(of: "Redis addresses (host:port or redis://user:password@host:port/db)")
            guard !entries.isEmpty else { throw field.error("must name at least one Redis server") }
            configuration.redisAddresses = try entries.map { (entry) throws(ConfigurationError) in
                guard let address = RedisAddress(entry) else {
                    throw field.error(
                        "'\(RedisAddress.redacted(entry))' is not host:port or redis://[[user]:password@]host[:port][/db] (port 1...65535, db 0...15)"
                    )
                }
                return address
            }
            guard Set(configuration.redisAddresses).count == configuration.redisAddresses.count else {
                throw field.error("names a server twice: \(entries.joined(separator: ", "))")
            }
            configuration.redisAddressesGiven = true
        case "redis_sentinel_addresses":
            let entries = try field.list(of: "Sentinel addresses (host:port or redis://user:password@host:port)")
            guard !entries.isEmpty else { throw field.error("must name at least one Sentinel") }
            configuration.redisSentinels = try entries.map { (entry) throws(ConfigurationError) in
                guard let address = RedisAddress(entry), address.database == 0 else {
                    throw field.error("'\(RedisAddress.redacted(entry))' is not host:port or redis://[[user]:password@]host[:port] (port 1...65535)")
                }
                return address
            }
        case "redis_sentinel_master_name":
            let entries = try field.list(of: "master names (name or redis://user:password@name/db)")
            guard !entries.isEmpty else { throw field.error("must name at least one master") }
            configuration.redisSentinelMasters = try entries.map { (entry) throws(ConfigurationError) in
                guard let master = RedisAddress(entry), !RedisAddress.namesPort(entry) else {
                    throw field.error(
                        "'\(RedisAddress.redacted(entry))' is not a master name or redis://[[user]:password@]name[/db] (no port: the Sentinels give it)"
                    )
                }
                return master
            }
            guard Set(configuration.redisSentinelMasters.map(\.host)).count == configuration.redisSentinelMasters.count else {
                throw field.error("names a master twice: \(entries.map(RedisAddress.redacted).joined(separator: ", "))")
            }
        case "redis_cluster_addresses":
            let entries = try field.list(of: "Redis Cluster node addresses (host:port or redis://user:password@host:port)")
            guard !entries.isEmpty else { throw field.error("must name at least one node of the Redis Cluster") }
            configuration.redisClusterSeeds = try entries.map { (entry) throws(ConfigurationError) in
                guard let address = RedisAddress(entry), address.database == 0 else {
                    throw field.error(
                        "'\(RedisAddress.redacted(entry))' is not host:port or redis://[[user]:password@]host[:port] (port 1...65535; a Redis Cluster has only database 0)"
                    )
                }
                return address
            }
        case "redis_cluster_partitions":
            configuration.redisClusterPartitions = try field.integer(min: 1, max: 1_024)
        case "redis_tls_ca_file": configuration.redisTLS.caFile = try field.readableFile()
        case "redis_tls_cert_file": configuration.redisTLS.certificateFile = try field.readableFile()
        case "redis_tls_key_file": configuration.redisTLS.keyFile = try field.readableFile()
        case "redis_tls_server_name": configuration.redisTLS.serverName = try field.string()
        case "redis_prefix":
            let prefix = try field.string()
            guard !prefix.isEmpty, !prefix.contains(where: { $0 == "{" || $0 == "}" || $0.isWhitespace }) else {
                throw field.error("must be a non-empty name without braces or spaces (a channel's keys are <prefix>:{<channel>}:…), got '\(prefix)'")
            }
            configuration.redisKeys = RedisKeys(prefix: prefix)
        case "cluster_presence_ttl":
            let ttl = try field.duration(allowZero: false)
            guard ttl >= .seconds(3) else { throw field.error("must be at least 3s (entries are added again every third of it), got \(ttl)") }
            configuration.cluster.presenceTTL = ttl
        case "cluster_bus_linger": configuration.cluster.busLinger = try field.duration(allowZero: true)
        case "cluster_survey_timeout":
            let timeout = try field.duration(allowZero: false)
            guard timeout <= .seconds(30) else { throw field.error("must be at most 30s (a server API call waits this long), got \(timeout)") }
            configuration.hub.surveyTimeout = timeout
        case "cluster_bus_max_batch":
            configuration.cluster.busMaxBatch = try field.integer(min: 1, max: 10_000)
        case "token_hmac_secret":
            let secret = try field.string()
            guard secret.isEmpty || secret.utf8.count >= ConnectionTokens.minimumSecretBytes else {
                throw field.error(
                    "must be at least \(ConnectionTokens.minimumSecretBytes) bytes for HS256, got \(secret.utf8.count) (leave it out to have one generated)"
                )
            }
            configuration.tokenHMACSecret = secret
        case "token_rsa_public_key_file": configuration.tokenRSAPublicKeyFile = try field.nonEmptyString()
        case "token_ecdsa_public_key_file": configuration.tokenECDSAPublicKeyFile = try field.nonEmptyString()
        case "token_jwks_file": configuration.tokenJWKSFile = try field.nonEmptyString()
        case "token_jwks_public_endpoint":
            let url = try field.nonEmptyString()
            guard url.hasPrefix("http://") || url.hasPrefix("https://") else { throw field.error("expected an http(s) URL, got '\(url)'") }
            configuration.tokenJWKSPublicEndpoint = url
        case "token_user_id_claim": configuration.tokenUserIDClaim = try field.nonEmptyString()
        case "token_hmac_secret_previous":
            let secret = try field.nonEmptyString()
            guard secret.utf8.count >= ConnectionTokens.minimumSecretBytes else {
                throw field.error("must be at least \(ConnectionTokens.minimumSecretBytes) bytes for HS256, got \(secret.utf8.count)")
            }
            configuration.tokenHMACSecretPrevious = secret
        case "token_hmac_secret_previous_until": configuration.tokenHMACSecretPreviousUntil = try field.date()
        case "token_audience": configuration.tokenAudience = try field.nonEmptyString()
        case "token_issuer": configuration.tokenIssuer = try field.nonEmptyString()
        case "proxy_http_headers": configuration.proxyHTTPHeaders = try field.list(of: "header names")
        case "proxy_emulated_headers": configuration.hub.proxyEmulatedHeaders = Set(try field.list(of: "header names").map { $0.lowercased() })
        case "proxies":
            for (index, entry) in try field.objects(keys: ["name", "endpoint", "timeout", "binary_encoding"]).enumerated() {
                let name = try entry.string("name", path: "proxies[\(index)]")
                let url = try entry.string("endpoint", path: "proxies[\(index)]")
                guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
                    throw ConfigurationError("\(source): proxies[\(index)].endpoint expected an http(s) URL, got '\(url)'")
                }
                var endpoint = ProxyEndpoint(url: url)
                if let timeout = entry.members["timeout"] {
                    endpoint.timeout = try ValueReader(key: "proxies[\(index)].timeout", value: timeout, source: source).duration(allowZero: false)
                }
                if let binary = entry.members["binary_encoding"] {
                    endpoint.binaryEncoding = try ValueReader(key: "proxies[\(index)].binary_encoding", value: binary, source: source).bool()
                }
                configuration.namedProxies[name] = endpoint
            }
        case "rpc_proxies":
            configuration.hub.rpcProxies = try field.objects(keys: ["prefix", "proxy"]).enumerated().map {
                (index, entry) throws(ConfigurationError) in
                RPCProxyRoute(
                    prefix: try entry.string("prefix", path: "rpc_proxies[\(index)]"), proxy: try entry.string("proxy", path: "rpc_proxies[\(index)]")
                )
            }
        case "proxy_max_in_flight": configuration.proxyMaxInFlight = try field.integer(min: 1)
        case _ where key.hasPrefix("proxy_") && key.hasSuffix("_endpoint"):
            let url = try field.nonEmptyString()
            guard url.hasPrefix("http://") || url.hasPrefix("https://") else { throw field.error("expected an http(s) URL, got '\(url)'") }
            configuration.proxyEndpoints[try Self.proxyKind(key, "_endpoint", field), default: ProxyEndpoint(url: url)].url = url
        case _ where key.hasPrefix("proxy_") && key.hasSuffix("_timeout"):
            configuration.proxyEndpoints[try Self.proxyKind(key, "_timeout", field), default: ProxyEndpoint(url: "")].timeout = try field.duration(
                allowZero: false)
        case _ where key.hasPrefix("proxy_") && key.hasSuffix("_binary_encoding"):
            configuration.proxyEndpoints[try Self.proxyKind(key, "_binary_encoding", field), default: ProxyEndpoint(url: "")].binaryEncoding =
                try field.bool()
        case "api_key": configuration.apiKey = try field.string()
        case "opentelemetry": configuration.opentelemetry = try field.bool()
        case "opentelemetry_api": configuration.opentelemetryAPI = try field.bool()
        case "admin": configuration.admin.enabled = try field.bool()
        case "admin_password": configuration.admin.password = try field.string()
        case "admin_secret": configuration.admin.secret = try field.string()
        case "admin_web_path": configuration.admin.webPath = try field.string()
        case "admin_external": configuration.admin.external = try field.bool()
        case "admin_insecure":
            guard try !field.bool() else {
                throw field.error("is not supported: the admin page always needs 'admin_password' and 'admin_secret'")
            }
        case "http_api_error_mode":
            switch try field.string() {
            case "transport": configuration.apiTransportErrors = true
            case "custom": configuration.apiTransportErrors = false
            case let other: throw field.error("expected 'transport' or 'custom', got '\(other)'")
            }
        case "dev_login": configuration.devLogin = try field.bool()
        case "telegram_bot_token": configuration.telegramBotToken = try field.string()
        case "ping_interval": configuration.hub.pingInterval = try field.duration(allowZero: true)
        case "pong_timeout": configuration.hub.pongTimeout = try field.duration(allowZero: false)
        case "client_queue_max_bytes": configuration.hub.clientQueueMaxBytes = try field.integer(min: 1024)
        case "max_frame_bytes": configuration.maxFrameBytes = try field.integer(min: 256)
        case "websocket_compression": configuration.webSocketCompression = try field.bool()
        case "websocket_compression_min_bytes": configuration.webSocketCompressionMinBytes = try field.integer(min: 0)
        case "websocket_compression_level": configuration.webSocketCompressionLevel = try field.integer(min: 1, max: 9)
        case "websocket_compression_window_bits": configuration.webSocketCompressionWindowBits = try field.integer(min: 9, max: 15)
        case "websocket_compression_memory_level": configuration.webSocketCompressionMemoryLevel = try field.integer(min: 1, max: 9)
        case "websocket_compression_context_takeover": configuration.webSocketCompressionContextTakeover = try field.bool()
        case "http_stream": configuration.transports.httpStream = try field.bool()
        case "sse": configuration.transports.sse = try field.bool()
        case "uni_websocket": configuration.transports.uniWebSocket = try field.bool()
        case "uni_sse": configuration.transports.uniSSE = try field.bool()
        case "uni_http_stream": configuration.transports.uniHTTPStream = try field.bool()
        case "max_channels_per_client": configuration.hub.maxChannelsPerClient = try field.integer(min: 1)
        case "user_subscribe_to_personal": configuration.hub.userSubscribeToPersonal = try field.bool()
        case "user_personal_channel_namespace": configuration.hub.userPersonalChannelNamespace = try field.string()
        case "user_personal_single_connection": configuration.hub.userPersonalSingleConnection = try field.bool()
        case "client_user_connection_limit": configuration.hub.userConnectionLimit = try field.integer(min: 0)
        case "client_connection_limit": configuration.clientConnectionLimit = try field.integer(min: 0)
        case "client_connection_rate_limit": configuration.clientConnectionRateLimit = try field.integer(min: 0)
        case "channel_max_length": configuration.hub.channelMaxLength = try field.integer(min: 1, max: 65_535)
        case "allow_anonymous_connect_without_token": configuration.hub.allowAnonymousConnectWithoutToken = try field.bool()
        case "allowed_origins":
            let patterns = try field.list(of: "origins")
            do {
                configuration.allowedOrigins = try OriginCheck(allowed: patterns)
            } catch {
                throw field.error(error.description)
            }
        case "internal_listen":
            let (host, port) = try field.hostAndPort()
            configuration.internalListen = (host, port)
        case "grpc_api_listen":
            let (host, port) = try field.hostAndPort()
            configuration.grpcAPIListen = (host, port)
        case "grpc_api_key": configuration.grpcAPIKey = try field.string()
        case "tls_reload_interval":
            let interval = try field.duration(allowZero: false)
            guard interval >= .seconds(1) else { throw field.error("must be at least 1s, got \(interval)") }
            configuration.tlsReloadInterval = interval
        case "log_level": configuration.logging.level = try field.logLevel()
        case "log_format":
            let text = try field.string()
            guard let format = LogSettings.Format(rawValue: text) else {
                throw field.error("expected one of \(LogSettings.Format.allCases.map(\.rawValue).joined(separator: ", ")), got '\(text)'")
            }
            configuration.logging.format = format
        case "log_levels":
            var levels: [String: Logger.Level] = [:]
            for (component, level) in try field.pairs(of: "component levels such as hub=debug") {
                guard LogSettings.components.contains(component) else {
                    throw field.error("names no component '\(component)' (components: \(LogSettings.components.joined(separator: ", ")))")
                }
                levels[component] = try ValueReader(key: "log_levels.\(component)", value: level, source: source).logLevel()
            }
            configuration.logging.componentLevels = levels
        case "uni_grpc_listen":
            let (host, port) = try field.hostAndPort()
            configuration.uniGRPCListen = (host, port)
        case "command_rate": configuration.hub.commandRate = Double(try field.integer(min: 1))
        case "command_burst": configuration.hub.commandBurst = Double(try field.integer(min: 1))
        case "namespaces":
            guard case let .array(entries) = value else { throw field.error("expected an array of namespace objects") }
            var namespaces: [String: NamespaceOptions] = ["": .closedDefaultNamespace]
            for (index, entry) in entries.enumerated() {
                let options = try namespace(entry, path: "namespaces[\(index)]", source: source)
                guard !BuiltInDomains.namespaces.contains(options.name) else {
                    throw ConfigurationError("\(source): namespaces[\(index)].name '\(options.name)' is built in and cannot be redefined")
                }
                namespaces[options.name] = options
            }
            configuration.hub.namespaces = namespaces
        case "domains":
            let names = try field.list(of: "domain names")
            let known = BuiltInDomains.names
            if let unknown = names.first(where: { !known.contains($0) }) {
                throw field.error("unknown domain '\(unknown)' (known domains: \(known.joined(separator: ", ")))")
            }
            configuration.domains = Set(names)
        case _ where BuiltInDomains.settingKeys.contains(key):
            configuration.domainSettings.values[key] = value
        default:
            throw ConfigurationError("\(source): unknown key '\(key)' (known keys: \(keys.joined(separator: ", ")))")
        }
    }

    /// The kind a `proxy_<kind><suffix>` key names (`_endpoint`, `_timeout`, `_binary_encoding`).
    private static func proxyKind(_ key: String, _ suffix: String, _ field: ValueReader) throws(ConfigurationError) -> ProxyKind {
        let name = String(key.dropFirst("proxy_".count).dropLast(suffix.count))
        guard let kind = ProxyKind(rawValue: name) else { throw ConfigurationError("\(field.source): unknown key '\(key)'") }
        return kind
    }

    private static func namespace(_ entry: JSON, path: String, source: String) throws(ConfigurationError) -> NamespaceOptions {
        guard case let .object(members) = entry else { throw ConfigurationError("\(source): \(path) must be an object") }
        guard case let .string(name)? = entry["name"] else { throw ConfigurationError("\(source): \(path).name is required") }
        guard name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
            throw ConfigurationError("\(source): \(path).name '\(name)' is not a valid namespace name (letters, digits, '-', '_', '.')")
        }
        var options = NamespaceOptions(name: name)
        for member in members where member.key != "name" {
            let field = ValueReader(key: "\(path).\(member.key)", value: member.value, source: source)
            switch member.key {
            case "history_size": options.historySize = try field.integer(min: 0)
            case "history_ttl": options.historyTTL = try field.duration(allowZero: true)
            case "history_durable": options.historyDurable = try field.bool()
            case "presence": options.presence = try field.bool()
            case "join_leave": options.joinLeave = try field.bool()
            case "force_push_join_leave": options.forcePushJoinLeave = try field.bool()
            case "force_recovery": options.forceRecovery = try field.bool()
            case "force_positioning": options.forcePositioning = try field.bool()
            case "allow_subscribe_for_client": options.allowSubscribeForClient = try field.bool()
            case "allow_publish_for_subscriber": options.allowPublishForSubscriber = try field.bool()
            case "allow_publish_for_client": options.allowPublishForClient = try field.bool()
            case "allow_history_for_subscriber": options.allowHistoryForSubscriber = try field.bool()
            case "allow_presence_for_subscriber": options.allowPresenceForSubscriber = try field.bool()
            case "allow_subscribe_for_anonymous": options.allowSubscribeForAnonymous = try field.bool()
            case "allow_publish_for_anonymous": options.allowPublishForAnonymous = try field.bool()
            case "allow_history_for_anonymous": options.allowHistoryForAnonymous = try field.bool()
            case "allow_presence_for_anonymous": options.allowPresenceForAnonymous = try field.bool()
            case "history_meta_ttl": options.historyMetaTTL = try field.duration(allowZero: false)
            case "allowed_delta_types": options.allowedDeltaTypes = try field.deltaTypes()
            case "delta_publish": options.deltaPublish = try field.bool()
            case "allow_tags_filter": options.allowTagsFilter = try field.bool()
            case "proxy_subscribe": options.proxySubscribe = try field.bool()
            case "proxy_publish": options.proxyPublish = try field.bool()
            case "subscribe_proxy_name": options.subscribeProxyName = try field.nonEmptyString()
            case "publish_proxy_name": options.publishProxyName = try field.nonEmptyString()
            case "sub_refresh_proxy_name": options.subRefreshProxyName = try field.nonEmptyString()
            default: throw ConfigurationError("\(source): unknown key '\(path).\(member.key)'")
            }
        }
        return options
    }
}

/// Reads one configuration value as the type its key needs. Text from the
/// environment or a flag is accepted wherever a number or boolean is expected.
struct ValueReader {
    let key: String
    let value: JSON
    let source: String

    func error(_ message: String) -> ConfigurationError {
        ConfigurationError("\(source): '\(key)' \(message)")
    }

    func string() throws(ConfigurationError) -> String {
        guard case let .string(text) = value else { throw error("expected a string, got \(value.kindName)") }
        return text
    }

    /// The path of a file this process can read.
    func readableFile() throws(ConfigurationError) -> String {
        let path = try string()
        guard FileManager.default.isReadableFile(atPath: path) else { throw error("names '\(path)', which is not a readable file") }
        return path
    }

    /// An array of objects with only `keys` as members (a JSON text from the environment or a flag).
    func objects(keys: Set<String>) throws(ConfigurationError) -> [ConfigObject] {
        var array = value
        if case let .string(text) = value {
            do {
                array = try JSONParser.parse(text)
            } catch {
                throw self.error("must be a JSON array of objects: \(error)")
            }
        }
        guard case let .array(entries) = array else { throw error("expected an array of objects, got \(value.kindName)") }
        return try entries.enumerated().map { (index, entry) throws(ConfigurationError) in
            guard case let .object(members) = entry else { throw error("[\(index)] expected an object, got \(entry.kindName)") }
            if let unknown = members.first(where: { !keys.contains($0.key) }) {
                throw ConfigurationError("\(source): unknown key '\(key)[\(index)].\(unknown.key)'")
            }
            return ConfigObject(members: Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 }), source: source)
        }
    }

    /// An array of strings, or (from the environment or a flag) a comma-separated list of `what`.
    func list(of what: String) throws(ConfigurationError) -> [String] {
        switch value {
        case let .string(text): return text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        case let .array(entries):
            return try entries.map { (entry) throws(ConfigurationError) in
                guard case let .string(name) = entry else { throw error("expected \(what), got \(entry.kindName)") }
                return name
            }
        default: throw error("expected an array of \(what) or a comma-separated list, got \(value.kindName)")
        }
    }

    /// `host:port` with a port in 0...65535 (0: any free port).
    func hostAndPort() throws(ConfigurationError) -> (String, Int) {
        let text = try string()
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port),
            !text[..<colon].isEmpty
        else {
            throw error("expected host:port, got '\(text)'")
        }
        return (String(text[..<colon]), port)
    }

    func nonEmptyString() throws(ConfigurationError) -> String {
        let text = try string()
        guard !text.isEmpty else { throw error("must not be empty") }
        return text
    }

    /// A date as RFC 3339 text (`2026-12-31T00:00:00Z`) or Unix seconds.
    func date() throws(ConfigurationError) -> Date {
        switch value {
        case let .int(seconds): return Date(timeIntervalSince1970: Double(seconds))
        case let .string(text):
            if let seconds = Int64(text) { return Date(timeIntervalSince1970: Double(seconds)) }
            if let date = try? Date(text, strategy: .iso8601) { return date }
            throw error("expected an RFC 3339 date such as 2026-12-31T00:00:00Z or Unix seconds, got '\(text)'")
        default: throw error("expected an RFC 3339 date or Unix seconds, got \(value.text)")
        }
    }

    /// A swift-log level by name (`trace` … `critical`).
    func logLevel() throws(ConfigurationError) -> Logger.Level {
        let text = try string()
        guard let level = Logger.Level(rawValue: text) else {
            throw error("expected one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")), got '\(text)'")
        }
        return level
    }

    /// An object's members, or (from the environment or a flag) `name=value` pairs separated by commas.
    func pairs(of what: String) throws(ConfigurationError) -> [(String, JSON)] {
        switch value {
        case let .object(members): return members.map { ($0.key, $0.value) }
        case let .string(text):
            return try text.split(separator: ",").map { (pair) throws(ConfigurationError) in
                let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard parts.count == 2, !parts[0].isEmpty else { throw error("expected \(what), got '\(pair)'") }
                return (parts[0], .string(parts[1]))
            }
        default: throw error("expected an object of \(what) or name=value pairs, got \(value.kindName)")
        }
    }

    func bool() throws(ConfigurationError) -> Bool {
        switch value {
        case let .bool(flag): return flag
        case .string("true"), .string("1"): return true
        case .string("false"), .string("0"): return false
        default: throw error("expected true or false, got \(value.text)")
        }
    }

    /// A list of delta type names (`["fossil"]`); an unknown name is refused by name.
    func deltaTypes() throws(ConfigurationError) -> Set<DeltaType> {
        guard case let .array(entries) = value else { throw error("expected an array of delta types, got \(value.kindName)") }
        var types: Set<DeltaType> = []
        for entry in entries {
            guard case let .string(name) = entry, let type = DeltaType(rawValue: name) else {
                throw error("has \(entry.text), not a delta type (known: \(DeltaType.knownNames))")
            }
            types.insert(type)
        }
        return types
    }

    func integer(min: Int) throws(ConfigurationError) -> Int {
        let number: Int?
        switch value {
        case let .int(int): number = Int(exactly: int)
        case let .string(text): number = Int(text)
        default: number = nil
        }
        guard let number else { throw error("expected a whole number, got \(value.text)") }
        guard number >= min else { throw error("must be at least \(min), got \(number)") }
        return number
    }

    func integer(min: Int, max: Int) throws(ConfigurationError) -> Int {
        let number = try integer(min: min)
        guard number <= max else { throw error("must be at most \(max), got \(number)") }
        return number
    }

    func duration(allowZero: Bool) throws(ConfigurationError) -> Duration {
        guard let parsed = DurationText.value(of: value) else { throw error("expected a duration like 250ms, 25s, 10m or 1h, got \(value.text)") }
        guard allowZero || parsed > .zero else { throw error("must be greater than zero") }
        return parsed
    }
}

/// One object of a configuration array (`proxies`, `rpc_proxies`).
struct ConfigObject {
    let members: [String: JSON]
    let source: String

    /// The non-empty text member `key`; `path` names the object in errors.
    func string(_ key: String, path: String) throws(ConfigurationError) -> String {
        guard let value = members[key] else { throw ConfigurationError("\(source): \(path).\(key) is required") }
        return try ValueReader(key: "\(path).\(key)", value: value, source: source).nonEmptyString()
    }
}
