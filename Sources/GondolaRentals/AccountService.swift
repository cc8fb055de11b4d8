import GRDB
import GondolaDomain
import GondolaHub
import GondolaServices
import GondolaStore
import Logging

/// Email-and-password accounts beside Telegram sign-in: registration with an activation
/// mail, login, password reset by mail and password change. Every answer that could
/// tell whether an address has an account (reset, resending the activation) is the same
/// either way, and a login with an unknown address costs a bcrypt check too.
///
/// Limits, each a sliding window kept in memory: 5 failed logins per address per 15
/// minutes and 20 per client address, 10 registrations per client address per hour,
/// 3 account mails per address per hour (more are dropped silently), 5 wrong current
/// passwords per user per 15 minutes. A refused attempt answers 429 with `Retry-After`.
final class AccountService: Sendable {
    let repository: any AccountRepository
    let hasher: PasswordHasher
    let mails: AccountMails
    let outbox: MailOutbox
    let logger: Logger
    let failedLoginsByEmail = AttemptThrottle(limit: 5, window: 15 * 60_000)
    let failedLoginsByAddress = AttemptThrottle(limit: 20, window: 15 * 60_000)
    let registrationsByAddress = AttemptThrottle(limit: 10, window: 3_600_000)
    let mailsByEmail = AttemptThrottle(limit: 3, window: 3_600_000)
    let wrongPasswordsByUser = AttemptThrottle(limit: 5, window: 15 * 60_000)

    init(repository: any AccountRepository, hasher: PasswordHasher, mails: AccountMails, outbox: MailOutbox, logger: Logger) {
        self.repository = repository
        self.hasher = hasher
        self.mails = mails
        self.outbox = outbox
        self.logger = logger
    }

    /// Creates an account that must be activated from the mail before it can sign in.
    func register(email: String, password: String, name: String, address: String) async throws(AccountError) -> Account {
        let now = unixMilliseconds()
        if let wait = registrationsByAddress.retryAfter(address, now: now) { throw .tooManyAttempts(retryAfter: wait) }
        registrationsByAddress.record(address, now: now)
        guard try await read({ try await repository.account(email: email) }) == nil else { throw .emailTaken }
        let hash = try await hashed(password)
        let key = AccountKeys.make()
        let user = User(id: RandomID.make("u", hexDigits: 15), name: name)
        let mail = try compose { try mails.activation(to: email, name: name, key: key) }
        let account = try await write {
            try await repository.create(user: user, email: email, passwordHash: hash, keyHash: AccountKeys.hash(key), now: now, mail: mail)
        }
        guard let account else { throw .emailTaken }
        mailsByEmail.record(email, now: now)
        outbox.kick()
        logger.info("account registered", metadata: ["user": "\(user.id)"])
        return account
    }

    /// Activates the account of an activation key; answers the user and whether this
    /// call activated it (false: it already was, by this key).
    func activate(key: String) async throws(AccountError) -> (user: String, activatedNow: Bool) {
        let now = unixMilliseconds()
        switch try await write({ try await repository.use(AccountKeys.hash(key), purpose: .activate, now: now, effect: .activate) }) {
        case let .used(user): return (user, true)
        case let .alreadyUsed(user, true): return (user, false)
        case .alreadyUsed, .unknown: throw .keyUnknown
        case .expired: throw .keyExpired
        }
    }

    /// The user of a right email and password of an activated account.
    func login(email: String, password: String, address: String) async throws(AccountError) -> User {
        let now = unixMilliseconds()
        let waits = [failedLoginsByEmail.retryAfter(email, now: now), failedLoginsByAddress.retryAfter(address, now: now)].compactMap { $0 }
        if let wait = waits.max() { throw .tooManyAttempts(retryAfter: wait) }
        let account = try await read { try await repository.account(email: email) }
        guard try await verified(password, against: account?.passwordHash), let account else {
            failedLoginsByEmail.record(email, now: now)
            failedLoginsByAddress.record(address, now: now)
            throw .invalidCredentials
        }
        failedLoginsByEmail.clear(email)
        guard account.activatedAt != nil else { throw .notActivated }
        return User(id: account.userID, name: account.name)
    }

