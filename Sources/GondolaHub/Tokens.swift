import Foundation
import GondolaProtocol
import JWTKit
import Synchronization

/// Who a verified connection token says the client is.
public struct Credentials: Sendable, Equatable {
    public var user: String
    /// When the connection must be refreshed, if ever: the token's `expire_at` when it has
    /// one (0: never), else its `exp`.
    public var expiresAt: Date?
    /// Sent to other clients as `conn_info`.
    public var info: RawJSON?
    /// The token's `meta`: kept on the server for the domains and hooks that read
    /// credentials, never sent to any client.
    public var meta: RawJSON?
    /// The channels the token subscribes the connection to, server-side (its `subs`, else
    /// its `channels`), with what each grants.
    public var subscriptions: [String: SubscriptionGrant]

    public init(
        user: String, expiresAt: Date? = nil, info: RawJSON? = nil, meta: RawJSON? = nil,
        subscriptions: [String: SubscriptionGrant] = [:]
    ) {
        self.user = user
        self.expiresAt = expiresAt
        self.info = info
        self.meta = meta
        self.subscriptions = subscriptions
    }
}

/// What a verified subscription token grants on its channel.
public struct SubscriptionGrant: Sendable, Equatable {
    /// When the subscription must be refreshed (`sub_refresh`), if ever.
    public var expiresAt: Date?
    /// Sent to other clients as `chan_info` for this subscription.
    public var info: RawJSON?
    /// Sent to the client in the subscribe reply.
    public var data: RawJSON?
    /// The namespace options the token overrides for this subscription.
    public var overrides = NamespaceOverrides()
    /// The server asks the app's backend (the sub_refresh proxy) when it ends, instead of
    /// telling the client its `ttl` and waiting for `sub_refresh`.
    public var refreshedByProxy = false

    public init(expiresAt: Date? = nil, info: RawJSON? = nil, data: RawJSON? = nil, overrides: NamespaceOverrides = NamespaceOverrides()) {
        self.expiresAt = expiresAt
        self.info = info
        self.data = data
        self.overrides = overrides
    }
}

/// The namespace options a subscription token may turn on or off for its subscription
/// (its `override` claim: `{"presence": {"value": true}, ...}`); nil keeps the namespace's.
public struct NamespaceOverrides: Sendable, Equatable {
    public var presence: Bool?
    public var joinLeave: Bool?
    public var forcePushJoinLeave: Bool?
    public var forceRecovery: Bool?
    public var forcePositioning: Bool?

    public init(
        presence: Bool? = nil, joinLeave: Bool? = nil, forcePushJoinLeave: Bool? = nil, forceRecovery: Bool? = nil,
        forcePositioning: Bool? = nil
    ) {
        self.presence = presence
        self.joinLeave = joinLeave
        self.forcePushJoinLeave = forcePushJoinLeave
        self.forceRecovery = forceRecovery
        self.forcePositioning = forcePositioning
    }

    /// `options` with these overrides applied.
    public func applied(to options: NamespaceOptions) -> NamespaceOptions {
        var options = options
        if let presence { options.presence = presence }
        if let joinLeave { options.joinLeave = joinLeave }
        if let forcePushJoinLeave { options.forcePushJoinLeave = forcePushJoinLeave }
        if let forceRecovery { options.forceRecovery = forceRecovery }
        if let forcePositioning { options.forcePositioning = forcePositioning }
        return options
    }
}

/// Why a token was refused.
public enum TokenError: Error, Sendable, Equatable {
    /// Bad signature, malformed token or claim, a claim that does not match: a connection
    /// is closed with 3500, a subscribe is refused with 103.
    case invalid(String)
    /// The token's `exp` is in the past (or its `nbf` in the future): the client gets
    /// error 109 and asks its backend for a new one.
    case expired
    /// The token names a key that is being fetched (`token_jwks_public_endpoint`): the
    /// client gets the temporary error 100 and tries again, by when the key is there.
    case keyUnavailable(String)
}

extension TokenError: FieldError {
    public static func invalidField(_ message: String) -> TokenError { .invalid(message) }
}

