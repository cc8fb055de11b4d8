import GondolaHub
import GondolaProtocol
import GondolaStore
import Hummingbird

/// Mints the connection token a sign-in endpoint answers with (Telegram, development
/// login, an account's password): the same token the WebSocket connect and the HTTP
/// routes' `Authorization: Bearer` take, valid for `ttl`.
public struct SignInTokens: Sendable {
    let tokens: ConnectionTokens
    public let ttl: Duration

    public init(tokens: ConnectionTokens, ttl: Duration) {
        self.tokens = tokens
        self.ttl = ttl
    }

    /// `{"token": "...", "user": {"id": "...", "name": "..."}}`.
    public func response(for user: User) async throws -> Response {
        let token = try await tokens.mint(user: user.id, ttl: ttl)
        return JSONResponse.make(["token": .string(token), "user": ["id": .string(user.id), "name": .string(user.name)]])
    }
}
