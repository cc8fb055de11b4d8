import Foundation
import GondolaHub

/// The keys of who may come in: token secrets and keys, the server API's key and error mode,
/// and the sign-in endpoints. A reload puts the token keys in force.
extension ServerConfiguration {
    static let tokenSettingKeys: [ConfigurationKey<ServerConfiguration>] = [
        ConfigurationKey(
            "token_hmac_secret", type: "text, at least 32 bytes", default: "generated", reloadable: true,
            doc: "HS256 secret (RFC 7518 §3.2); HS384 and HS512 tokens are accepted when it has 48 and 64 bytes"
        ) { (field, configuration) throws(ConfigurationError) in
            let secret = try field.string()
            guard secret.isEmpty || secret.utf8.count >= ConnectionTokens.minimumSecretBytes else {
                throw field.error(
                    "must be at least \(ConnectionTokens.minimumSecretBytes) bytes for HS256, got \(secret.utf8.count) (leave it out to have one generated)"
                )
            }
            configuration.tokenHMACSecret = secret
        },
        .text(
            "token_rsa_public_key_file", \.tokenRSAPublicKeyFile, nonEmpty: true, reloadable: true,
            doc: "PEM public key (2048 bits or more) that verifies RS256/384/512 connection and subscription tokens"
        ).showing(default: "none"),
        .text(
            "token_ecdsa_public_key_file", \.tokenECDSAPublicKeyFile, nonEmpty: true, reloadable: true,
            doc: "PEM public key on P-256, P-384 or P-521 that verifies ES256, ES384 or ES512 tokens"
        ).showing(default: "none"),
        .text(
            "token_jwks_file", \.tokenJWKSFile, nonEmpty: true, reloadable: true,
            doc: "JSON Web Key Set: a token whose header names a `kid` is verified with that key"
        )
        .showing(default: "none"),
        ConfigurationKey(
            "token_jwks_public_endpoint", type: "http(s) URL", default: "none",
            doc:
                "an identity provider's JWKS URL (Keycloak, Auth0, Cognito), for tokens naming a `kid`: fetched in the background at start and every hour, and again when a token names a `kid` the set lacks, at most once every 10 s; each fetch has a 5 s timeout and a failed one keeps the last good set. No connect waits for a fetch: a token whose key is being fetched answers the temporary error 100 (the SDKs retry and get in once the key is there); a `kid` still missing after a fetch is invalid (3500). `gondola_jwks_fetches_total{outcome}`, `gondola_jwks_keys`, `gondola_jwks_fetched_timestamp_seconds`"
        ) { (field, configuration) throws(ConfigurationError) in configuration.tokenJWKSPublicEndpoint = try field.httpURL() },
        .text(
            "token_user_id_claim", \.tokenUserIDClaim, nonEmpty: true, reloadable: true,
            doc: "the claim that names the user in connection and subscription tokens (as Centrifugo's option)"),
        ConfigurationKey(
            "token_hmac_secret_previous", type: "text, at least 32 bytes", default: "none", reloadable: true,
            doc:
                "the HMAC secret before `token_hmac_secret`, accepted until `token_hmac_secret_previous_until`: rotate the secret without logging anyone out. Tokens the server mints are signed with the current one"
        ) { (field, configuration) throws(ConfigurationError) in
            let secret = try field.nonEmptyString()
            guard secret.utf8.count >= ConnectionTokens.minimumSecretBytes else {
                throw field.error("must be at least \(ConnectionTokens.minimumSecretBytes) bytes for HS256, got \(secret.utf8.count)")
            }
            configuration.tokenHMACSecretPrevious = secret
        },
        ConfigurationKey(
            "token_hmac_secret_previous_until", type: "RFC 3339 date or Unix seconds", default: "none", reloadable: true,
            doc: "the date until which tokens signed with `token_hmac_secret_previous` are accepted; needed with it"
        ) { (field, configuration) throws(ConfigurationError) in configuration.tokenHMACSecretPreviousUntil = try field.date() },
        .text(
            "token_audience", \.tokenAudience, nonEmpty: true, reloadable: true,
            doc: "when set, a token's `aud` must contain it (else 3500, or 103 for a subscription token)"
        ).showing(default: "none"),
        .text(
            "token_issuer", \.tokenIssuer, nonEmpty: true, reloadable: true,
            doc: "when set, a token's `iss` must equal it (else 3500, or 103 for a subscription token)"
        ).showing(default: "none"),
        .text("api_key", \.apiKey, doc: "the server API's key (`X-API-Key: <key>` or `Authorization: apikey <key>`)").showing(default: "generated"),
        .boolean(
            "swagger", \.swagger,
            doc:
                "serve the server API's OpenAPI 3.1 document at `GET /swagger/openapi.json` beside the server API (on `internal_listen` when it is set), made from the methods' contracts, as Centrifugo's `swagger` serves its own; it holds no secret and needs no key"
        ),
        ConfigurationKey(
            "http_api_error_mode", type: "`transport` or `custom`", default: "custom",
            doc:
                "`transport`: every server API error answers with its HTTP status (404, 400, 416, 409, 500) and the error object, as a request's `X-Centrifugo-Error-Mode: transport` asks; `custom`: 200 with `{\"error\"}`"
        ) { (field, configuration) throws(ConfigurationError) in
            switch try field.string() {
            case "transport": configuration.apiTransportErrors = true
            case "custom": configuration.apiTransportErrors = false
            case let other: throw field.error("expected 'transport' or 'custom', got '\(other)'")
            }
        },
        .boolean("dev_login", \.devLogin, doc: "enables `POST /api/auth/dev`"),
        .text(
            "telegram_bot_token", \.telegramBotToken, doc: "enables `POST /api/auth/telegram` (503 without it) and event invitations through the bot"),
    ]
}
