import GondolaDomain
import GondolaProtocol
import GondolaStore
import Hummingbird

/// `POST /api/auth/telegram`: signs a traveller in with the data of Telegram's Login Widget
/// (`TelegramLogin`, verified with the bot token) and answers a connection token; the same
/// Telegram account always maps to the same user. 503 while no bot token is configured.
struct TelegramLoginEndpoint: Sendable {
    /// The bot's token (`telegram_bot_token`); empty: Telegram login is off.
    let botToken: String
    let users: any UserRepository
    let signIn: SignInTokens
    static let bodyLimit = 16 * 1024

    func addRoutes(to router: HTTPRouter) {
        router.post("/api/auth/telegram") { request, _ in await handle(request) }
    }

    private func handle(_ request: Request) async -> Response {
        guard !botToken.isEmpty else {
            return JSONResponse.error(.serviceUnavailable, code: 108, "Telegram login is not configured (telegram_bot_token)")
        }
        let payload: JSON
        switch await JSONResponse.object(of: request, limit: Self.bodyLimit) {
        case let .success(json): payload = json
        case let .failure(error): return error.response
        }
        let account: TelegramAccount
        do {
            account = try TelegramLogin(botToken: botToken).verify(payload)
        } catch .badHash, .expired {
            return JSONResponse.error(.unauthorized, code: 101, "Telegram login refused: the hash does not match or auth_date is older than 24 hours")
        } catch {
            return JSONResponse.error(.badRequest, code: 107, "Telegram login data: \(error)")
        }
        do {
            return try await signIn.response(for: try await users.user(forTelegram: account))
        } catch {
            return JSONResponse.error(.internalServerError, code: 100, "could not sign in: \(error)")
        }
    }
}