/// A token secret too short for HS256 (it must be at least as long as the hash, 32 bytes).
public struct WeakSecretError: Error, CustomStringConvertible {
    public let length: Int
    public var description: String {
        "token_hmac_secret is \(length) bytes; HS256 needs at least \(ConnectionTokens.minimumSecretBytes)"
    }
}

/// The keys and checks connection and subscription tokens are verified with, as the
/// configuration gives them (`token_*` settings).
public struct TokenKeys: Sendable {
    /// Verifies HS256, HS384 and HS512 tokens and signs the tokens the server mints.
    public var hmacSecret: String
    /// A PEM public key (`-----BEGIN PUBLIC KEY-----`) that verifies RS256, RS384 and RS512 tokens.
    public var rsaPublicKeyPEM: String?
    /// A PEM public key on P-256, P-384 or P-521 that verifies ES256, ES384 or ES512 tokens.
    public var ecdsaPublicKeyPEM: String?
    /// A JSON Web Key Set (`{"keys": [...]}`): a token whose header names a `kid` is verified with that key.
    public var jwksJSON: String?
    /// When set, a token's `aud` (a string or an array) must contain it.
    public var audience: String?
    /// When set, a token's `iss` must equal it.
    public var issuer: String?
    /// The claim that names the user (`token_user_id_claim`), `sub` unless set.
    public var userIDClaim = "sub"
    /// The secret HMAC tokens were signed with before `hmacSecret` (`token_hmac_secret_previous`),
    /// still accepted until `previousHMACSecretUntil`, so a rotation logs no one out.
    public var previousHMACSecret: String?
    public var previousHMACSecretUntil: Date?
    /// Keys fetched from a JWKS URL (`token_jwks_public_endpoint`), for tokens naming a `kid`.
    public var remoteKeySet: (any RemoteKeySet)?

    public init(
        hmacSecret: String, rsaPublicKeyPEM: String? = nil, ecdsaPublicKeyPEM: String? = nil, jwksJSON: String? = nil,
        audience: String? = nil, issuer: String? = nil
    ) {
        self.hmacSecret = hmacSecret
        self.rsaPublicKeyPEM = rsaPublicKeyPEM
        self.ecdsaPublicKeyPEM = ecdsaPublicKeyPEM
        self.jwksJSON = jwksJSON
        self.audience = audience
        self.issuer = issuer
    }
}

/// A key set fetched from elsewhere (an identity provider's JWKS URL), as the verifier
/// sees it: the set it holds now, and a way to ask for a newer one when a token names a
/// key the set lacks. Nothing here waits: fetching is the implementation's background work.
public protocol RemoteKeySet: Sendable {
    /// The newest set fetched; nil until one was.
    var current: RemoteKeys? { get }
    /// A token named `kid`, which `current` lacks: true when a fetch is (now) under way,
    /// false when the rate bound holds one back (the key is then taken as unknown).
    func refresh(missing kid: String) -> Bool
}

/// A parsed JSON Web Key Set and the `kid`s it holds.
public struct RemoteKeys: Sendable {
    public let keys: JWTKeyCollection
    public let ids: Set<String>

    /// Parses a JWKS document (`{"keys": [...]}`); the error says what is wrong.
    public init(jwksJSON: String) async throws {
        keys = try await JWTKeyCollection().add(jwksJSON: jwksJSON)
        ids = Set(
            try JSONFields<TokenError>(JSONParser.parse(jwksJSON)).objectArray("keys", maxCount: 1_000).compactMap {
                try $0.optionalString("kid", maxLength: 256)
            })
    }
}

/// A key the configuration names that cannot be used; the message names the setting.
public struct TokenKeyError: Error, Sendable, CustomStringConvertible {
    public let description: String
}

