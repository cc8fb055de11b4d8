import GondolaDomain
import GondolaHub
import GondolaProtocol
import GondolaStore
import Hummingbird

/// The development sign-in for demos and load tests (`dev_login`); the travel domain adds
/// Telegram's Login Widget.
struct AuthEndpoints: Sendable {
    let configuration: ServerConfiguration
    let tokens: ConnectionTokens
    /// Where signed-in users are kept; nil on Redis alone, where `dev_login` is refused.
    let users: (any UserRepository)?
    static let bodyLimit = 16 * 1024

    func addRoutes(to router: HTTPRouter) {
        router.post("/api/auth/dev") { request, _ in await dev(request) }
    }

    private func dev(_ request: Request) async -> Response {
        guard configuration.devLogin, let users else {
            return JSONResponse.error(.notFound, code: 104, "not found")
        }
        let payload: JSON
        switch await JSONResponse.object(of: request, limit: Self.bodyLimit) {
        case let .success(json): payload = json
        case let .failure(error): return error.response
        }
        guard case let .string(userID)? = payload["user"], UserID.isValid(userID) else {
            return JSONResponse.error(.badRequest, code: 107, "user must be 1 to 64 characters of [A-Za-z0-9_-.=@]")
        }
        let name: String
        switch payload["name"] {
        case nil, .null?: name = userID
        case let .string(text)?: name = text
        default: return JSONResponse.error(.badRequest, code: 107, "name must be a string")
        }
        do {
            return try await tokenResponse(for: try users.ensureUser(id: userID, name: name))
        } catch {
            return JSONResponse.error(.internalServerError, code: 100, "could not sign in: \(error)")
        }
    }

    private func tokenResponse(for user: User) async throws -> Response {
        try await SignInTokens(tokens: tokens, ttl: configuration.signInTokenTTL).response(for: user)
    }
}
