import GondolaDomain
import GondolaHub

/// The travel domain's configuration keys (`Domain.settingKeys`) and what they say: the
/// resort files, the live-location timings, the Telegram bot's webhook secret, the host
/// page and the fence webhooks' timing. A bad value stops the start naming its key.
public struct TravelSettings: Sendable {
    static let resorts = DomainSettingKey.text("resorts", default: "resorts/", nonEmpty: true, doc: "the folder of resort files (see Travel API)")
    static let locationInterval = DomainSettingKey.duration(
        "location_interval", default: LocationSettings().interval, doc: "at most one frame per position channel per interval")
    static let locationTTL = DomainSettingKey.duration("location_ttl", default: LocationSettings().ttl, doc: "a position without a newer one expires")
    static let locationRate = DomainSettingKey.integer(
        "location_rate", default: LocationSettings().rate, in: 1...1_000_000, doc: "`location.update` calls per second per user")
    static let telegramWebhookSecret = DomainSettingKey.text(
        "telegram_webhook_secret", doc: "the secret `POST /api/telegram/webhook` requires (401 while empty)")
    static let hostPage = DomainSettingKey.text(
        "host_page", default: HostPageSettings().folder, nonEmpty: true, doc: "the host page's files, served at `/host/`")
    static let leafletPath = DomainSettingKey.text(
        "leaflet_path", default: HostPageSettings().leafletPath, nonEmpty: true,
        doc: "Leaflet's files (Debian's `libjs-leaflet`), served at `/host/vendor/leaflet/`")
    static let mapTilesURL = DomainSettingKey.text("map_tiles_url", doc: "a street tile layer for the host page's map, `https://…/{z}/{x}/{y}.png`") {
        tiles in
        tiles.isEmpty || ((tiles.hasPrefix("https://") || tiles.hasPrefix("http://")) && ["{z}", "{x}", "{y}"].allSatisfy(tiles.contains))
            ? nil : "expected an http(s) tile URL with {z}, {x} and {y}, got '\(tiles)'"
    }
    static let telegramBotUsername = DomainSettingKey.text(
        "telegram_bot_username", doc: "the bot whose Login Widget the host page shows (with `telegram_bot_token`)"
    ) { bot in
        bot.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
            ? nil : "expected a bot's username (letters, digits, _), got '\(bot)'"
    }
    static let fenceWebhookTimeout = DomainSettingKey.duration(
        "fence_webhook_timeout", default: FenceWebhookPolicy().timeout, doc: "a trip fence webhook's time per attempt (see Travel API, Fences)")
    static let fenceWebhookRetryBase = DomainSettingKey.duration(
        "fence_webhook_retry_base", default: FenceWebhookPolicy().retryBase, doc: "a fence webhook's first back-off, doubling to 10 minutes")
    static let fenceWebhookMaxAttempts = DomainSettingKey.integer(
        "fence_webhook_max_attempts", default: FenceWebhookPolicy().maxAttempts, in: 1...100,
        doc: "the attempts before a fence webhook's event is given up")

    /// The keys the travel domain reads.
    public static let keys = [
        resorts.info, locationInterval.info, locationTTL.info, locationRate.info, telegramWebhookSecret.info, hostPage.info, leafletPath.info,
        mapTilesURL.info, telegramBotUsername.info, fenceWebhookTimeout.info, fenceWebhookRetryBase.info, fenceWebhookMaxAttempts.info,
    ]

    /// The folder of resort files for the maps.
    public var resortsFolder = resorts.defaultValue
    public var location = LocationSettings()
    /// What the bot's webhook calls must carry (none: every call is refused).
    public var telegramWebhookSecret = ""
    public var hostPage = HostPageSettings()
    /// How the trips' fence webhooks are posted and retried.
    var fenceWebhooks = FenceWebhookPolicy()

    public init() {}

    /// The values `settings` gives, the defaults for the others.
    public init(_ settings: DomainSettings) throws(DomainSetupError) {
        resortsFolder = try settings.value(of: Self.resorts)
        location.interval = try settings.value(of: Self.locationInterval)
        location.ttl = try settings.value(of: Self.locationTTL)
        location.rate = try settings.value(of: Self.locationRate)
        fenceWebhooks.timeout = try settings.value(of: Self.fenceWebhookTimeout)
        fenceWebhooks.retryBase = try settings.value(of: Self.fenceWebhookRetryBase)
        fenceWebhooks.maxAttempts = try settings.value(of: Self.fenceWebhookMaxAttempts)
        telegramWebhookSecret = try settings.value(of: Self.telegramWebhookSecret)
        hostPage.folder = try settings.value(of: Self.hostPage)
        hostPage.leafletPath = try settings.value(of: Self.leafletPath)
        hostPage.mapTilesURL = try settings.value(of: Self.mapTilesURL)
        hostPage.telegramBotUsername = try settings.value(of: Self.telegramBotUsername)
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