/// Verifies connection and subscription JWTs the way Centrifugo reads them (HMAC, RSA,
/// ECDSA and JWKS keys; `aud` and `iss` when configured) and mints HS256 connection tokens.
/// The header's `alg` picks the key family, so a token can only be checked by a key of
/// the kind it names (no algorithm confusion); `none` is never accepted.
public struct ConnectionTokens: Sendable {
    /// Shortest secret accepted: the length of the SHA-256 output, as RFC 7518 §3.2 requires.
    public static let minimumSecretBytes = 32
    /// Members whose JSON passes on as it was signed: `info`, `data` and `meta` are never rewritten.
    private static let rawClaims: Set<String> = ["info", "data", "meta"]

    /// What tokens are verified with. Copies of this value share it, so that `adopt` changes
    /// the keys of every holder at once (a configuration reload).
    private struct Keys: Sendable {
        /// One key collection per accepted `alg`, each with that key as its default.
        var keysByAlgorithm: [String: JWTKeyCollection] = [:]
        var jwks: JWTKeyCollection?
        /// The `kid`s of the JWKS: a token naming another is refused (the key collection would
        /// otherwise fall back to its first key).
        var jwksKeyIDs: Set<String> = []
        var audience: String?
        var issuer: String?
        var userIDClaim = "sub"
        /// The previous HMAC secret's keys by algorithm, and until when they verify.
        var previousHMAC: (keys: [String: JWTKeyCollection], until: Date)?
        var remoteKeySet: (any RemoteKeySet)?
    }

    /// The keys in use, shared by every copy.
    private final class SharedKeys: Sendable {
        let keys: Mutex<Keys>
        init(_ keys: Keys) { self.keys = Mutex(keys) }
    }

    private let shared: SharedKeys
    /// The keys in use, taken once per token so that one check sees one set of keys.
    private var current: Keys { shared.keys.withLock { $0 } }

    /// From now on, verifies and signs with `newer`'s keys, here and in every copy of this value.
    public func adopt(_ newer: ConnectionTokens) {
        let keys = newer.current
        shared.keys.withLock { $0 = keys }
    }

    /// HMAC tokens only, with `secret`.
    public init(secret: String) async throws(WeakSecretError) {
        guard secret.utf8.count >= Self.minimumSecretBytes else { throw WeakSecretError(length: secret.utf8.count) }
        shared = SharedKeys(Keys(keysByAlgorithm: await Self.hmacKeys(secret)))
    }

    /// Every key `keys` configures.
    public init(keys: TokenKeys) async throws(TokenKeyError) {
        guard keys.hmacSecret.utf8.count >= Self.minimumSecretBytes else {
            throw TokenKeyError(description: WeakSecretError(length: keys.hmacSecret.utf8.count).description)
        }
        var loaded = Keys()
        var byAlgorithm = await Self.hmacKeys(keys.hmacSecret)
        if let pem = keys.rsaPublicKeyPEM {
            let key: Insecure.RSA.PublicKey
            do {
                key = try Insecure.RSA.PublicKey(pem: pem)
            } catch {
                throw TokenKeyError(description: "token_rsa_public_key_file: not a PEM RSA public key of at least 2048 bits (\(error))")
            }
            for (name, digest) in [("RS256", DigestAlgorithm.sha256), ("RS384", .sha384), ("RS512", .sha512)] {
                byAlgorithm[name] = await JWTKeyCollection().add(rsa: key, digestAlgorithm: digest)
            }
        }
        if let pem = keys.ecdsaPublicKeyPEM {
            let (name, collection) = try await Self.ecdsaKeys(pem)
            byAlgorithm[name] = collection
        }
        loaded.keysByAlgorithm = byAlgorithm
        if let json = keys.jwksJSON {
            do {
                let parsed = try await RemoteKeys(jwksJSON: json)
                loaded.jwks = parsed.keys
                loaded.jwksKeyIDs = parsed.ids
            } catch {
                throw TokenKeyError(description: "token_jwks_file: not a JSON Web Key Set (\(error))")
            }
        }
        loaded.audience = keys.audience
        loaded.issuer = keys.issuer
        loaded.userIDClaim = keys.userIDClaim
        if let previous = keys.previousHMACSecret, let until = keys.previousHMACSecretUntil {
            guard previous.utf8.count >= Self.minimumSecretBytes else {
                throw TokenKeyError(description: "token_hmac_secret_previous: " + WeakSecretError(length: previous.utf8.count).description)
            }
            loaded.previousHMAC = (await Self.hmacKeys(previous), until)
        }
        loaded.remoteKeySet = keys.remoteKeySet
        shared = SharedKeys(loaded)
    }

