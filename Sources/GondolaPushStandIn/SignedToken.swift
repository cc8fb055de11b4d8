import Crypto
import CryptoExtras
import Foundation
import GondolaProtocol

/// A JWT taken apart and its signature checked with the issuer's public key, independently
/// of the library the hub signs with.
struct SignedToken: Sendable {
    let header: [String: JSON]
    let claims: [String: JSON]

    /// A failed check, saying what was wrong.
    struct Invalid: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    enum Verifier {
        case es256(P256.Signing.PublicKey)
        case rs256(_RSA.Signing.PublicKey)
    }

    init(_ token: String, verifiedWith verifier: Verifier) throws {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Self.base64URL(parts[0]), let claimBytes = Self.base64URL(parts[1]),
            let signature = Self.base64URL(parts[2])
        else { throw Invalid("not a JWT") }
        header = try Self.object(headerBytes, "header")
        claims = try Self.object(claimBytes, "claims")
        let signed = Data((parts[0] + "." + parts[1]).utf8)
        switch verifier {
        case let .es256(key):
            guard header["alg"] == "ES256" else { throw Invalid("alg is \(header["alg"]?.text ?? "missing"), expected ES256") }
            guard let raw = try? P256.Signing.ECDSASignature(rawRepresentation: signature), key.isValidSignature(raw, for: SHA256.hash(data: signed))
            else { throw Invalid("ES256 signature does not verify") }
        case let .rs256(key):
            guard header["alg"] == "RS256" else { throw Invalid("alg is \(header["alg"]?.text ?? "missing"), expected RS256") }
            guard
                key.isValidSignature(
                    _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: signed),
                    padding: .insecurePKCS1v1_5)
            else { throw Invalid("RS256 signature does not verify") }
        }
    }

    /// A claim as a whole number (`iat`, `exp`).
    func integer(_ name: String) -> Int64? {
        switch claims[name] {
        case let .int(value)?: value
        case let .double(value)?: Int64(value)
        default: nil
        }
    }

    func string(_ name: String) -> String? {
        if case let .string(value)? = claims[name] { return value }
        return nil
    }

    private static func object(_ bytes: Data, _ part: String) throws -> [String: JSON] {
        guard case let .object(members)? = try? JSONParser.parse(Array(bytes)) else { throw Invalid("\(part) is not a JSON object") }
        return Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
    }

    private static func base64URL(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
