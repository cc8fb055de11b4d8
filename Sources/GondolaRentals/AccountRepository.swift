import GRDB
import GondolaServices
import GondolaStore

/// An email-and-password account of a user.
struct Account: Sendable, Equatable {
    let userID: String
    let name: String
    let email: String
    let passwordHash: String
    let activatedAt: Int64?
}

/// What a one-time key opened.
enum KeyUse: Sendable, Equatable {
    case used(userID: String)
    case unknown
    case alreadyUsed(userID: String, accountActivated: Bool)
    case expired
}

/// What using a one-time key does to its account, in the key's transaction.
enum KeyEffect: Sendable, Equatable {
    /// The account becomes activated (if it was not).
    case activate
    /// The password becomes `hash`, the user's other reset keys stop working, and the
    /// account counts as activated (the key proves the mailbox).
    case resetPassword(hash: String)
}

/// Where accounts and their one-time keys live. A write that sends a mail queues it in
/// the mail outbox in the same transaction, so the mail is sent exactly when the write
/// is committed.
protocol AccountRepository: Sendable {
    func account(email: String) async throws -> Account?
    func account(user: String) async throws -> Account?
    /// Creates the user, its account and an activation key, and queues `mail`; nil when
    /// the email is taken.
    func create(user: User, email: String, passwordHash: String, keyHash: String, now: Int64, mail: MailMessage) async throws -> Account?
    /// Adds a key for `user` and queues `mail`.
    func addKey(_ keyHash: String, user: String, purpose: AccountKeyPurpose, now: Int64, mail: MailMessage) async throws
    /// Uses a key once: checks it and, when it is good, marks it used and applies `effect`.
    func use(_ keyHash: String, purpose: AccountKeyPurpose, now: Int64, effect: KeyEffect) async throws -> KeyUse
    /// Sets a new password hash; the user's unused reset keys stop working.
    func setPassword(_ user: String, hash: String, now: Int64) async throws
}

/// Accounts and their one-time keys in SQLite, mails queued in its `mail_outbox`.
struct SQLiteAccountRepository: AccountRepository {
    let database: GondolaDatabase

    private static let selectAccount = """
        SELECT a.user_id, u.name, a.email, a.password_hash, a.activated_at_ms FROM account a JOIN user u ON u.id = a.user_id
        """

    private static func account(_ row: Row) -> Account {
        Account(
            userID: row["user_id"], name: row["name"], email: row["email"], passwordHash: row["password_hash"], activatedAt: row["activated_at_ms"])
    }

    func account(email: String) throws -> Account? {
        try database.pool.read { db in try Row.fetchOne(db, sql: Self.selectAccount + " WHERE a.email = ?", arguments: [email]).map(Self.account) }
    }

    func account(user: String) throws -> Account? {
        try database.pool.read { db in try Row.fetchOne(db, sql: Self.selectAccount + " WHERE a.user_id = ?", arguments: [user]).map(Self.account) }
    }

    func create(user: User, email: String, passwordHash: String, keyHash: String, now: Int64, mail: MailMessage) throws -> Account? {
        try database.pool.write { db in
            guard try !Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM account WHERE email = ?)", arguments: [email])! else { return nil }
            try SQLiteUserRepository.insert(user, in: db, now: now)
            try db.execute(
                sql: "INSERT INTO account (user_id, email, password_hash, created_at_ms) VALUES (?, ?, ?, ?)",
                arguments: [user.id, email, passwordHash, now])
            try Self.insertKey(keyHash, user: user.id, purpose: .activate, now: now, in: db)
            try SQLiteMailQueue.enqueue(mail, in: db, now: now)
            return Account(userID: user.id, name: user.name, email: email, passwordHash: passwordHash, activatedAt: nil)
        }
    }

    func addKey(_ keyHash: String, user: String, purpose: AccountKeyPurpose, now: Int64, mail: MailMessage) throws {
        try database.pool.write { db in
            try Self.insertKey(keyHash, user: user, purpose: purpose, now: now, in: db)
            try SQLiteMailQueue.enqueue(mail, in: db, now: now)
        }
    }

    private static func insertKey(_ keyHash: String, user: String, purpose: AccountKeyPurpose, now: Int64, in db: Database) throws {
        try db.execute(
            sql: "INSERT INTO account_key (key_hash, user_id, purpose, expires_at_ms) VALUES (?, ?, ?, ?)",
            arguments: [keyHash, user, purpose.rawValue, now + purpose.lifetime])
    }

    func use(_ keyHash: String, purpose: AccountKeyPurpose, now: Int64, effect: KeyEffect) throws -> KeyUse {
        try database.pool.write { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT k.user_id, k.expires_at_ms, k.used_at_ms, a.activated_at_ms FROM account_key k JOIN account a ON a.user_id = k.user_id
                        WHERE k.key_hash = ? AND k.purpose = ?
                        """, arguments: [keyHash, purpose.rawValue])
            else { return .unknown }
            let user: String = row["user_id"]
            if row["used_at_ms"] as Int64? != nil {
                return .alreadyUsed(userID: user, accountActivated: row["activated_at_ms"] as Int64? != nil)
            }
            guard (row["expires_at_ms"] as Int64) > now else { return .expired }
            try db.execute(sql: "UPDATE account_key SET used_at_ms = ? WHERE key_hash = ?", arguments: [now, keyHash])
            if case let .resetPassword(hash) = effect { try Self.setPassword(user, hash: hash, now: now, in: db) }
            try db.execute(sql: "UPDATE account SET activated_at_ms = COALESCE(activated_at_ms, ?) WHERE user_id = ?", arguments: [now, user])
            return .used(userID: user)
        }
    }

    private static func setPassword(_ user: String, hash: String, now: Int64, in db: Database) throws {
        try db.execute(sql: "UPDATE account SET password_hash = ? WHERE user_id = ?", arguments: [hash, user])
        try db.execute(
            sql: "UPDATE account_key SET used_at_ms = ? WHERE user_id = ? AND purpose = 'reset' AND used_at_ms IS NULL",
            arguments: [now, user])
    }

    func setPassword(_ user: String, hash: String, now: Int64) throws {
        try database.pool.write { db in try Self.setPassword(user, hash: hash, now: now, in: db) }
    }
}