    /// HS256 always; HS384 and HS512 when the secret is at least as long as their hash
    /// (48 and 64 bytes, RFC 7518 §3.2), so a short secret never signs a longer hash.
    private static func hmacKeys(_ secret: String) async -> [String: JWTKeyCollection] {
        var keys: [String: JWTKeyCollection] = [:]
        for (name, digest, minimum) in [("HS256", DigestAlgorithm.sha256, 32), ("HS384", .sha384, 48), ("HS512", .sha512, 64)]
        where secret.utf8.count >= minimum {
            keys[name] = await JWTKeyCollection().add(hmac: HMACKey(from: secret), digestAlgorithm: digest)
        }
        return keys
    }

    /// The ECDSA key of `pem` and the one algorithm its curve signs with.
    private static func ecdsaKeys(_ pem: String) async throws(TokenKeyError) -> (String, JWTKeyCollection) {
        if let key = try? ES256PublicKey(pem: pem) { return ("ES256", await JWTKeyCollection().add(ecdsa: key)) }
        if let key = try? ES384PublicKey(pem: pem) { return ("ES384", await JWTKeyCollection().add(ecdsa: key)) }
        if let key = try? ES512PublicKey(pem: pem) { return ("ES512", await JWTKeyCollection().add(ecdsa: key)) }
        throw TokenKeyError(description: "token_ecdsa_public_key_file: not a PEM ECDSA public key on P-256, P-384 or P-521")
    }

    // MARK: Connection tokens

    /// Checks the signature and claims of a connection token: `sub` (required), `exp`,
    /// `nbf`, `iat`, `jti`, `aud`/`iss` when configured, `info` or `b64info`, `meta`, `expire_at`.
    public func verify(_ token: String, now: Date = Date()) async throws(TokenError) -> Credentials {
        let keys = current
        let claims = try await verifiedClaims(token, with: keys, now: now)
        let user = try claims.optionalString(keys.userIDClaim, maxLength: 1024) ?? ""
        guard !user.isEmpty else { throw .invalid("token has no \(keys.userIDClaim)") }
        return try Self.credentials(of: user, claims)
    }

    /// What a connection token's claims (or a connect proxy's answer, which has the same
    /// members) say about `user`: `expire_at`/`exp`, `info`/`b64info`, `meta`, `subs`/`channels`.
    static func credentials<Failure: FieldError>(of user: String, _ claims: JSONFields<Failure>) throws(Failure) -> Credentials {
        Credentials(
            user: user, expiresAt: try expiry(claims), info: try json(claims, raw: "info", base64: "b64info"),
            meta: claims.raw("meta"), subscriptions: try serverSubscriptions(claims))
    }

    /// Most channels one token may subscribe its connection to.
    public static let maxTokenChannels = 128

    /// `subs` (channel → `{info, b64info, data, b64data, override}`) when present, else `channels`.
    private static func serverSubscriptions<Failure: FieldError>(_ claims: JSONFields<Failure>) throws(Failure) -> [String: SubscriptionGrant] {
        if let subs = try claims.optionalObject("subs") {
            guard subs.members.count <= maxTokenChannels else { throw .invalidField("subs lists more than \(maxTokenChannels) channels") }
            var grants: [String: SubscriptionGrant] = [:]
            for member in subs.members {
                grants[member.key] = try grant(try subs.object(member.key))
            }
            return grants
        }
        let channels = try claims.value("channels") == nil ? [] : claims.stringArray("channels", maxCount: maxTokenChannels, maxLength: 1024)
        return Dictionary(channels.map { ($0, SubscriptionGrant()) }, uniquingKeysWith: { first, _ in first })
    }

