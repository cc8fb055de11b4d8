import Crypto
import Foundation

/// The one-time keys of activation and password-reset mails: 32 random bytes as
/// base64url (43 characters) in the mail; only their SHA-256 is stored, so a copy of the
/// database opens no account.
enum AccountKeys {
    static let keyLength = 43

    static func make() -> String {
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max) }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func hash(_ key: String) -> String {
        SHA256.hash(data: Data(key.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}

/// What a one-time key is for, and how long it lasts.
enum AccountKeyPurpose: String, Sendable {
    case activate
    case reset

    var lifetime: Int64 {
        switch self {
        case .activate: 7 * 86_400_000
        case .reset: 86_400_000
        }
    }
}
