@_spi(Engine) import GondolaCluster
import GondolaDomain
import GondolaHub
import GondolaPostgres
import Logging
import NIOPosix

/// Opens the cluster mode's PostgreSQL database: the pool, the schema (core,
/// cluster and every built-in domain's tables, migrated once by whichever node starts
/// first) and the link of the configured engine (PostgreSQL's bus, or Redis); on Redis
/// alone, only the link.
enum ClusterStorage {
    static func open(_ configuration: ServerConfiguration, domains: [any Domain], nodeUID: String, logger: Logger) async throws -> any ClusterNodeLink
    {
        guard configuration.usesPostgres else {
            // Redis alone: a hub with no domain (`ServerConfiguration.checkRedisOnly`).
            return redisLink(configuration, pool: nil, nodeUID: nodeUID, logger: logger)
        }
        let location: PostgresLocation
        do {
            location = try PostgresLocation(url: configuration.database)
        } catch {
            throw ConfigurationError("database: \(error)")
        }
        let pool = try PostgresPool(location: location, size: configuration.databasePoolSize, logger: logger)
        var migrator = PostgresSchema.migrator
        PostgresCluster.register(in: &migrator)
        for domain in domains { domain.registerPostgresMigrations(in: &migrator) }
        do {
            let applied = try await migrator.migrate(pool)
            if !applied.isEmpty { logger.info("database migrated", metadata: ["steps": "\(applied.joined(separator: ", "))"]) }
        } catch {
            throw ConfigurationError("database \(location): cannot open: \(String(reflecting: error))")
        }
        guard try configuration.engine() == .redis else {
            return PostgresCluster(pool: pool, nodeUID: nodeUID, settings: configuration.cluster, logger: logger)
        }
        return redisLink(configuration, pool: pool, nodeUID: nodeUID, logger: logger)
    }

    /// The `redis` engine's link, with the tables in `pool` or on Redis alone.
    private static func redisLink(_ configuration: ServerConfiguration, pool: PostgresPool?, nodeUID: String, logger: Logger) -> RedisCluster {
        RedisCluster(
            pool: pool, servers: configuration.redisServers, nodeUID: nodeUID, settings: configuration.cluster,
            keys: configuration.redisKeys, group: MultiThreadedEventLoopGroup.singleton, logger: logger)
    }
}
