import CoreMetrics
import GondolaDomain
import GondolaHub
import GondolaProtocol
import GondolaServices
import GondolaStore
import Logging

/// The travel domain wired into a hub: directory (users, trips, friends), live
/// locations with their channels, resorts and maps, chats, and the RPC and server
/// API methods docs/api/travel.md lists.
public final class TravelService: Sendable {
    public let directory: Directory
    public let resorts: ResortCatalog
    public let locations: LocationService
    public let chats: ChatService
    public let events: EventService
    let fences: FenceService
    /// Handles the Telegram bot's webhook updates (RSVP buttons).
    public let telegramWebhook: TelegramWebhook
    /// The Telegram Bot API calls (invitations, button answers), made in the background.
    public let telegramCalls: OutboundCalls
    let node: Node
    let directoryService: DirectoryService
    let maps: MapService
    let broadcasts: BroadcastService
    let notices: NoticeBoard
    let logger: Logger

    /// Loads the directory from `storage` and builds the services; `registrations` are what
    /// they add to `node`. In a cluster (PostgreSQL storage) the directory, new chats and
    /// positions are replicated between the nodes.
    /// - Parameters:
    ///   - telegram: sends invitations and button answers through the Telegram bot, in the
    ///     background (`telegramCalls`): no request waits on the Bot API.
    ///   - notices: where chat messages, broadcasts, invitations, answers and fence events are
    ///     posted for the phones of users who are not connected.
    ///   - fenceWebhooks: how fence events are posted to the trips' webhooks.
    public init(
        node: Node, storage: DomainStorage, resorts: ResortCatalog, settings: LocationSettings,
        telegram: any TelegramNotifier = NoTelegramBot(), notices: NoticeBoard = NoticeBoard(),
        fenceWebhooks: FenceWebhookPolicy = FenceWebhookPolicy(), metrics: any MetricsFactory = NOOPMetricsHandler.instance,
        logger: Logger = Logger(label: "gondola.travel")
    ) async throws {
        let repositories = TravelRepositories(storage)
        telegramCalls = OutboundCalls(service: "telegram", store: storage.outboundCalls, metrics: metrics, logger: logger) { call in
            try await TelegramCalls.perform(call, with: telegram)
        }
        self.node = node
        self.resorts = resorts
        self.notices = notices
        self.logger = logger
        directory = try await Directory(repository: repositories.directory) { [node] change in
            node.replicate(topic: Directory.replicaTopic, change)
        }
        fences = try await FenceService(
            node: node, directory: directory, repository: repositories.fences, notices: notices, webhookPolicy: fenceWebhooks,
            metrics: metrics, logger: logger)
        locations = LocationService(node: node, directory: directory, resorts: resorts, settings: settings, fences: fences)
        directoryService = DirectoryService(directory: directory, locations: locations, resorts: resorts) { [node] user, push in
            node.tell(user, push)
        }
        maps = MapService(locations: locations, resorts: resorts)
        broadcasts = BroadcastService(node: node, directory: directory, notices: notices)
        chats = try await ChatService(node: node, directory: directory, repository: repositories.chats, notices: notices)
        events = EventService(
            node: node, directory: directory, locations: locations, repository: repositories.events,
            telegramCalls: telegramCalls, notices: notices, logger: logger)
        telegramWebhook = TelegramWebhook(events: events, calls: telegramCalls, logger: logger)
    }

    /// The RPC methods, the built-in namespaces, what follows the other nodes of a cluster,
    /// and the connect hook that records each signed-in user.
    public var registrations: NodeRegistrations {
        var registrations = NodeRegistrations()
        directoryService.registerRPC(in: &registrations)
        locations.registerRPC(in: &registrations)
        maps.registerRPC(in: &registrations)
        chats.registerRPC(in: &registrations)
        broadcasts.registerRPC(in: &registrations)
        events.registerRPC(in: &registrations)
        fences.registerRPC(in: &registrations)
        TravelNamespaces.provide(in: &registrations, locations: locations, directory: directory, chats: chats, events: events)
        followCluster(in: &registrations)
        registrations.onConnect { [directory, logger] credentials in
            do {
                try await directory.connected(credentials.user, name: Self.displayName(in: credentials.info))
            } catch {
                logger.error("recording a connected user failed", metadata: ["user": "\(credentials.user)", "error": "\(error)"])
            }
        }
        return registrations
    }

