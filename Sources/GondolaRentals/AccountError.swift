import GondolaDomain
import GondolaProtocol
import Hummingbird

/// A refused account request: an HTTP status and a JSON body
/// `{"error": {"code": "...", "message": "...", "field": "..."}}`, where `code` is a
/// stable word an app can switch on and `field` names the request field at fault.
struct AccountError: Error, Sendable, Equatable {
    let status: HTTPResponse.Status
    let code: String
    let message: String
    var field: String? = nil
    /// Seconds a client should wait before trying again (429 and 503 only).
    var retryAfter: Int? = nil

    var response: Response {
        var error: JSON = ["code": .string(code), "message": .string(message)]
        if let field { error = error.adding("field", .string(field)) }
        var response = JSONResponse.make(["error": error], status: status)
        if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
        return response
    }

    static func badBody(_ problem: JSONBodyError) -> AccountError {
        AccountError(status: problem.status, code: problem.status == .contentTooLarge ? "body_too_large" : "bad_body", message: problem.message)
    }

    static func missing(_ field: String, _ expected: String) -> AccountError {
        AccountError(status: .badRequest, code: "missing_field", message: "\(field): expected \(expected)", field: field)
    }

    static func invalid(_ field: String, _ message: String) -> AccountError {
        AccountError(status: .unprocessableContent, code: "invalid_field", message: "\(field): \(message)", field: field)
    }

    static let invalidCredentials = AccountError(status: .unauthorized, code: "invalid_credentials", message: "the email or the password is wrong")
    static let notActivated = AccountError(
        status: .forbidden, code: "account_not_activated",
        message: "the account is not activated yet: follow the link in the activation mail")
    static let emailTaken = AccountError(status: .conflict, code: "email_taken", message: "an account with this email exists", field: "email")
    static let keyUnknown = AccountError(status: .notFound, code: "key_not_found", message: "this key is unknown or was already used", field: "key")
    static let keyExpired = AccountError(status: .gone, code: "key_expired", message: "this key has expired: ask for a new mail", field: "key")

    static func tooManyAttempts(retryAfter seconds: Int) -> AccountError {
        AccountError(
            status: .tooManyRequests, code: "too_many_attempts",
            message: "too many attempts: try again in \(seconds) s", retryAfter: seconds)
    }

    static func internalError(_ what: String) -> AccountError {
        AccountError(status: .internalServerError, code: "internal_error", message: what)
    }
}
