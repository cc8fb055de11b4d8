import GondolaDomain
import GondolaProtocol
import Hummingbird

/// The host page: `GET /host/` serves the page's static files from `host_page`, Leaflet
/// from `leaflet_path` under `/host/vendor/leaflet/`, and `/host/config.json` tells the
/// page how to sign in (`dev_login`, the Telegram bot) and which street tiles to add.
/// The page itself is plain HTML, CSS and JavaScript modules; it talks to the hub over the
/// WebSocket like any client.
struct HostPage: Sendable {
    let settings: HostPageSettings
    /// Whether the server offers the development login (`dev_login`).
    let devLogin: Bool
    /// Whether the server verifies Telegram logins (`telegram_bot_token` is set).
    let telegramLogin: Bool

    func addRoutes(to router: HTTPRouter) {
        router.get("/host/config.json") { [settings, devLogin, telegramLogin] _, _ in
            var json: JSON = ["dev_login": .bool(devLogin), "leaflet_path": .string(settings.leafletPath)]
            if !settings.telegramBotUsername.isEmpty, telegramLogin {
                json = json.adding("telegram_bot", .string(settings.telegramBotUsername))
            }
            if !settings.mapTilesURL.isEmpty { json = json.adding("map_tiles_url", .string(settings.mapTilesURL)) }
            var response = JSONResponse.make(json)
            response.headers[.cacheControl] = "no-store"
            return response
        }
        // Files are looked up only when no route answered; Leaflet's prefix is inside the page's.
        router.add(middleware: FileMiddleware(settings.leafletPath, urlBasePath: "/host/vendor/leaflet"))
        router.add(middleware: FileMiddleware(settings.folder, urlBasePath: "/host", searchForIndexHtml: true))
    }
}