    /// The name a connection token's `info` gives its user (`{"name": ...}`), when it is a
    /// usable display name (a non-empty text of at most `DirectoryService.maxNameLength`).
    static func displayName(in info: RawJSON?) -> String? {
        guard let info else { return nil }
        return try? RequestFields(info.value).optionalText("name", maxLength: DirectoryService.maxNameLength)
    }

    /// Applies what the other nodes of a cluster replicate, and reloads the in-memory
    /// views when the node (re)gains the bus. Alone, a node hears nothing.
    private func followCluster(in registrations: inout NodeRegistrations) {
        registrations.onReplica(
            topic: Directory.replicaTopic, DirectoryChange.self, effect: "applies the directory change to the in-memory directory"
        ) { [directory, locations] change in
            directory.apply(change)
            locations.directoryChanged(change)
        }
        registrations.onReplica(topic: ChatService.replicaTopic, ChatReplica.self, effect: "adds the new chat to the chats in memory") {
            [chats] replica in chats.apply(replica: replica.chat)
        }
        registrations.onReplica(
            topic: LocationService.replicaTopic, PositionReplica.self,
            effect: "records the position on nodes that follow its region (a regional event)"
        ) { [locations] replica in locations.apply(replica: replica) }
        registrations.onReplica(
            topic: LocationService.regionTopic, PositionReplica.self,
            effect: "records the position and the traveller's new region on every node"
        ) { [locations] replica in locations.apply(replica: replica) }
        registrations.onReplica(topic: FenceService.replicaTopic, TripFencesChanged.self, effect: "reads the trip's fences again") {
            [fences, logger] change in
            let trip = change.trip
            Task {
                do {
                    try await fences.reload(trip: trip)
                } catch {
                    logger.error("reading a trip's fences failed", metadata: ["trip": "\(trip)", "error": "\(error)"])
                }
            }
        }
        registrations.onReplica(
            topic: FenceService.positionTopic, PositionReplica.self,
            effect: "judges the position against the fences of the traveller's trips on every node"
        ) { [fences] replica in fences.apply(replica: replica) }
        registrations.onResynchronize { [directory, chats, locations, fences, logger] in
            do {
                try await directory.reload()
                try await chats.reload()
                try await fences.reload()
                locations.directoryReloaded()
            } catch {
                logger.error("travel reload failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Server API methods for trip, fence and staff administration.
    public var adminMethods: ServerAPIMethods {
        var api = ServerAPIMethods()
        directoryService.registerServerAPI(in: &api)
        fences.registerServerAPI(in: &api)
        return api
    }

    /// Publishes position frames, expires stale positions and makes the Telegram calls
    /// until cancelled.
    public func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.locations.run() }
            group.addTask { await self.telegramCalls.run() }
            group.addTask { await self.fences.run() }
        }
    }
}

/// The travel domain's repositories on one storage engine.
struct TravelRepositories {
    let directory: any TravelRepository
    let chats: any ChatRepository
    let events: any EventRepository
    let fences: any FenceRepository

    init(_ storage: DomainStorage) {
        switch storage {
        case let .sqlite(database):
            directory = SQLiteTravelRepository(database: database)
            chats = SQLiteChatRepository(database: database)
            events = SQLiteEventRepository(database: database)
            fences = SQLiteFenceRepository(database: database)
        case let .postgres(pool, bus):
            directory = PostgresTravelRepository(pool: pool)
            chats = PostgresChatRepository(pool: pool, bus: bus)
            events = PostgresEventRepository(pool: pool)
            fences = PostgresFenceRepository(pool: pool)
        }
    }
}
