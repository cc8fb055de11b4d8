import GondolaCluster
import GondolaHub
import GondolaPostgres
import GondolaRedis

/// Where the node keeps its data and how it joins a cluster: the database, the engine, its
/// Redis servers (plain, Sentinel or Redis Cluster) and the cluster's timings.
extension ServerConfiguration {
    static let storageKeys: [ConfigurationKey<ServerConfiguration>] = [
        ConfigurationKey(
            "database", type: "SQLite file or postgres:// URL", default: defaults.database,
            doc: "the SQLite file (its folder is the data folder), or a `postgres://` URL: cluster mode"
        ) { (field, configuration) throws(ConfigurationError) in
            let database = try field.nonEmptyString()
            if PostgresLocation.isURL(database) {
                do throws(PostgresLocationError) {
                    _ = try PostgresLocation(url: database)
                } catch {
                    throw field.error(error.description)
                }
            }
            configuration.database = database
        },
        .text("data_folder", \.dataFolderSetting, nonEmpty: true, doc: "where generated secrets, mail and uploads are kept")
            .showing(default: "the SQLite file's folder; `var` in cluster mode"),
        .integer(
            "database_pool_size", \.databasePoolSize, min: 2, doc: "cluster mode: PostgreSQL connections of a node, besides its listening connection"),
        ConfigurationKey(
            "engine", type: EngineName.allCases.map { "`\($0.rawValue)`" }.joined(separator: ", "),
            default: "`memory` with a SQLite file, `postgres` with a PostgreSQL URL",
            doc:
                "what carries the bus: `memory` (a node alone), `postgres` (LISTEN/NOTIFY, streams and presence in the database) or `redis` (Redis servers, tables still in PostgreSQL; with a SQLite `database`, on Redis alone: a hub with no domain, no `history_durable` namespace and no `dev_login`, each refused naming it); an engine that does not suit `database` stops the start"
        ) { (field, configuration) throws(ConfigurationError) in
            let text = try field.string()
            guard let name = EngineName(rawValue: text) else {
                throw field.error("expected one of \(EngineName.allCases.map(\.rawValue).joined(separator: ", ")), got '\(text)'")
            }
            configuration.engineName = name
        },
        ConfigurationKey(
            "redis_addresses", type: "list of addresses", default: "127.0.0.1:6379",
            doc:
                "the `redis` engine's servers, `host:port` or `redis://[[user]:password@]host[:port][/db]` (`rediss://` for TLS) each (user and password percent-encoded; db 0–15); several are shards, each channel on one by its name's hash. Passwords are never printed ([cluster.md](cluster.md))"
        ) { (field, configuration) throws(ConfigurationError) in
            configuration.redisAddresses = try redisAddresses(
                field, of: "Redis addresses (host:port or redis://user:password@host:port/db)", atLeastOne: "Redis server",
                shape: "host:port or redis://[[user]:password@]host[:port][/db] (port 1...65535, db 0...15)", distinct: ("server", { $0 }))
            configuration.redisAddressesGiven = true
        },
        redisFile(
            "redis_tls_ca_file", \.caFile,
            doc: "for `rediss://` servers: the CA (PEM) their certificates are checked against; the system's trust roots while unset"),
        redisFile("redis_tls_cert_file", \.certificateFile, doc: "for `rediss://` servers that ask for one: the client certificate (PEM)"),
        redisFile("redis_tls_key_file", \.keyFile, doc: "the private key (PEM) of `redis_tls_cert_file`"),
        ConfigurationKey(
            "redis_tls_server_name", type: "text", default: "the address's host",
            doc: "the name a `rediss://` server's certificate must carry, when it is not the host the address connects to"
        ) { (field, configuration) throws(ConfigurationError) in configuration.redisTLS.serverName = try field.string() },
        ConfigurationKey(
            "redis_sentinel_addresses", type: "list of addresses", default: "none",
            doc:
                "Redis Sentinel: the Sentinels to ask for the masters, `host:port` or `redis://[[user]:password@]host:port` (their own password; `rediss://` for TLS) each; needs `redis_sentinel_master_name`, and replaces `redis_addresses`, which cannot be set with it ([cluster.md](cluster.md))"
        ) { (field, configuration) throws(ConfigurationError) in
            configuration.redisSentinels = try redisAddresses(
                field, of: "Sentinel addresses (host:port or redis://user:password@host:port)", atLeastOne: "Sentinel",
                shape: "host:port or redis://[[user]:password@]host[:port] (port 1...65535)"
            ) { _, address in address.database == 0 }
        },
        ConfigurationKey(
            "redis_sentinel_master_name", type: "list of names", default: "none",
            doc:
                "the masters the Sentinels watch, one shard each: a name, or `redis://[[user]:password@]name[/db]` (`rediss://` for TLS) with the master's credentials and database; no port (the Sentinels give it). Centrifugo takes one name and several groups of Sentinels; Gondola takes several names of one group, which is how one group of Sentinels watches several masters"
        ) { (field, configuration) throws(ConfigurationError) in
            configuration.redisSentinelMasters = try redisAddresses(
                field, of: "master names (name or redis://user:password@name/db)", atLeastOne: "master",
                shape: "a master name or redis://[[user]:password@]name[/db] (no port: the Sentinels give it)",
                distinct: ("master", { $0.host })
            ) { entry, _ in !RedisAddress.namesPort(entry) }
        },
        ConfigurationKey(
            "redis_cluster_addresses", type: "list of addresses", default: "none",
            doc:
                "Redis Cluster: nodes to ask for the slots (`CLUSTER SLOTS`), `host:port` or `redis://[[user]:password@]host[:port]` (`rediss://` for TLS) each, with the credentials every node takes; database 0 only (a Redis Cluster has no other). Replaces `redis_addresses` and Sentinel, which cannot be set with it ([cluster.md](cluster.md))"
        ) { (field, configuration) throws(ConfigurationError) in
            configuration.redisClusterSeeds = try redisAddresses(
                field, of: "Redis Cluster node addresses (host:port or redis://user:password@host:port)", atLeastOne: "node of the Redis Cluster",
                shape: "host:port or redis://[[user]:password@]host[:port] (port 1...65535; a Redis Cluster has only database 0)"
            ) { _, address in address.database == 0 }
        },
        .integer(
            "redis_cluster_partitions", \.redisClusterPartitions, min: 1, max: 1_024,
            doc:
                "Redis Cluster: how many partitions the channels spread over, each in one slot with its own shard channel; every node of a Gondola cluster needs the same number. Centrifugo's sharded Pub/Sub partitions are the same idea"
        ),
        ConfigurationKey(
            "redis_prefix", type: "name without braces or spaces", default: defaults.redisKeys.prefix,
            doc:
                "what every key and Pub/Sub channel of the `redis` engine starts with (`<prefix>:bus`, `<prefix>:{<channel>}:stream`, …), so that several clusters or other applications share a server without seeing each other's data (Centrifugo's `redis_prefix`, whose default is `centrifugo`)"
        ) { (field, configuration) throws(ConfigurationError) in
            let prefix = try field.string()
            guard !prefix.isEmpty, !prefix.contains(where: { $0 == "{" || $0 == "}" || $0.isWhitespace }) else {
                throw field.error("must be a non-empty name without braces or spaces (a channel's keys are <prefix>:{<channel>}:…), got '\(prefix)'")
            }
            configuration.redisKeys = RedisKeys(prefix: prefix)
        },
        ConfigurationKey(
            "cluster_presence_ttl", type: "duration, at least 3s", default: DurationText.text(of: defaults.cluster.presenceTTL),
            doc:
                "the `redis` engine: how long a presence entry lasts unless its node adds it again (every third of it), so a killed node's subscribers leave within it"
        ) { (field, configuration) throws(ConfigurationError) in
            let ttl = try field.duration(allowZero: false)
            guard ttl >= .seconds(3) else { throw field.error("must be at least 3s (entries are added again every third of it), got \(ttl)") }
            configuration.cluster.presenceTTL = ttl
        },
        ConfigurationKey(
            "cluster_node_timeout", type: "duration, at least two heartbeats", default: DurationText.text(of: defaults.cluster.nodeTimeout),
            doc: "cluster mode: a node silent this long is dead (its presence gone); at least two heartbeats (2 s)"
        ) { (field, configuration) throws(ConfigurationError) in
            let timeout = try field.duration(allowZero: false)
            guard timeout >= configuration.cluster.heartbeat * 2 else {
                throw field.error("must be at least two heartbeats (\(configuration.cluster.heartbeat * 2)), got \(timeout)")
            }
            configuration.cluster.nodeTimeout = timeout
        },
        ConfigurationKey(
            "cluster_bus_linger", type: "duration", default: DurationText.text(of: defaults.cluster.busLinger),
            doc: "cluster mode: how long the bus writer holds a batch open to collect more"
        ) { (field, configuration) throws(ConfigurationError) in configuration.cluster.busLinger = try field.duration(allowZero: true) },
        ConfigurationKey(
            "cluster_bus_max_batch", type: "whole number 1 to 10000", default: "\(defaults.cluster.busMaxBatch)",
            doc: "cluster mode: most items in one bus transaction (1 turns batching off)"
        ) { (field, configuration) throws(ConfigurationError) in configuration.cluster.busMaxBatch = try field.integer(min: 1, max: 10_000) },
    ]

