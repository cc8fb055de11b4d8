import GondolaCrash
import GondolaDomain
import GondolaTravel
import GondolaServices

/// Every domain this server can run, one registration line each, given the
/// configuration and the outbound notifiers. `domains` in the configuration picks
/// which of them are installed; the schemas of all of them are kept.
enum BuiltInDomains {
    static func all(_ configuration: ServerConfiguration, telegram: any TelegramNotifier) -> [any Domain] {
        [
            TravelDomain(resortsFolder: configuration.resorts, settings: configuration.locationSettings, telegram: telegram,
                         telegramWebhookSecret: configuration.telegramWebhookSecret),
            CrashDomain(smsWebhookURL: configuration.smsWebhookURL, smsWebhookToken: configuration.smsWebhookToken,
                        linkTemplate: configuration.crashLinkTemplate),
        ]
    }

    /// The domains' names, for validating `domains`.
    static var names: [String] { all(ServerConfiguration(), telegram: NoTelegramBot()).map(\.name) }

    /// The namespaces the domains provide, which the configuration may not redefine.
    static var namespaces: Set<String> {
        all(ServerConfiguration(), telegram: NoTelegramBot()).reduce(into: []) { $0.formUnion($1.namespaces) }
    }
}
