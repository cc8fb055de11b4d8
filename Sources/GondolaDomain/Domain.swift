import CoreMetrics
import GRDB
import GondolaHub
import GondolaPostgres
import GondolaProtocol
import GondolaServices
import GondolaStore
import Hummingbird
import Logging

/// One app's backend on the hub: its schema, and what its install returns — the RPC
/// methods, namespaces, replica handlers and connect hooks it adds to the node, and what
/// the server serves for it (server API methods, HTTP routes, a background task). The
/// server installs a list of them once no name is claimed twice; a domain touches no hub
/// or server file, and registers nothing on the node itself.
public protocol Domain: Sendable {
    /// The name the configuration's `domains` lists.
    var name: String { get }

    /// The namespaces the domain provides; the configuration may not redefine them,
    /// whether the domain is enabled or not.
    var namespaces: Set<String> { get }

    /// The configuration keys the domain reads from its `DomainSettings`; the loader
    /// accepts them besides the server's own.
    var settingKeys: [ConfigurationKeyInfo] { get }

    /// Registers the domain's schema changes, oldest first. Their identifiers are
    /// unique across domains and never change once released.
    func registerMigrations(in migrator: inout DatabaseMigrator)

    /// Registers the domain's PostgreSQL schema (cluster mode), under the same rules; its
    /// `install` then gets `DomainStorage.postgres` and keeps its data there.
    func registerPostgresMigrations(in migrator: inout PostgresMigrator)

    /// Checks the values of the domain's settings as `install` reads them, opening nothing
    /// (`gondola checkconfig`, and the configuration's loading); the error names the key.
    func checkSettings() throws(DomainSetupError)

    /// Builds the domain's services on the opened database and returns what they add to
    /// the node and the server.
    func install(in context: DomainContext) async throws -> InstalledDomain
}

extension Domain {
    public var settingKeys: [ConfigurationKeyInfo] { [] }
    public func checkSettings() throws(DomainSetupError) {}
    public func registerPostgresMigrations(in migrator: inout PostgresMigrator) {}
}

/// Where a domain keeps its data: the SQLite file of a single node, or the
/// PostgreSQL database the nodes of a cluster share.
public enum DomainStorage: Sendable {
    case sqlite(GondolaDatabase)
    /// The pool, and the bus that sends cluster events inside a transaction.
    case postgres(PostgresPool, bus: any TransactionalBus)
}

/// What a domain is given when it is installed.
public struct DomainContext: Sendable {
    public let node: Node
    public let storage: DomainStorage
    /// Verifies the connection tokens that HTTP routes take as `Authorization: Bearer`.
    public let authentication: BearerAuthentication
    /// Signs and checks links that open one resource without signing in.
    public let links: SignedLinks
    /// Mints connection tokens for a domain's own sign-in.
    public let signIn: SignInTokens
    /// The folder beside the database where domains keep their files (one subfolder each).
    public let dataFolder: String
    /// Where domains post news for their users' phones (the push domain takes it).
    public let notices: NoticeBoard
    /// Where domains' counters, gauges and timers go (the server's `/metrics`).
    public let metrics: any MetricsFactory
    /// The domain's logger, set for each domain by the server (its lines carry the domain's name).
    public var logger: Logger

    public init(
        node: Node, storage: DomainStorage, authentication: BearerAuthentication, links: SignedLinks, signIn: SignInTokens,
        dataFolder: String, notices: NoticeBoard = NoticeBoard(), metrics: any MetricsFactory = NOOPMetricsHandler.instance,
        logger: Logger
    ) {
        self.node = node
        self.storage = storage
        self.authentication = authentication
        self.links = links
        self.signIn = signIn
        self.dataFolder = dataFolder
        self.notices = notices
        self.metrics = metrics
        self.logger = logger
    }
}

/// What an installed domain adds: to the node (`registrations`) and to the server.
public struct InstalledDomain: Sendable {
    /// The domain's main service, for embedding programs (`GondolaServer.service(_:)`).
    public let service: any Sendable
    /// The RPC methods, namespaces, replica handlers and connect hooks for the node.
    public let registrations: NodeRegistrations
    /// Its server API methods (`POST /api/<name>` with the API key).
    public let serverMethods: ServerAPIMethods
    /// Adds the domain's HTTP routes.
    public let routes: @Sendable (HTTPRouter) -> Void
    /// Runs until cancelled while the server runs.
    public let background: (@Sendable () async -> Void)?

    public init(
        service: any Sendable, registrations: NodeRegistrations = NodeRegistrations(), serverMethods: ServerAPIMethods = ServerAPIMethods(),
        routes: @escaping @Sendable (HTTPRouter) -> Void = { _ in },
        background: (@Sendable () async -> Void)? = nil
    ) {
        self.service = service
        self.registrations = registrations
        self.serverMethods = serverMethods
        self.routes = routes
        self.background = background
    }
}

/// A domain that cannot start with what it was given (a missing folder, a bad
/// file); the message names the setting and the value.
public struct DomainSetupError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
