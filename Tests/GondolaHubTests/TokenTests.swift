import Crypto
import Foundation
import GondolaHub
import GondolaProtocol
import Testing
import _CryptoExtras

/// Tokens built by hand (base64url + HMAC-SHA256 from swift-crypto), independent of the JWT library.
@Suite struct TokenTests {
    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func handMadeToken(_ claims: String, secret: String, header: String = #"{"alg":"HS256","typ":"JWT"}"#) -> String {
        signed(claims, header: header) { input in Data(HMAC<SHA256>.authenticationCode(for: input, using: SymmetricKey(data: Data(secret.utf8)))) }
    }

    /// `header.claims.signature`, the signature made by `sign` over the first two parts.
    static func signed(_ claims: String, header: String, sign: (Data) throws -> Data) rethrows -> String {
        let signingInput = base64URL(Data(header.utf8)) + "." + base64URL(Data(claims.utf8))
        return signingInput + "." + base64URL(try sign(Data(signingInput.utf8)))
    }

    @Test func mintedTokensCarryTheirClaimsBackToTheVerifier() async throws {
        let tokens = try await ConnectionTokens(secret: "s3cret-s3cret-s3cret-s3cret-s3cret")
        let now = Date(timeIntervalSince1970: 1_800_000_000.7)
        let connection = try await tokens.mint(user: "gus", ttl: .seconds(60), info: ["seat": 4], channels: ["news", "room:a"], now: now)
        let credentials = try await tokens.verify(connection, now: now)
        #expect(credentials.user == "gus" && credentials.info?.value["seat"] == 4)
        #expect(Set(credentials.subscriptions.keys) == ["news", "room:a"])
        #expect(credentials.expiresAt == Date(timeIntervalSince1970: 1_800_000_060))  // whole seconds
        let subscription = try await tokens.mintSubscription(user: "gus", channel: "vip:a", ttl: .seconds(60), info: ["seat": 5], now: now)
        let grant = try await tokens.verifySubscription(subscription, channel: "vip:a", user: "gus", client: "c1", now: now)
        #expect(grant.info?.value["seat"] == 5)
        await #expect(throws: TokenError.self) {
            _ = try await tokens.verifySubscription(subscription, channel: "vip:b", user: "gus", client: "c1", now: now)
        }
    }

    @Test func acceptsAHandMadeHS256Token() async throws {
        let tokens = try await ConnectionTokens(secret: "s3cret-s3cret-s3cret-s3cret-s3cret")
        let exp = Int(Date().timeIntervalSince1970) + 3600
        let token = Self.handMadeToken(
            #"{"sub":"alice","exp":\#(exp),"info":{"name":"Alice","tags":[1,2]}}"#, secret: "s3cret-s3cret-s3cret-s3cret-s3cret")
        let credentials = try await tokens.verify(token)
        #expect(credentials.user == "alice")
        #expect(credentials.info?.value["name"] == "Alice")
        #expect(abs(credentials.expiresAt!.timeIntervalSince1970 - Double(exp)) < 1)
    }

    @Test func refusesOtherSecretsAlgorithmsAndMissingSub() async throws {
        let tokens = try await ConnectionTokens(secret: "s3cret-s3cret-s3cret-s3cret-s3cret")
        let cases = [
            Self.handMadeToken(#"{"sub":"alice"}"#, secret: "wrong-wrong-wrong-wrong-wrong-wrong"),
            // The classic alg:none forgery: no signature at all.
            Self.base64URL(Data(#"{"alg":"none","typ":"JWT"}"#.utf8)) + "." + Self.base64URL(Data(#"{"sub":"alice"}"#.utf8)) + ".",
            Self.handMadeToken(#"{"sub":""}"#, secret: "s3cret-s3cret-s3cret-s3cret-s3cret"),
            Self.handMadeToken(#"{"user":"alice"}"#, secret: "s3cret-s3cret-s3cret-s3cret-s3cret"),
            "a.b",
            "",
        ]
        for token in cases {
            await #expect(throws: TokenError.self) { try await tokens.verify(token) }
            do {
                _ = try await tokens.verify(token)
            } catch {
                guard case .invalid = error else {
                    Issue.record("\(token): \(error)")
                    continue
                }
            }
        }
    }

    @Test func expiredIsToldApartFromInvalid() async throws {
        let tokens = try await ConnectionTokens(secret: "s3cret-s3cret-s3cret-s3cret-s3cret")
        let token = Self.handMadeToken(
            #"{"sub":"alice","exp":\#(Int(Date().timeIntervalSince1970) - 5)}"#, secret: "s3cret-s3cret-s3cret-s3cret-s3cret")
        await #expect(throws: TokenError.expired) { try await tokens.verify(token) }
    }

    @Test func mintedTokensVerifyByHand() async throws {
        let token = try await ConnectionTokens(secret: "s3cret-s3cret-s3cret-s3cret-s3cret").mint(user: "bob", ttl: .seconds(60))
        let parts = token.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data((parts[0] + "." + parts[1]).utf8), using: SymmetricKey(data: Data("s3cret-s3cret-s3cret-s3cret-s3cret".utf8)))
        #expect(Self.base64URL(Data(mac)) == parts[2])
    }

    static let secret = "s3cret-s3cret-s3cret-s3cret-s3cret"
    static let future = Int(Date().timeIntervalSince1970) + 3600

    /// `info`, `meta` and `data` keep their bytes; `b64info` is read when it holds JSON;
    /// `expire_at` decides the connection's end over `exp`, and 0 means never.
    @Test func claimsAreReadAsCentrifugoReadsThem() async throws {
        let tokens = try await ConnectionTokens(secret: Self.secret)
        let plain = try await tokens.verify(
            Self.handMadeToken(
                #"{"sub":"alice","exp":\#(Self.future),"expire_at":\#(Self.future + 60),"info":{"a" : 1.50},"meta":{"plan":"gold"},"iat":1,"jti":"x"}"#,
                secret: Self.secret))
        #expect(plain.info?.bytes == Array(#"{"a" : 1.50}"#.utf8))
        #expect(plain.meta?.bytes == Array(#"{"plan":"gold"}"#.utf8))
        #expect(plain.expiresAt == Date(timeIntervalSince1970: Double(Self.future + 60)))
        let never = try await tokens.verify(Self.handMadeToken(#"{"sub":"alice","exp":\#(Self.future),"expire_at":0}"#, secret: Self.secret))
        #expect(never.expiresAt == nil)
        let binary = try await tokens.verify(
            Self.handMadeToken(
                #"{"sub":"alice","b64info":"\#(Data(#"{"b":2}"#.utf8).base64EncodedString())"}"#, secret: Self.secret))
        #expect(binary.info?.bytes == Array(#"{"b":2}"#.utf8))
        for claims in [
            #"{"sub":"alice","b64info":"\#(Data([0xFF, 0x00]).base64EncodedString())"}"#, #"{"sub":"alice","iat":"yesterday"}"#,
            #"{"sub":"alice","expire_at":-1}"#, #"{"sub":7}"#,
        ] {
            await #expect(throws: TokenError.self, "\(claims)") { try await tokens.verify(Self.handMadeToken(claims, secret: Self.secret)) }
        }
    }

    @Test func audienceAndIssuerAreCheckedWhenConfigured() async throws {
        let tokens = try await ConnectionTokens(keys: TokenKeys(hmacSecret: Self.secret, audience: "gondola", issuer: "https://auth.example"))
        for claims in [
            #"{"sub":"a","aud":"gondola","iss":"https://auth.example"}"#, #"{"sub":"a","aud":["x","gondola"],"iss":"https://auth.example"}"#,
        ] {
            #expect(try await tokens.verify(Self.handMadeToken(claims, secret: Self.secret)).user == "a")
        }
        for claims in [
            #"{"sub":"a","aud":"other","iss":"https://auth.example"}"#, #"{"sub":"a","iss":"https://auth.example"}"#,
            #"{"sub":"a","aud":"gondola","iss":"https://evil.example"}"#, #"{"sub":"a","aud":"gondola"}"#,
        ] {
            await #expect(throws: TokenError.self, "\(claims)") { try await tokens.verify(Self.handMadeToken(claims, secret: Self.secret)) }
        }
    }

    /// HS384 and HS512 need a secret at least as long as their hash.
    @Test func longerHMACsNeedLongerSecrets() async throws {
        let long = String(repeating: "k", count: 64)
        let tokens = try await ConnectionTokens(secret: long)
        for (alg, sign) in [
            ("HS384", { (input: Data) in Data(HMAC<SHA384>.authenticationCode(for: input, using: SymmetricKey(data: Data(long.utf8)))) }),
            ("HS512", { (input: Data) in Data(HMAC<SHA512>.authenticationCode(for: input, using: SymmetricKey(data: Data(long.utf8)))) }),
        ] {
            let token = Self.signed(#"{"sub":"alice"}"#, header: #"{"alg":"\#(alg)","typ":"JWT"}"#, sign: sign)
            #expect(try await tokens.verify(token).user == "alice")
        }
        let short = try await ConnectionTokens(secret: Self.secret)
        let hs384 = Self.signed(#"{"sub":"alice"}"#, header: #"{"alg":"HS384"}"#) { input in
            Data(HMAC<SHA384>.authenticationCode(for: input, using: SymmetricKey(data: Data(Self.secret.utf8))))
        }
        await #expect(throws: TokenError.invalid("token algorithm HS384 has no configured key")) { try await short.verify(hs384) }
    }

    /// RS256 and ES256 tokens verify with configured PEM public keys; a token signed by the
    /// RSA key but labelled HS256 (the algorithm-confusion attack) does not.
    @Test func publicKeyTokensVerifyWithTheirKeysOnly() async throws {
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let ecdsa = P256.Signing.PrivateKey()
        let tokens = try await ConnectionTokens(
            keys: TokenKeys(
                hmacSecret: Self.secret, rsaPublicKeyPEM: rsa.publicKey.pemRepresentation,
                ecdsaPublicKeyPEM: ecdsa.publicKey.pemRepresentation))
        let rs256 = try Self.signed(#"{"sub":"rsa-user"}"#, header: #"{"alg":"RS256","typ":"JWT"}"#) { input in
            try rsa.signature(for: input, padding: .insecurePKCS1v1_5).rawRepresentation
        }
        #expect(try await tokens.verify(rs256).user == "rsa-user")
        let es256 = try Self.signed(#"{"sub":"ec-user"}"#, header: #"{"alg":"ES256","typ":"JWT"}"#) { input in
            try ecdsa.signature(for: input).rawRepresentation
        }
        #expect(try await tokens.verify(es256).user == "ec-user")
        let confused = Self.signed(#"{"sub":"mallory"}"#, header: #"{"alg":"HS256"}"#) { input in
            Data(HMAC<SHA256>.authenticationCode(for: input, using: SymmetricKey(data: Data(rsa.publicKey.pemRepresentation.utf8))))
        }
        await #expect(throws: TokenError.self) { try await tokens.verify(confused) }
        let otherKey = try Self.signed(#"{"sub":"mallory"}"#, header: #"{"alg":"ES256"}"#) { input in
            try P256.Signing.PrivateKey().signature(for: input).rawRepresentation
        }
        await #expect(throws: TokenError.self) { try await tokens.verify(otherKey) }
    }

    /// A token whose header names a `kid` is verified with that key of the configured JWKS.
    @Test func aJWKSKeyIsPickedByItsKid() async throws {
        let key = P256.Signing.PrivateKey()
        let coordinates = key.publicKey.rawRepresentation
        let jwks =
            #"{"keys":[{"kty":"EC","crv":"P-256","alg":"ES256","kid":"k1","x":"\#(Self.base64URL(coordinates.prefix(32)))","y":"\#(Self.base64URL(coordinates.suffix(32)))"}]}"#
        let tokens = try await ConnectionTokens(keys: TokenKeys(hmacSecret: Self.secret, jwksJSON: jwks))
        let token = try Self.signed(#"{"sub":"jwks-user"}"#, header: #"{"alg":"ES256","kid":"k1"}"#) { input in
            try key.signature(for: input).rawRepresentation
        }
        #expect(try await tokens.verify(token).user == "jwks-user")
        // A kid the set does not have is refused even when the signature is by one of its keys.
        let unknown = try Self.signed(#"{"sub":"jwks-user"}"#, header: #"{"alg":"ES256","kid":"k2"}"#) { input in
            try key.signature(for: input).rawRepresentation
        }
        await #expect(throws: TokenError.invalid("token kid 'k2' is not in the JWKS")) { try await tokens.verify(unknown) }
    }

    @Test func unusableKeysAreNamed() async throws {
        for (keys, expected) in [
            (TokenKeys(hmacSecret: Self.secret, rsaPublicKeyPEM: "not a key"), "token_rsa_public_key"),
            (TokenKeys(hmacSecret: Self.secret, ecdsaPublicKeyPEM: "not a key"), "token_ecdsa_public_key"),
            (TokenKeys(hmacSecret: Self.secret, jwksJSON: "{}"), "token_jwks_file"),
            (TokenKeys(hmacSecret: "short"), "token_hmac_secret"),
        ] {
            do {
                _ = try await ConnectionTokens(keys: keys)
                Issue.record("accepted \(expected)")
            } catch {
                #expect(error.description.hasPrefix(expected), "\(error)")
            }
        }
    }
}