    /// A signed connection token (HS256) for `user`, valid for `ttl` when given, with `info`
    /// and the server-side subscriptions `channels` when given.
    public func mint(user: String, ttl: Duration? = nil, info: JSON? = nil, channels: [String]? = nil, now: Date = Date()) async throws
        -> String
    {
        try await sign(MintedClaims(sub: SubjectClaim(value: user), exp: Self.expiration(ttl, now: now), info: info, channels: channels))
    }

    /// A signed subscription token (HS256) for `user` on `channel`, valid for `ttl` when given, with `info`.
    public func mintSubscription(user: String, channel: String, ttl: Duration? = nil, info: JSON? = nil, now: Date = Date()) async throws
        -> String
    {
        try await sign(MintedClaims(sub: SubjectClaim(value: user), exp: Self.expiration(ttl, now: now), info: info, channel: channel))
    }

    private func sign(_ claims: MintedClaims) async throws -> String {
        try await current.keysByAlgorithm["HS256"]!.sign(claims)
    }

    private static func expiration(_ ttl: Duration?, now: Date) -> ExpirationClaim? {
        // Whole seconds, as JWT libraries write `exp`.
        ttl.map { ExpirationClaim(value: Date(timeIntervalSince1970: (now.timeIntervalSince1970 + $0.timeInterval).rounded(.down))) }
    }

    // MARK: Subscription tokens

    /// Checks a subscription token for `channel` and the connection of `user` (client
    /// `client`): the signature, `exp`/`nbf`/`aud`/`iss` as for connection tokens, `sub`
    /// equal to the connection's user, `channel` equal to the channel, `client` (when
    /// present) equal to the client's id; reads `info`/`b64info`, `data`/`b64data`,
    /// `expire_at` and `override`.
    public func verifySubscription(
        _ token: String, channel: String, user: String, client: String,
        now: Date = Date()
    ) async throws(TokenError) -> SubscriptionGrant {
        let keys = current
        let claims = try await verifiedClaims(token, with: keys, now: now)
        let subject = try claims.optionalString(keys.userIDClaim, maxLength: 1024) ?? ""
        guard subject == user else { throw .invalid("subscription token is for user '\(subject)', the connection is '\(user)'") }
        let tokenChannel = try claims.string("channel", maxLength: 1024)
        guard tokenChannel == channel else { throw .invalid("subscription token is for channel '\(tokenChannel)', not '\(channel)'") }
        if let tokenClient = try claims.optionalString("client", maxLength: 1024), tokenClient != client {
            throw .invalid("subscription token is for another client")
        }
        return try Self.grant(claims, expiresAt: try Self.expiry(claims))
    }

    // MARK: Claims

