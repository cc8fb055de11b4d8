import GRDB
import GondolaDomain
import GondolaHub
import GondolaPostgres
import GondolaServices
import GondolaStore

/// The travel app's backend as a domain: live locations, trips, friends, chats,
/// events, resort maps and the Telegram bot's webhook.
public struct TravelDomain: Domain {
    public let name = "travel"
    public var namespaces: Set<String> { TravelNamespaces.names }
    public var settingKeys: [ConfigurationKeyInfo] { TravelSettings.keys }

    let settings: DomainSettings
    let telegram: any TelegramNotifier
    let telegramBotToken: String
    let devLogin: Bool

    /// - Parameters:
    ///   - settings: the values of `TravelSettings.keys` the configuration gave.
    ///   - telegram: sends invitations and button answers through the Telegram bot.
    ///   - telegramBotToken: verifies Telegram logins (`telegram_bot_token`; empty: none).
    ///   - devLogin: whether the server offers the development login, which the host page shows.
    public init(settings: DomainSettings, telegram: any TelegramNotifier, telegramBotToken: String = "", devLogin: Bool = false) {
        self.settings = settings
        self.telegram = telegram
        self.telegramBotToken = telegramBotToken
        self.devLogin = devLogin
    }

    public func registerMigrations(in migrator: inout DatabaseMigrator) {
        TravelSchema.registerMigrations(in: &migrator)
    }

    public func registerPostgresMigrations(in migrator: inout PostgresMigrator) {
        TravelPostgresSchema.register(in: &migrator)
    }

    public func checkSettings() throws(DomainSetupError) { _ = try TravelSettings(settings) }

    public func install(in context: DomainContext) async throws -> InstalledDomain {
        let settings = try TravelSettings(self.settings)
        let resorts: ResortCatalog
        do {
            resorts = try ResortCatalog(folder: settings.resortsFolder)
        } catch {
            throw DomainSetupError("resorts: \(error)")
        }
        if resorts.resorts.isEmpty {
            context.logger.warning("no resorts loaded", metadata: ["folder": "\(settings.resortsFolder)"])
        }
        let travel = try await TravelService(
            node: context.node, storage: context.storage, resorts: resorts, settings: settings.location,
            telegram: telegram, notices: context.notices, fenceWebhooks: settings.fenceWebhooks, metrics: context.metrics, logger: context.logger)
        let webhook = TelegramWebhookEndpoint(secret: settings.telegramWebhookSecret, webhook: travel.telegramWebhook)
        let login = TelegramLoginEndpoint(botToken: telegramBotToken, users: Self.users(context.storage), signIn: context.signIn)
        let page = HostPage(settings: settings.hostPage, devLogin: devLogin, telegramLogin: !telegramBotToken.isEmpty)
        return InstalledDomain(
            service: travel,
            registrations: travel.registrations,
            serverMethods: travel.adminMethods,
            routes: { router in
                webhook.addRoutes(to: router)
                login.addRoutes(to: router)
                page.addRoutes(to: router)
            },
            background: { await travel.run() })
    }

    /// The users of `storage`, where Telegram logins find or create their user.
    private static func users(_ storage: DomainStorage) -> any UserRepository {
        switch storage {
        case let .sqlite(database): SQLiteUserRepository(database: database)
        case let .postgres(pool, _): PostgresUserRepository(pool: pool)
        }
    }
}
