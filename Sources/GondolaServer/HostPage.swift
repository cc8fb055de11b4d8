import GondolaDomain
import GondolaProtocol
import Hummingbird

/// The host page: `GET /host/` serves the page's static files from `host_page`, Leaflet
/// from `leaflet_path` under `/host/vendor/leaflet/`, and `/host/config.json` tells the
/// page how to sign in (`dev_login`, the Telegram bot) and which street tiles to add.
/// The page itself is plain HTML, CSS and JavaScript modules; it talks to the hub over the
/// WebSocket like any client.
struct HostPage: Sendable {
    let configuration: ServerConfiguration

    func addRoutes(to router: HTTPRouter) {
        router.get("/host/config.json") { _, _ in
            var json: JSON = ["dev_login": .bool(configuration.devLogin), "leaflet_path": .string(configuration.leafletPath)]
            if !configuration.telegramBotUsername.isEmpty, !configuration.telegramBotToken.isEmpty {
                json = json.adding("telegram_bot", .string(configuration.telegramBotUsername))
            }
            if !configuration.mapTilesURL.isEmpty { json = json.adding("map_tiles_url", .string(configuration.mapTilesURL)) }
            var response = JSONResponse.make(json)
            response.headers[.cacheControl] = "no-store"
            return response
        }
        // Files are looked up only when no route answered; Leaflet's prefix is inside the page's.
        router.add(middleware: FileMiddleware(configuration.leafletPath, urlBasePath: "/host/vendor/leaflet"))
        router.add(middleware: FileMiddleware(configuration.hostPage, urlBasePath: "/host", searchForIndexHtml: true))
    }
}