    /// The claims of `token` once its signature (with `keys`), time window, audience and issuer are checked.
    private func verifiedClaims(_ token: String, with keys: Keys, now: Date) async throws(TokenError) -> JSONFields<TokenError> {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .invalid("token is not a JWT (three base64url parts)") }
        let header = try Self.object(parts[0], what: "header")
        let algorithm = try header.string("alg", maxLength: 16)
        let keyID = try header.optionalString("kid", maxLength: 256)
        let collection: JWTKeyCollection
        if let keyID, keys.jwks != nil || keys.remoteKeySet != nil {
            collection = try Self.keySet(naming: keyID, in: keys)
        } else if let configured = keys.keysByAlgorithm[algorithm] {
            collection = configured
        } else {
            throw .invalid("token algorithm \(algorithm) has no configured key")
        }
        do {
            _ = try await collection.verify(token, as: SignedClaims.self)
        } catch {
            guard let previous = keys.previousHMAC, now < previous.until, let older = previous.keys[algorithm],
                (try? await older.verify(token, as: SignedClaims.self)) != nil
            else {
                throw .invalid("token signature does not verify with the server's \(algorithm) key")
            }
        }
        let claims = try Self.object(parts[1], what: "claims", keepingRaw: Self.rawClaims)
        let seconds = now.timeIntervalSince1970
        if let expiry = try claims.optionalNumber("exp", in: 0...1e12), expiry <= seconds { throw .expired }
        if let notBefore = try claims.optionalNumber("nbf", in: 0...1e12), notBefore > seconds { throw .expired }
        _ = try claims.optionalNumber("iat", in: 0...1e12)
        _ = try claims.optionalString("jti", maxLength: 1024)
        if let audience = keys.audience {
            let audiences: [String] =
                switch claims.value("aud") {
                case .string(let one)?: [one]
                case .array?: try claims.stringArray("aud", maxCount: 100, maxLength: 1024)
                default: []
                }
            guard audiences.contains(audience) else { throw .invalid("token aud does not include '\(audience)'") }
        }
        if let issuer = keys.issuer {
            let tokenIssuer = try claims.optionalString("iss", maxLength: 1024)
            guard tokenIssuer == issuer else { throw .invalid("token iss is not '\(issuer)'") }
        }
        return claims
    }

    /// The key set holding `keyID`: the JWKS file's, else the set fetched from the JWKS
    /// URL. A `kid` the fetched set lacks asks for a newer set and answers `keyUnavailable`
    /// while one is on its way (or none was ever fetched); past the fetch rate it is unknown.
    private static func keySet(naming keyID: String, in keys: Keys) throws(TokenError) -> JWTKeyCollection {
        if let jwks = keys.jwks, keys.jwksKeyIDs.contains(keyID) { return jwks }
        guard let remoteKeySet = keys.remoteKeySet else { throw .invalid("token kid '\(keyID)' is not in the JWKS") }
        let current = remoteKeySet.current
        if let current, current.ids.contains(keyID) { return current.keys }
        if remoteKeySet.refresh(missing: keyID) || current == nil {
            throw .keyUnavailable("token kid '\(keyID)' is being fetched from token_jwks_public_endpoint")
        }
        throw .invalid("token kid '\(keyID)' is not in the JWKS of token_jwks_public_endpoint")
    }

    /// A base64url part of the token parsed as a JSON object.
    private static func object(_ part: Substring, what: String, keepingRaw raw: Set<String> = []) throws(TokenError) -> JSONFields<TokenError> {
        guard let bytes = Base64URL.decode(part) else { throw .invalid("token \(what) is not base64url") }
        do {
            return try JSONFields(JSONParser.parse(bytes, keepingRaw: raw))
        } catch let error as TokenError {
            throw error
        } catch {
            throw .invalid("token \(what) is not a JSON object")
        }
    }

    /// What `info`/`b64info`, `data`/`b64data` and `override` grant a subscription (in a
    /// subscription token, a connection token's `subs`, the server API's `subscribe`).
    static func grant<Failure: FieldError>(_ fields: JSONFields<Failure>, expiresAt: Date? = nil) throws(Failure) -> SubscriptionGrant {
        SubscriptionGrant(
            expiresAt: expiresAt, info: try json(fields, raw: "info", base64: "b64info"),
            data: try json(fields, raw: "data", base64: "b64data"), overrides: try overrides(fields))
    }

    /// `expire_at` when present (0: never expires), else `exp`.
    static func expiry<Failure: FieldError>(_ claims: JSONFields<Failure>) throws(Failure) -> Date? {
        if let expireAt = try claims.optionalInteger("expire_at", in: 0...Int64(1e12)) {
            return expireAt == 0 ? nil : Date(timeIntervalSince1970: Double(expireAt))
        }
        return try claims.optionalNumber("exp", in: 0...1e12).map(Date.init(timeIntervalSince1970:))
    }

    /// The JSON of `raw`, or the base64 of `base64` when that is present; the bytes of a
    /// base64 claim must be JSON too, since `info` and `data` reach JSON clients as they are.
    static func json<Failure: FieldError>(_ claims: JSONFields<Failure>, raw: String, base64: String) throws(Failure) -> RawJSON? {
        guard let encoded = try claims.optionalString(base64, maxLength: 65_536) else { return claims.raw(raw) }
        guard let bytes = Data(base64Encoded: encoded) else { throw .invalidField("\(base64) is not base64") }
        do {
            return try RawJSON(validating: bytes)
        } catch {
            throw .invalidField("\(base64) does not hold JSON: Gondola passes \(raw) to JSON clients as it is")
        }
    }

    private static func overrides<Failure: FieldError>(_ claims: JSONFields<Failure>) throws(Failure) -> NamespaceOverrides {
        guard let override = try claims.noting("namespace options for this subscription").optionalObject("override") else {
            return NamespaceOverrides()
        }
        func value(_ key: String) throws(Failure) -> Bool? {
            try override.noting("`{\"value\": bool}`").optionalObject(key).map { wrapper throws(Failure) in try wrapper.bool("value") }
        }
        return NamespaceOverrides(
            presence: try value("presence"), joinLeave: try value("join_leave"),
            forcePushJoinLeave: try value("force_push_join_leave"), forceRecovery: try value("force_recovery"),
            forcePositioning: try value("force_positioning"))
    }
}

