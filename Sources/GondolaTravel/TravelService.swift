import GondolaHub
import GondolaProtocol
import GondolaStore
import Logging
import GondolaServices

/// The travel domain wired into a hub: directory (users, trips, friends), live
/// locations with their channels, resorts and maps, chats, and the RPC and server
/// API methods the README's "Travel API" section lists.
public final class TravelService: Sendable {
    public let directory: Directory
    public let resorts: ResortCatalog
    public let locations: LocationService
    public let chats: ChatService
    public let events: EventService
    /// Handles the Telegram bot's webhook updates (RSVP buttons).
    public let telegramWebhook: TelegramWebhook
    let node: Node
    let directoryRPC: DirectoryRPC

    /// Loads the directory from `database`, registers the RPC methods and takes
    /// over the built-in namespaces of `node`.
    /// - Parameter telegram: sends invitations and button answers through the Telegram bot.
    public init(node: Node, database: GondolaDatabase, resorts: ResortCatalog, settings: LocationSettings,
                telegram: any TelegramNotifier = NoTelegramBot(), logger: Logger = Logger(label: "gondola.travel")) throws {
        self.node = node
        self.resorts = resorts
        directory = try Directory(repository: TravelRepository(database: database))
        locations = LocationService(node: node, directory: directory, resorts: resorts, settings: settings, logger: logger)
        directoryRPC = DirectoryRPC(directory: directory, locations: locations, resorts: resorts) { [node, logger] user, push in
            do {
                try node.publish(channel: "personal:#\(user)", data: RawJSON(push))
            } catch {
                logger.error("personal push failed", metadata: ["user": "\(user)", "error": "\(error)"])
            }
        }
        directoryRPC.register(on: node.rpc)
        MapRPC(locations: locations, resorts: resorts).register(on: node.rpc)
        chats = try ChatService(node: node, directory: directory, repository: ChatRepository(database: database))
        ChatRPC(chats: chats, directory: directory).register(on: node.rpc)
        BroadcastRPC(node: node, directory: directory).register(on: node.rpc)
        events = EventService(node: node, directory: directory, locations: locations, repository: EventRepository(database: database),
                              telegram: telegram, logger: logger)
        EventRPC(events: events, directory: directory).register(on: node.rpc)
        telegramWebhook = TelegramWebhook(events: events, telegram: telegram, logger: logger)
        TravelNamespaces.install(on: node, locations: locations, directory: directory, chats: chats, events: events)
    }

    /// Server API methods for trip and staff administration.
    public var adminMethods: [String: @Sendable (JSON) async throws(HubError) -> JSON] {
        Dictionary(uniqueKeysWithValues: directoryRPC.adminMethods.map { ($0.name, $0.method) })
    }

    /// Publishes position frames and expires stale positions until cancelled.
    public func run() async { await locations.run() }
}
