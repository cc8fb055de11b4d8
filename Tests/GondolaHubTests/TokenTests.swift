import Crypto
import Foundation
import GondolaHub
import GondolaProtocol
import Testing

/// Tokens built by hand (base64url + HMAC-SHA256 from swift-crypto), independent of the JWT library.
@Suite struct TokenTests {
    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func handMadeToken(_ claims: String, secret: String, header: String = #"{"alg":"HS256","typ":"JWT"}"#) -> String {
        let signingInput = base64URL(Data(header.utf8)) + "." + base64URL(Data(claims.utf8))
        let mac = HMAC<SHA256>.authenticationCode(for: Data(signingInput.utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return signingInput + "." + base64URL(Data(mac))
    }

    @Test func acceptsAHandMadeHS256Token() async throws {
        let tokens = try await ConnectionTokens(secret: "s3cret-s3cret-s3cret-s3cret-s3cret")
        let exp = Int(Date().timeIntervalSince1970) + 3600
        let token = Self.handMadeToken(#"{"sub":"alice","exp":\#(exp),"info":{"name":"Alice","tags":[1,2]}}"#, secret: "s3cret-s3cret-s3cret-s3cret-s3cret")
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
                guard case .invalid = error else { Issue.record("\(token): \(error)"); continue }
            }
        }
    }

    @Test func expiredIsToldApartFromInvalid() async throws {
        let tokens = try await ConnectionTokens(secret: "s3cret-s3cret-s3cret-s3cret-s3cret")
        let token = Self.handMadeToken(#"{"sub":"alice","exp":\#(Int(Date().timeIntervalSince1970) - 5)}"#, secret: "s3cret-s3cret-s3cret-s3cret-s3cret")
        await #expect(throws: TokenError.expired) { try await tokens.verify(token) }
    }

    @Test func mintedTokensVerifyByHand() async throws {
        let token = try await ConnectionTokens(secret: "s3cret-s3cret-s3cret-s3cret-s3cret").mint(user: "bob", ttl: .seconds(60))
        let parts = token.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        let mac = HMAC<SHA256>.authenticationCode(for: Data((parts[0] + "." + parts[1]).utf8), using: SymmetricKey(data: Data("s3cret-s3cret-s3cret-s3cret-s3cret".utf8)))
        #expect(Self.base64URL(Data(mac)) == parts[2])
    }
}
