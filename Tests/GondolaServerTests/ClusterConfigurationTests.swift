import GondolaServer
import Testing

/// The cluster mode's configuration keys: good values taken, bad ones named with their source.
@Suite struct ClusterConfigurationTests {
    @Test func clusterKeysAreReadFromTheEnvironment() throws {
        let loaded = try ConfigurationLoader.load(
            file: nil,
            environment: [
                "GONDOLA_DATABASE": "postgres://gondola@/hub?host=/run/pg", "GONDOLA_NODE_NAME": "edge-1", "GONDOLA_DATABASE_POOL_SIZE": "4",
                "GONDOLA_CLUSTER_NODE_TIMEOUT": "3s", "GONDOLA_CLUSTER_BUS_LINGER": "2ms", "GONDOLA_CLUSTER_BUS_MAX_BATCH": "1",
            ], flags: [:])
        #expect(loaded.isCluster && loaded.dataFolder == "var" && loaded.hub.nodeName == "edge-1" && loaded.databasePoolSize == 4)
        #expect(loaded.cluster.nodeTimeout == .seconds(3) && loaded.cluster.busLinger == .milliseconds(2) && loaded.cluster.busMaxBatch == 1)
        #expect(try !ConfigurationLoader.load(file: nil, environment: [:], flags: [:]).isCluster)
    }

    @Test(arguments: [
        ("GONDOLA_DATABASE", "postgres://@db/hub", "names no user"),
        ("GONDOLA_DATABASE_POOL_SIZE", "1", "GONDOLA_DATABASE_POOL_SIZE"),
        ("GONDOLA_CLUSTER_NODE_TIMEOUT", "1s", "at least two heartbeats"),
        ("GONDOLA_CLUSTER_BUS_MAX_BATCH", "0", "GONDOLA_CLUSTER_BUS_MAX_BATCH"),
        ("GONDOLA_CLUSTER_BUS_MAX_BATCH", "20000", "at most 10000, got 20000"),
        ("GONDOLA_CLUSTER_BUS_LINGER", "soon", "GONDOLA_CLUSTER_BUS_LINGER"),
    ])
    func badClusterValuesStopTheStartNamingThem(variable: String, value: String, message: String) {
        #expect {
            try ConfigurationLoader.load(file: nil, environment: [variable: value], flags: [:])
        } throws: { error in
            "\(error)".contains(message)
        }
    }

    @Test func theEngineFollowsTheDatabaseUnlessNamed() throws {
        let postgres = "postgres://gondola@/hub?host=/run/pg"
        #expect(try ConfigurationLoader.load(file: nil, environment: [:], flags: [:]).engine() == .memory)
        #expect(try ConfigurationLoader.load(file: nil, environment: ["GONDOLA_DATABASE": postgres], flags: [:]).engine() == .postgres)
        let redis = try ConfigurationLoader.load(
            file: nil,
            environment: [
                "GONDOLA_DATABASE": postgres, "GONDOLA_ENGINE": "redis", "GONDOLA_REDIS_ADDRESSES": "10.0.0.5:6379, redis://10.0.0.6:6380",
                "GONDOLA_CLUSTER_PRESENCE_TTL": "30s",
            ], flags: [:])
        #expect(try redis.engine() == .redis)
        #expect(redis.redisAddresses.map(\.description) == ["10.0.0.5:6379", "10.0.0.6:6380"])
        #expect(redis.cluster.presenceTTL == .seconds(30))
        // Redis alone: a hub with no domain, no PostgreSQL database.
        let alone = try ConfigurationLoader.load(file: nil, environment: ["GONDOLA_ENGINE": "redis", "GONDOLA_DOMAINS": ""], flags: [:])
        #expect(try alone.engine() == .redis && alone.isCluster && !alone.usesPostgres)
    }

    @Test(arguments: [
        (["GONDOLA_ENGINE": "kafka"], "expected one of memory, postgres, redis, got 'kafka'"),
        (["GONDOLA_ENGINE": "postgres"], "engine 'postgres' runs a cluster and needs database to be a postgres:// URL"),
        (["GONDOLA_ENGINE": "redis"], "set domains to [] or database to a postgres:// URL (the domains keep their tables there); enabled now: "),
        (["GONDOLA_ENGINE": "redis", "GONDOLA_DOMAINS": "crash"], "enabled now: crash"),
        (["GONDOLA_ENGINE": "redis", "GONDOLA_DOMAINS": "", "GONDOLA_DEV_LOGIN": "true"], "dev_login signs in users kept in PostgreSQL"),
        (
            ["GONDOLA_ENGINE": "redis", "GONDOLA_DOMAINS": "", "GONDOLA_NAMESPACES": #"[{"name": "ledger", "history_durable": true}]"#],
            "namespace 'ledger' has history_durable"
        ),
        (["GONDOLA_ENGINE": "memory", "GONDOLA_DATABASE": "postgres://gondola@db/hub"], "engine 'memory' keeps a node alone"),
        (["GONDOLA_REDIS_ADDRESSES": "10.0.0.5:99999"], "'10.0.0.5:99999' is not host:port"),
        (["GONDOLA_REDIS_ADDRESSES": " , "], "must name at least one Redis server"),
        (["GONDOLA_REDIS_ADDRESSES": "a:1,a:1"], "names a server twice"),
        (["GONDOLA_CLUSTER_PRESENCE_TTL": "1s"], "must be at least 3s"),
    ])
    func badEngineSettingsStopTheStartNamingThem(environment: [String: String], message: String) {
        #expect {
            try ConfigurationLoader.load(file: nil, environment: environment, flags: [:])
        } throws: { error in
            "\(error)".contains(message)
        }
    }
}
