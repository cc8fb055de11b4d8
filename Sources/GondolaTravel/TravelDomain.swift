import GRDB
import GondolaDomain
import GondolaHub
import GondolaPostgres
import GondolaServices

/// The travel app's backend as a domain: live locations, trips, friends, chats,
/// events, resort maps and the Telegram bot's webhook.
public struct TravelDomain: Domain {
    public let name = "travel"
    public var namespaces: Set<String> { TravelNamespaces.names }

    let resortsFolder: String
    let settings: LocationSettings
    let telegram: any TelegramNotifier
    let telegramWebhookSecret: String

    /// - Parameters:
    ///   - resortsFolder: the folder of resort files for the maps.
    ///   - telegram: sends invitations and button answers through the Telegram bot.
    ///   - telegramWebhookSecret: what the bot's webhook calls must carry (none: every call is refused).
    public init(resortsFolder: String, settings: LocationSettings, telegram: any TelegramNotifier, telegramWebhookSecret: String) {
        self.resortsFolder = resortsFolder
        self.settings = settings
        self.telegram = telegram
        self.telegramWebhookSecret = telegramWebhookSecret
    }

    public func registerMigrations(in migrator: inout DatabaseMigrator) {
        TravelSchema.registerMigrations(in: &migrator)
    }

    public func registerPostgresMigrations(in migrator: inout PostgresMigrator) {
        TravelPostgresSchema.register(in: &migrator)
    }

    public func install(in context: DomainContext) async throws -> InstalledDomain {
        let resorts: ResortCatalog
        do {
            resorts = try ResortCatalog(folder: resortsFolder)
        } catch {
            throw DomainSetupError("resorts: \(error)")
        }
        if resorts.resorts.isEmpty {
            context.logger.warning("no resorts loaded", metadata: ["folder": "\(resortsFolder)"])
        }
        let travel = try await TravelService(
            node: context.node, storage: context.storage, resorts: resorts, settings: settings,
            telegram: telegram, notices: context.notices, metrics: context.metrics, logger: context.logger)
        let webhook = TelegramWebhookEndpoint(secret: telegramWebhookSecret, webhook: travel.telegramWebhook)
        return InstalledDomain(
            service: travel,
            registrations: travel.registrations,
            serverMethods: travel.adminMethods,
            routes: { router in webhook.addRoutes(to: router) },
            background: { await travel.run() })
    }
}
