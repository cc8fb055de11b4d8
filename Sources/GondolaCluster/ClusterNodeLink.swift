@_spi(Engine) import GondolaHub
import GondolaPostgres

/// What a cluster node runs, whichever engine carries its bus: the link to the
/// other nodes over the PostgreSQL database they share (`PostgresCluster`), or over
/// Redis with the tables in that database or without one (`RedisCluster`).
@_spi(Engine) public protocol ClusterNodeLink: ClusterLink, TransactionalBus {
    /// The shared database, where the domains keep their tables; nil on Redis alone.
    var sharedDatabase: PostgresPool? { get }
    /// Receives the bus and keeps the node's heartbeat until cancelled.
    func run() async
    /// The engine's parts and whether each works now, for `/health` and `/metrics`.
    var health: EngineHealth { get }
}

/// The state of a cluster's engine as one node sees it.
public struct EngineHealth: Sendable, Equatable {
    /// One part of the engine: PostgreSQL's bus, or one Redis shard.
    public struct Part: Sendable, Equatable {
        public let name: String
        public let up: Bool
        /// The last measured round trip to it (a connection check's), when the part measures one.
        public let roundTrip: Duration?

        public init(name: String, up: Bool, roundTrip: Duration? = nil) {
            self.name = name
            self.up = up
            self.roundTrip = roundTrip
        }
    }

    /// `postgres` or `redis`.
    public let engine: String
    public let parts: [Part]

    /// Whether every part works.
    public var isUp: Bool { parts.allSatisfy(\.up) }
}