    /// Mails a reset key when the address has an account; says nothing either way.
    func requestReset(email: String) async throws(AccountError) {
        try await mailKey(to: email, purpose: .reset) { account, key in try mails.reset(to: email, name: account.name, key: key) }
    }

    /// Mails a new activation key when the address has an account that is not activated.
    func resendActivation(email: String) async throws(AccountError) {
        try await mailKey(to: email, purpose: .activate, when: { $0.activatedAt == nil }) { account, key in
            try mails.activation(to: email, name: account.name, key: key)
        }
    }

    private func mailKey(
        to email: String, purpose: AccountKeyPurpose, when wanted: (Account) -> Bool = { _ in true },
        compose make: (Account, String) throws -> MailMessage
    ) async throws(AccountError) {
        let now = unixMilliseconds()
        guard let account = try await read({ try await repository.account(email: email) }), wanted(account) else { return }
        guard mailsByEmail.retryAfter(email, now: now) == nil else {
            logger.notice(
                "account mail not sent: too many for this address this hour", metadata: ["user": "\(account.userID)", "purpose": "\(purpose)"])
            return
        }
        let key = AccountKeys.make()
        let mail = try compose { try make(account, key) }
        try await write {
            try await repository.addKey(AccountKeys.hash(key), user: account.userID, purpose: purpose, now: now, mail: mail)
        }
        mailsByEmail.record(email, now: now)
        outbox.kick()
    }

    /// Sets a new password with a reset key (once, within 24 hours); the account counts as
    /// activated, since the key proves the mailbox.
    func finishReset(key: String, newPassword: String) async throws(AccountError) {
        let hash = try await hashed(newPassword)
        let now = unixMilliseconds()
        switch try await write({ try await repository.use(AccountKeys.hash(key), purpose: .reset, now: now, effect: .resetPassword(hash: hash)) }) {
        case .used: return
        case .unknown, .alreadyUsed: throw .keyUnknown
        case .expired: throw .keyExpired
        }
    }

    /// Changes the password of a signed-in user who knows the current one.
    func changePassword(user: String, current: String, new: String) async throws(AccountError) {
        let now = unixMilliseconds()
        if let wait = wrongPasswordsByUser.retryAfter(user, now: now) { throw .tooManyAttempts(retryAfter: wait) }
        guard let account = try await read({ try await repository.account(user: user) }) else {
            throw AccountError(status: .notFound, code: "no_account", message: "user \(user) has no email account (signed in with Telegram?)")
        }
        guard try await verified(current, against: account.passwordHash) else {
            wrongPasswordsByUser.record(user, now: now)
            throw AccountError(
                status: .unauthorized, code: "invalid_credentials", message: "the current password is wrong", field: "current_password")
        }
        let hash = try await hashed(new)
        try await write { try await repository.setPassword(user, hash: hash, now: now) }
    }

    // MARK: Plumbing

    private func hashed(_ password: String) async throws(AccountError) -> String {
        do { return try await hasher.hash(password) } catch { throw Self.busy(error) }
    }

    private func verified(_ password: String, against hash: String?) async throws(AccountError) -> Bool {
        do { return try await hasher.verify(password, against: hash) } catch { throw Self.busy(error) }
    }

    private static func busy(_ error: any Error) -> AccountError {
        AccountError(status: .serviceUnavailable, code: "busy", message: "too many password checks at once: try again shortly", retryAfter: 1)
    }

    private func compose<T>(_ body: () throws -> T) throws(AccountError) -> T {
        do { return try body() } catch { throw .internalError("cannot compose the mail: \(error)") }
    }

    private func read<T>(_ body: () async throws -> T) async throws(AccountError) -> T {
        do { return try await body() } catch { throw .internalError("database read failed: \(error)") }
    }

    private func write<T>(_ body: () async throws -> T) async throws(AccountError) -> T {
        do {
            return try await body()
        } catch is MailOutbox.Full {
            throw AccountError(
                status: .serviceUnavailable, code: "mail_queue_full", message: "too many mails are waiting to be sent: try again later",
                retryAfter: 60)
        } catch {
            throw .internalError("database write failed: \(error)")
        }
    }
}
