import Foundation
import GondolaProtocol
import JWTKit

/// Who a connection token says the user is.
public struct Credentials: Sendable, Equatable {
    public var user: String
    /// When the token stops being valid, if it expires.
    public var expiresAt: Date?
    /// Sent to other clients as `conn_info`.
    public var info: RawJSON?

    public init(user: String, expiresAt: Date? = nil, info: RawJSON? = nil) {
        self.user = user
        self.expiresAt = expiresAt
        self.info = info
    }
}

/// Why a connection token was refused.
public enum TokenError: Error, Sendable, Equatable {
    /// Bad signature, malformed token or missing `sub`: the connection is closed with 3500.
    case invalid(String)
    /// The token's `exp` is in the past: the client gets error 109 and refreshes.
    case expired
}

/// The claims of a connection JWT.
struct ConnectionClaims: JWTPayload {
    var sub: SubjectClaim
    var exp: ExpirationClaim?
    var info: JSON?

    // Signature is checked by the key collection; expiry is checked by the caller
    // so that an expired token can be told apart from a forged one.
    func verify(using algorithm: some JWTAlgorithm) throws {}
}

/// A token secret too short for HS256 (it must be at least as long as the hash, 32 bytes).
public struct WeakSecretError: Error, CustomStringConvertible {
    public let length: Int
    public var description: String {
        "token_hmac_secret is \(length) bytes; HS256 needs at least \(ConnectionTokens.minimumSecretBytes)"
    }
}

/// Verifies and mints HS256 connection tokens with one shared secret.
public struct ConnectionTokens: Sendable {
    /// Shortest secret accepted: the length of the SHA-256 output, as RFC 7518 §3.2 requires.
    public static let minimumSecretBytes = 32

    private let keys: JWTKeyCollection

    public init(secret: String) async throws(WeakSecretError) {
        guard secret.utf8.count >= Self.minimumSecretBytes else { throw WeakSecretError(length: secret.utf8.count) }
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        self.keys = keys
    }

    /// Checks the signature, `sub` and `exp` of `token`.
    public func verify(_ token: String, now: Date = Date()) async throws(TokenError) -> Credentials {
        let claims: ConnectionClaims
        do {
            claims = try await keys.verify(token, as: ConnectionClaims.self)
        } catch {
            throw .invalid("token is not a valid HS256 JWT signed with this server's secret")
        }
        guard !claims.sub.value.isEmpty else { throw .invalid("token has no sub") }
        if let exp = claims.exp, exp.value <= now { throw .expired }
        return Credentials(user: claims.sub.value, expiresAt: claims.exp?.value, info: claims.info.map(RawJSON.init))
    }

    /// A signed token for `user`, valid for `ttl` when given.
    public func mint(user: String, ttl: Duration? = nil, info: JSON? = nil, now: Date = Date()) async throws -> String {
        let expiry = ttl.map { now.addingTimeInterval(Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18) }
        let claims = ConnectionClaims(sub: SubjectClaim(value: user), exp: expiry.map { ExpirationClaim(value: $0) }, info: info)
        return try await keys.sign(claims)
    }
}