    /// The servers `field` lists (`what`, for its errors): at least one, each an address
    /// `accepts` takes (given the text and what it parsed as); another is refused as not `shape`,
    /// and two with the same `distinct` key are refused, their passwords left out.
    private static func redisAddresses(
        _ field: ValueReader, of what: String, atLeastOne: String, shape: String,
        distinct: (what: String, key: (RedisAddress) -> AnyHashable)? = nil, accepts: (String, RedisAddress) -> Bool = { _, _ in true }
    ) throws(ConfigurationError) -> [RedisAddress] {
        let entries = try field.list(of: what)
        guard !entries.isEmpty else { throw field.error("must name at least one \(atLeastOne)") }
        let addresses = try entries.map { (entry) throws(ConfigurationError) in
            guard let address = RedisAddress(entry), accepts(entry, address) else {
                throw field.error("'\(RedisAddress.redacted(entry))' is not \(shape)")
            }
            return address
        }
        if let distinct, Set(addresses.map(distinct.key)).count < addresses.count {
            throw field.error("names a \(distinct.what) twice: \(entries.map(RedisAddress.redacted).joined(separator: ", "))")
        }
        return addresses
    }

    /// One of the `rediss://` servers' PEM files.
    private static func redisFile(_ name: String, _ path: WritableKeyPath<RedisTLS, String?> & Sendable, doc: String) -> ConfigurationKey<
        ServerConfiguration
    > {
        ConfigurationKey(name, type: "readable file", default: "none", doc: doc) { (field, configuration) throws(ConfigurationError) in
            configuration.redisTLS[keyPath: path] = try field.readableFile()
        }
    }
}
