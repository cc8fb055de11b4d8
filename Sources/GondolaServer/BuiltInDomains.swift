import GondolaCrash
import GondolaDomain
import GondolaForms
import GondolaHub
import GondolaPush
import GondolaRentals
import GondolaServices
import GondolaTravel

/// Every domain this server can run, one registration line each, given the
/// configuration (a domain's own keys reach it as `DomainSettings`) and the outbound notifiers. `domains` in the configuration picks
/// which of them are installed; the schemas of all of them are kept.
enum BuiltInDomains {
    static func all(_ configuration: ServerConfiguration, telegram: any TelegramNotifier) -> [any Domain] {
        [
            TravelDomain(
                settings: configuration.domainSettings, telegram: telegram, telegramBotToken: configuration.telegramBotToken,
                devLogin: configuration.devLogin),
            CrashDomain(settings: configuration.domainSettings),
            RentalsDomain(settings: configuration.domainSettings, listenURL: "http://\(configuration.listenHost):\(configuration.listenPort)"),
            FormsDomain(settings: configuration.domainSettings),
            PushDomain(settings: configuration.domainSettings),
        ]
    }

    /// The domains `domains` enables (every one when it is not set).
    static func enabled(by configuration: ServerConfiguration) -> [any Domain] {
        all(configuration, telegram: NoTelegramBot()).filter { configuration.domains?.contains($0.name) ?? true }
    }

    /// Checks `domain`'s settings; the error names the domain and the key.
    static func checkSettings(of domain: any Domain) throws(ConfigurationError) {
        do throws(DomainSetupError) {
            try domain.checkSettings()
        } catch {
            throw ConfigurationError("\(domain.name): \(error)")
        }
    }

    /// The domains' names, for validating `domains`.
    static var names: [String] { all(ServerConfiguration(), telegram: NoTelegramBot()).map(\.name) }

    /// Each domain's keys, under the title the docs give them.
    static var settingParts: [(title: String, keys: [ConfigurationKey<ServerConfiguration>])] {
        all(ServerConfiguration(), telegram: NoTelegramBot()).map { domain in
            ("The \(domain.name) domain", domain.settingKeys.map(ServerConfiguration.domainKey))
        }
    }

    /// The namespaces the domains provide, which the configuration may not redefine.
    static var namespaces: Set<String> {
        all(ServerConfiguration(), telegram: NoTelegramBot()).reduce(into: [PersonalChannel.namespace]) { $0.formUnion($1.namespaces) }
    }
}
