import Crypto
import Foundation

/// Links that grant one resource to whoever holds them, until they expire: the
/// resource, a link id and the expiry, signed with HMAC-SHA256 under a key derived from
/// the server secret. A domain revokes a link by forgetting its id (`verify` answers the
/// id; the domain compares it with the one it keeps).
public struct SignedLinks: Sendable {
    private let key: SymmetricKey

    /// `purpose` separates the keys of different uses of the same secret.
    public init(secret: String, purpose: String = "signed-links") {
        key = SymmetricKey(data: HMAC<SHA256>.authenticationCode(for: Data(purpose.utf8), using: SymmetricKey(data: Data(secret.utf8))))
    }

    /// What a valid link grants.
    public struct Grant: Sendable, Equatable {
        public let resource: String
        public let id: String
        /// Unix milliseconds.
        public let expiresAt: Int64
    }

    /// A URL-safe token for `resource` under link `id`, valid until `expiresAt`.
    public func sign(resource: String, id: String, expiresAt: Int64) -> String {
        let payload = Data("\(resource)\n\(id)\n\(expiresAt)".utf8)
        let signature = Data(HMAC<SHA256>.authenticationCode(for: payload, using: key))
        return Self.base64URL(payload) + "." + Self.base64URL(signature)
    }

    /// The grant of a token whose signature is right and whose expiry is after `now`;
    /// nil for anything else (forged, altered, expired, malformed).
    public func verify(_ token: String, now: Int64) -> Grant? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let payload = Self.data(base64URL: parts[0]), let signature = Self.data(base64URL: parts[1]),
            HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: payload, using: key)
        else { return nil }
        let fields = String(decoding: payload, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        guard fields.count == 3, let expiresAt = Int64(fields[2]), expiresAt > now else { return nil }
        return Grant(resource: String(fields[0]), id: String(fields[1]), expiresAt: expiresAt)
    }

    private static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    private static func data(base64URL text: Substring) -> Data? {
        guard text.count <= 4096 else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