/// What the JWT library checks: the signature only (the claims are read by `ConnectionTokens`
/// from the signed bytes, so `info`, `data` and `meta` pass on unchanged).
private struct SignedClaims: JWTPayload {
    func verify(using algorithm: some JWTAlgorithm) throws {}
}

/// The claims of a minted token.
private struct MintedClaims: JWTPayload {
    var sub: SubjectClaim
    var exp: ExpirationClaim?
    var info: JSON?
    /// A connection token's server-side subscriptions.
    var channels: [String]?
    /// A subscription token's channel.
    var channel: String?

    func verify(using algorithm: some JWTAlgorithm) throws {}
}

/// base64url without padding (RFC 4648 §5), as JWTs use it.
enum Base64URL {
    static func decode(_ text: Substring) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64).map(Array.init)
    }
}

/// What the server API's `subscribe` asks for besides the user and the channel: `client`
/// and `session` (only the connections they pick, `ConnectionFilter`), `info`/`b64info` (the subscription's `chan_info`),
/// `data`/`b64data` (sent in the subscribe push), `override` as in subscription tokens,
/// `expire_at` (Unix seconds when the subscription ends, told in the push's `ttl`; past it,
/// and a grace of `pongTimeout`, the connection is unsubscribed with 2501), and
/// `recover_since` (`{offset, epoch}`: publications after it are recovered).
public struct ServerSubscription: Sendable {
    public var target: ConnectionFilter
    public var grant: SubscriptionGrant
    public var recoverSince: StreamPosition?

    /// Reads the request; a field of the wrong shape answers 107 naming it.
    public init(_ options: RawJSON) throws(HubError) {
        let json: JSON
        do {
            json = try JSONParser.parse(options.bytes, keepingRaw: ["info", "data"], atDepth: 1)
        } catch {
            throw .badRequest("subscribe options are not JSON: \(error)")
        }
        do throws(TokenError) {
            self = try ServerSubscription(try JSONFields<TokenError>(json))
        } catch {
            switch error {
            case let .invalid(reason), let .keyUnavailable(reason): throw .badRequest(reason)
            case .expired: throw .badRequest("subscribe options")
            }
        }
    }

    /// Reads the options from the request's members (the server API's `subscribe` reads
    /// its body with it too, so that its contract lists them).
    public init<Failure: FieldError>(_ fields: JSONFields<Failure>) throws(Failure) {
        target = ConnectionFilter(
            client: try fields.noting("only this connection of the user (its client id)").optionalString("client", maxLength: 1024),
            session: try fields.noting("only the connection with this session id (an HTTP-streaming, SSE or unidirectional one)")
                .optionalString("session", maxLength: 1024))
        let expireAt = try fields.noting("Unix seconds when the subscription ends (unsubscribed with 2501); 0 or absent: never")
            .optionalInteger("expire_at", in: 0...Int64(1e12)).flatMap { $0 == 0 ? nil : Date(timeIntervalSince1970: Double($0)) }
        grant = try ConnectionTokens.grant(fields, expiresAt: expireAt)
        recoverSince = try fields.noting("recover from this position").optionalObject("recover_since").map { since throws(Failure) in
            StreamPosition(
                offset: UInt64(try since.optionalInteger("offset", in: 0...Int64.max) ?? 0),
                epoch: try since.optionalString("epoch", maxLength: 64) ?? "")
        }
    }
}
