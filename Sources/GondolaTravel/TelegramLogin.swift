import Crypto
import Foundation
import GondolaProtocol
import GondolaStore

/// Why a Telegram Login Widget payload was refused.
public enum TelegramLoginError: Error, Equatable, CustomStringConvertible {
    case missingField(String)
    case badField(String)
    case badHash
    case expired

    public var description: String {
        switch self {
        case let .missingField(name): return "field '\(name)' is required"
        case let .badField(name): return "field '\(name)' has the wrong type"
        case .badHash: return "hash does not match the data"
        case .expired: return "auth_date is older than 24 hours"
        }
    }
}

/// Verifies the data of Telegram's Login Widget as Telegram documents it: the
/// `hash` is the hex HMAC-SHA256 of the data-check string (every other field as
/// `key=value`, sorted by key, joined by newlines), keyed by SHA-256 of the bot token.
public struct TelegramLogin: Sendable {
    /// How old `auth_date` may be.
    public static let maxAge: TimeInterval = 24 * 3600

    private let key: SymmetricKey

    public init(botToken: String) {
        key = SymmetricKey(data: SHA256.hash(data: Data(botToken.utf8)))
    }

    /// The data-check string of the widget's fields.
    public static func dataCheckString(_ fields: [(key: String, value: JSON)]) -> String {
        fields.filter { $0.key != "hash" && !$0.value.isNull }
            .sorted { $0.key < $1.key }
            .map { field in
                if case let .string(text) = field.value { return "\(field.key)=\(text)" }
                return "\(field.key)=\(field.value.text)"
            }
            .joined(separator: "\n")
    }

    /// Checks the hash and the age of the payload and returns the account it names.
    public func verify(_ payload: JSON, now: Date = Date()) throws(TelegramLoginError) -> TelegramAccount {
        guard case let .object(fields) = payload else { throw .missingField("id") }
        guard let hashValue = payload["hash"] else { throw .missingField("hash") }
        guard case let .string(hash) = hashValue else { throw .badField("hash") }
        guard let idValue = payload["id"] else { throw .missingField("id") }
        guard let authValue = payload["auth_date"] else { throw .missingField("auth_date") }
        guard let telegramID = Self.integer(idValue) else { throw .badField("id") }
        guard let authDate = Self.integer(authValue) else { throw .badField("auth_date") }
        for field in fields where !field.value.isNull {
            switch field.value {
            case .string, .int: continue
            default: throw .badField(field.key)
            }
        }
        let mac = HMAC<SHA256>.authenticationCode(for: Data(Self.dataCheckString(fields).utf8), using: key)
        guard let given = Self.hexBytes(hash), given.count == 32, mac == given else { throw .badHash }
        guard now.timeIntervalSince1970 - Double(authDate) <= Self.maxAge else { throw .expired }
        let first = Self.text(payload["first_name"])
        let last = Self.text(payload["last_name"])
        let username = Self.text(payload["username"])
        let name = [first, last].compactMap { $0 }.joined(separator: " ")
        return TelegramAccount(
            telegramID: telegramID, username: username,
            displayName: name.isEmpty ? (username ?? "Traveller") : name,
            photoURL: Self.text(payload["photo_url"]))
    }

    private static func integer(_ value: JSON) -> Int64? {
        switch value {
        case let .int(number): return number
        case let .string(text): return Int64(text)
        default: return nil
        }
    }

    private static func text(_ value: JSON?) -> String? {
        guard case let .string(text)? = value, !text.isEmpty else { return nil }
        return text
    }

    private static func hexBytes(_ hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
            index += 2
        }
        return bytes
    }
}
