import GondolaStore
import GRDB

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

/// Accounts and their one-time keys in SQLite. Writes that also queue a mail take the
/// mail and run it in their transaction.
struct AccountRepository: Sendable {
    let database: GondolaDatabase

    private static let selectAccount = """
        SELECT a.user_id, u.name, a.email, a.password_hash, a.activated_at_ms FROM account a JOIN user u ON u.id = a.user_id
        """

    private static func account(_ row: Row) -> Account {
        Account(userID: row["user_id"], name: row["name"], email: row["email"], passwordHash: row["password_hash"], activatedAt: row["activated_at_ms"])
    }

    func account(email: String) throws -> Account? {
        try database.pool.read { db in try Row.fetchOne(db, sql: Self.selectAccount + " WHERE a.email = ?", arguments: [email]).map(Self.account) }
    }

    func account(user: String) throws -> Account? {
        try database.pool.read { db in try Row.fetchOne(db, sql: Self.selectAccount + " WHERE a.user_id = ?", arguments: [user]).map(Self.account) }
    }

    /// Creates the user, its account and an activation key, and runs `then` (queueing the
    /// mail) in the same transaction; nil when the email is taken.
    func create(user: User, email: String, passwordHash: String, keyHash: String, now: Int64,
                then: (Database) throws -> Void) throws -> Account? {
        try database.pool.write { db in
            guard try !Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM account WHERE email = ?)", arguments: [email])! else { return nil }
            try SQLiteUserRepository.insert(user, in: db, now: now)
            try db.execute(sql: "INSERT INTO account (user_id, email, password_hash, created_at_ms) VALUES (?, ?, ?, ?)",
                           arguments: [user.id, email, passwordHash, now])
            try Self.insertKey(keyHash, user: user.id, purpose: .activate, now: now, in: db)
            try then(db)
            return Account(userID: user.id, name: user.name, email: email, passwordHash: passwordHash, activatedAt: nil)
        }
    }

    /// A new key for `user`, with `then` (queueing the mail) in the same transaction.
    func addKey(_ keyHash: String, user: String, purpose: AccountKeyPurpose, now: Int64, then: (Database) throws -> Void) throws {
        try database.pool.write { db in
            try Self.insertKey(keyHash, user: user, purpose: purpose, now: now, in: db)
            try then(db)
        }
    }

    private static func insertKey(_ keyHash: String, user: String, purpose: AccountKeyPurpose, now: Int64, in db: Database) throws {
        try db.execute(sql: "INSERT INTO account_key (key_hash, user_id, purpose, expires_at_ms) VALUES (?, ?, ?, ?)",
                       arguments: [keyHash, user, purpose.rawValue, now + purpose.lifetime])
    }

    /// Uses a key once: checks it and, when it is good, marks it used and runs `apply`
    /// on its user in the same transaction (activating, setting a password).
    func use(_ keyHash: String, purpose: AccountKeyPurpose, now: Int64, apply: (Database, String) throws -> Void) throws -> KeyUse {
        try database.pool.write { db in
            guard let row = try Row.fetchOne(db, sql: """
                SELECT k.user_id, k.expires_at_ms, k.used_at_ms, a.activated_at_ms FROM account_key k JOIN account a ON a.user_id = k.user_id
                WHERE k.key_hash = ? AND k.purpose = ?
                """, arguments: [keyHash, purpose.rawValue]) else { return .unknown }
            let user: String = row["user_id"]
            if row["used_at_ms"] as Int64? != nil {
                return .alreadyUsed(userID: user, accountActivated: row["activated_at_ms"] as Int64? != nil)
            }
            guard (row["expires_at_ms"] as Int64) > now else { return .expired }
            try db.execute(sql: "UPDATE account_key SET used_at_ms = ? WHERE key_hash = ?", arguments: [now, keyHash])
            try apply(db, user)
            return .used(userID: user)
        }
    }

    static func activate(_ user: String, now: Int64, in db: Database) throws {
        try db.execute(sql: "UPDATE account SET activated_at_ms = COALESCE(activated_at_ms, ?) WHERE user_id = ?", arguments: [now, user])
    }

    /// Sets a new password hash; other unused reset keys of the user stop working.
    static func setPassword(_ user: String, hash: String, now: Int64, in db: Database) throws {
        try db.execute(sql: "UPDATE account SET password_hash = ? WHERE user_id = ?", arguments: [hash, user])
        try db.execute(sql: "UPDATE account_key SET used_at_ms = ? WHERE user_id = ? AND purpose = 'reset' AND used_at_ms IS NULL",
                       arguments: [now, user])
    }

    func setPassword(_ user: String, hash: String, now: Int64) throws {
        try database.pool.write { db in try Self.setPassword(user, hash: hash, now: now, in: db) }
    }
}
