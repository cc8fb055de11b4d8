import GondolaDomain
import GondolaProtocol
import Hummingbird

/// `POST /api/telegram/webhook`: updates from the Telegram bot. The
/// `X-Telegram-Bot-Api-Secret-Token` header must equal `telegram_webhook_secret`
/// (401 otherwise, and always when no secret is configured). Every update with the
/// right secret is acknowledged with 200 — Telegram retries anything else — and
/// handled by the travel domain's `TelegramWebhook`.
struct TelegramWebhookEndpoint: Sendable {
    let secret: String
    let webhook: TelegramWebhook
    static let bodyLimit = 64 * 1024

    func addRoutes(to router: HTTPRouter) {
        router.post("/api/telegram/webhook") { request, _ in await handle(request) }
    }

    private func handle(_ request: Request) async -> Response {
        guard !secret.isEmpty, let given = request.headers[.init("X-Telegram-Bot-Api-Secret-Token")!], ConstantTime.equal(given, secret) else {
            return JSONResponse.error(.unauthorized, code: 101, "missing or wrong X-Telegram-Bot-Api-Secret-Token")
        }
        let update: JSON
        switch await JSONResponse.object(of: request, limit: Self.bodyLimit) {
        case let .success(json): update = json
        case .failure: update = .object([])
        }
        _ = await webhook.handle(update)
        return JSONResponse.make(["ok": true])
    }
}
