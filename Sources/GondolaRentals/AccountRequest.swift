import Foundation
import GondolaDomain
import GondolaProtocol
import Hummingbird

/// The JSON object of an account request, read field by field; each refusal is an
/// `AccountError` naming the field (400 when it is missing or of the wrong type, 422
/// when its value is not acceptable).
struct AccountRequest: Sendable {
    static let bodyLimit = 16 * 1024
    /// bcrypt reads at most 72 bytes of a password; longer ones are refused, not cut.
    static let passwordBytes = 8...72
    static let maxEmailLength = 254
    static let maxNameLength = 100

    let body: JSON

    static func read(_ request: Request) async throws(AccountError) -> AccountRequest {
        switch await JSONBody.object(of: request, limit: bodyLimit) {
        case let .success(json): return AccountRequest(body: json)
        case let .failure(problem): throw .badBody(problem)
        }
    }

    func string(_ field: String) throws(AccountError) -> String {
        guard case let .string(text)? = body[field] else { throw .missing(field, "a string") }
        return text
    }

    /// An address shaped like `name@domain.tld`, lowercased, at most 254 characters.
    func email(_ field: String = "email") throws(AccountError) -> String {
        let email = try string(field).trimmingCharacters(in: .whitespaces).lowercased()
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard email.count <= Self.maxEmailLength, parts.count == 2, !parts[0].isEmpty, parts[1].contains("."),
            !parts[1].hasPrefix("."), !parts[1].hasSuffix("."),
            !email.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control })
        else {
            throw .invalid(field, "expected an email address like name@example.com")
        }
        return email
    }

    /// A password of 8 to 72 bytes.
    func password(_ field: String) throws(AccountError) -> String {
        let password = try string(field)
        guard Self.passwordBytes.contains(password.utf8.count) else {
            throw .invalid(
                field, "a password has \(Self.passwordBytes.lowerBound) to \(Self.passwordBytes.upperBound) bytes, got \(password.utf8.count)")
        }
        return password
    }

    /// A display name of 1 to 100 characters, trimmed.
    func name(_ field: String = "name") throws(AccountError) -> String {
        let name = try string(field).trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...Self.maxNameLength).contains(name.count),
            !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw .invalid(field, "a name has 1 to \(Self.maxNameLength) characters without control characters")
        }
        return name
    }

    /// A key from a mail: 43 characters of base64url.
    func key(_ field: String = "key") throws(AccountError) -> String {
        try Self.key(try string(field), field: field)
    }

    static func key(_ text: String, field: String = "key") throws(AccountError) -> String {
        guard text.utf8.count == AccountKeys.keyLength,
            text.utf8.allSatisfy({ isalnum(Int32($0)) != 0 || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") })
        else {
            throw .invalid(field, "expected the key from the mail (\(AccountKeys.keyLength) characters)")
        }
        return text
    }
}
