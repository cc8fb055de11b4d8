import GondolaHub
import GondolaProtocol
import Logging
import ServiceLifecycle
import UnixSignals

/// Which keys a running hub takes on a reload (SIGHUP), and what a reload did.
public enum ConfigurationReload {
    /// The keys a reload puts in force without a restart: token keys and secrets, namespaces,
    /// the client limits, origins and proxies. Any other key that changed keeps its running
    /// value until a restart, and the reload says so.
    public static let liveKeys = Set(ConfigurationLoader.table.filter(\.info.reloadable).map(\.name))

    /// What a reload changed.
    public struct Outcome: Sendable, Equatable {
        /// The keys whose new values are in force, sorted.
        public var applied: [String]
        /// The keys that changed but keep their running values until a restart, sorted.
        public var needRestart: [String]
        /// Subscriptions ended because the new namespaces no longer allow them.
        public var endedSubscriptions: Int
    }

    /// The keys whose values differ between `running` and `newer` (given in one, changed, or left out).
    static func changedKeys(from running: [String: JSON], to newer: [String: JSON]) -> [String] {
        Set(running.keys).union(newer.keys).filter { running[$0] != newer[$0] }.sorted()
    }
}

extension GondolaServer {
    /// Puts `newer` in force without dropping a connection: its token keys verify from now on,
    /// its namespaces and limits govern new commands (and end the subscriptions they no longer
    /// allow, with unsubscribe code 2000), its origins and connection limits admit new
    /// connections, and its proxies take new requests. `running` and `newer` are the values
    /// the keys were given, to tell what changed. A configuration with a problem is refused
    /// whole before anything changes.
    public func reload(_ newer: ConfigurationCheck, running: ConfigurationCheck) async throws(ConfigurationError) -> ConfigurationReload.Outcome {
        guard newer.problems.isEmpty else { throw ConfigurationError(newer.problems.map(\.description).joined(separator: "\n")) }
        let changed = ConfigurationReload.changedKeys(from: running.values, to: newer.values)
        let configuration = newer.configuration
        // Every step that can fail runs before anything is put in force.
        var keys = try configuration.tokenKeys()
        keys.remoteKeySet = jwks
        let tokens: ConnectionTokens
        do {
            tokens = try await ConnectionTokens(keys: keys)
        } catch {
            throw ConfigurationError(error.description)
        }
        try configuration.checkProxyNames()
        self.tokens.adopt(tokens)
        admission.reconfigure(
            origins: configuration.allowedOrigins, connectionLimit: configuration.clientConnectionLimit,
            connectionRateLimit: configuration.clientConnectionRateLimit)
        proxyTransport.reconfigure(
            endpoints: configuration.liveProxyEndpoints, named: configuration.namedProxies, maxInFlight: configuration.proxyMaxInFlight)
        let ended = node.reconfigure(configuration.hub)
        return ConfigurationReload.Outcome(
            applied: changed.filter { ConfigurationReload.liveKeys.contains($0) },
            needRestart: changed.filter { !ConfigurationReload.liveKeys.contains($0) }, endedSubscriptions: ended)
    }
}

/// Reloads the configuration each time the process gets SIGHUP: `load` reads it again from
/// where it came from (the file, `GONDOLA_*` variables and flags), and the server puts it in
/// force (`GondolaServer.reload`). A configuration that does not load is refused whole and
/// logged with every problem; the running one stays. Signals that arrive during a reload
/// are handled after it, one after another.
struct HangupReload: Service {
    let server: GondolaServer
    let load: @Sendable () -> ConfigurationCheck
    /// What the running configuration's keys were given.
    let initial: ConfigurationCheck
    let logger: Logger

    func run() async throws {
        var running = initial
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            let newer = load()
            do {
                let outcome = try await server.reload(newer, running: running)
                // A key that needs a restart still runs with its old value, and is named again at the next reload.
                var values = newer.values
                for key in outcome.needRestart { values[key] = running.values[key] }
                running = ConfigurationCheck(configuration: newer.configuration, problems: [], values: values)
                logger.notice(
                    "configuration reloaded",
                    metadata: [
                        "applied": .array(outcome.applied.map { .string($0) }), "restart_needed": .array(outcome.needRestart.map { .string($0) }),
                        "ended_subscriptions": "\(outcome.endedSubscriptions)",
                    ])
                if !outcome.needRestart.isEmpty {
                    logger.warning(
                        "configuration keys changed that take effect only at a restart; they keep their running values",
                        metadata: ["keys": .array(outcome.needRestart.map { .string($0) })])
                }
            } catch {
                logger.error(
                    "configuration not reloaded; the running one stays",
                    metadata: ["problems": .array(error.description.split(separator: "\n").map { .string(String($0)) })])
            }
        }
    }
}
