import GondolaDomain

/// The travel domain's configuration keys (`Domain.settingKeys`) and what they say: the
/// resort files, the live-location timings, the Telegram bot's webhook secret, the host
/// page and the fence webhooks' timing. A bad value stops the start naming its key.
public struct TravelSettings: Sendable {
    /// The keys the travel domain reads.
    public static let keys = [
        "resorts", "location_interval", "location_ttl", "location_rate", "telegram_webhook_secret", "host_page", "leaflet_path",
        "map_tiles_url", "telegram_bot_username", "fence_webhook_timeout", "fence_webhook_retry_base", "fence_webhook_max_attempts",
    ]

    /// The folder of resort files for the maps.
    public var resortsFolder = "resorts/"
    public var location = LocationSettings()
    /// What the bot's webhook calls must carry (none: every call is refused).
    public var telegramWebhookSecret = ""
    public var hostPage = HostPageSettings()
    /// How the trips' fence webhooks are posted and retried.
    var fenceWebhooks = FenceWebhookPolicy()

    public init() {}

    /// The values `settings` gives, the defaults for the others.
    public init(_ settings: DomainSettings) throws(DomainSetupError) {
        resortsFolder = try Self.nonEmpty(settings, "resorts", default: resortsFolder)
        location.interval = try settings.duration("location_interval", default: location.interval)
        location.ttl = try settings.duration("location_ttl", default: location.ttl)
        location.rate = try settings.integer("location_rate", default: location.rate, in: 1...1_000_000)
        fenceWebhooks.timeout = try settings.duration("fence_webhook_timeout", default: fenceWebhooks.timeout)
        fenceWebhooks.retryBase = try settings.duration("fence_webhook_retry_base", default: fenceWebhooks.retryBase)
        fenceWebhooks.maxAttempts = try settings.integer("fence_webhook_max_attempts", default: fenceWebhooks.maxAttempts, in: 1...100)
        telegramWebhookSecret = try settings.string("telegram_webhook_secret", default: "")
        hostPage.folder = try Self.nonEmpty(settings, "host_page", default: hostPage.folder)
        hostPage.leafletPath = try Self.nonEmpty(settings, "leaflet_path", default: hostPage.leafletPath)
        let tiles = try settings.string("map_tiles_url", default: "")
        guard tiles.isEmpty || ((tiles.hasPrefix("https://") || tiles.hasPrefix("http://")) && ["{z}", "{x}", "{y}"].allSatisfy(tiles.contains))
        else {
            throw DomainSetupError("'map_tiles_url' expected an http(s) tile URL with {z}, {x} and {y}, got '\(tiles)'")
        }
        hostPage.mapTilesURL = tiles
        let bot = try settings.string("telegram_bot_username", default: "")
        guard bot.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
            throw DomainSetupError("'telegram_bot_username' expected a bot's username (letters, digits, _), got '\(bot)'")
        }
        hostPage.telegramBotUsername = bot
    }

    /// `key` as text that is not empty (a folder), or `fallback`.
    private static func nonEmpty(_ settings: DomainSettings, _ key: String, default fallback: String) throws(DomainSetupError) -> String {
        let text = try settings.string(key, default: fallback)
        guard !text.isEmpty else { throw DomainSetupError("'\(key)' must not be empty") }
        return text
    }
}

/// Where the host page's files are and what it is told (`/host/config.json`).
public struct HostPageSettings: Sendable {
    /// The page's files (`host_page`), served at `/host/`.
    public var folder = "web/host"
    /// Leaflet's files (Debian's libjs-leaflet), served at `/host/vendor/leaflet/`.
    public var leafletPath = "/usr/share/javascript/leaflet"
    /// A street tile layer for the map (`https://…/{z}/{x}/{y}.png`); none when empty.
    public var mapTilesURL = ""
    /// The Telegram bot whose Login Widget the page shows; none when empty.
    public var telegramBotUsername = ""

    public init() {}
}
