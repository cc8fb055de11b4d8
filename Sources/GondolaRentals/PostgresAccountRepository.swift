import GondolaHub
import GondolaPostgres
import GondolaServices
import GondolaStore
import PostgresNIO

/// Accounts and their one-time keys in PostgreSQL (cluster mode), users in the core
/// `app_user`, mails queued in its `mail_outbox` in the same transactions. Two nodes
/// registering one address at once: the unique email decides, and the loser's
/// transaction (its user row included) is rolled back.
struct PostgresAccountRepository: AccountRepository {
    let pool: PostgresPool

    private static let selectAccount = """
        SELECT a.user_id, u.name, a.email, a.password_hash, a.activated_at_ms FROM account a JOIN app_user u ON u.id = a.user_id
        """

    /// The address was taken meanwhile: rolls the registration back.
    private struct EmailTaken: Error {}

    func account(email: String) async throws -> Account? {
        try await pool.query("\(unescaped: Self.selectAccount) WHERE a.email = \(email)").first.map(Self.account)
    }

    func account(user: String) async throws -> Account? {
        try await pool.query("\(unescaped: Self.selectAccount) WHERE a.user_id = \(user)").first.map(Self.account)
    }

    func create(user: User, email: String, passwordHash: String, keyHash: String, now: Int64, mail: MailMessage) async throws -> Account? {
        do {
            return try await pool.transaction { connection in
                try await pool.run("INSERT INTO app_user (id, name, created_at_ms) VALUES (\(user.id), \(user.name), \(now))", on: connection)
                let inserted = try await pool.run(
                    """
                    INSERT INTO account (user_id, email, password_hash, created_at_ms) VALUES (\(user.id), \(email), \(passwordHash), \(now))
                    ON CONFLICT (email) DO NOTHING RETURNING user_id
                    """, on: connection)
                guard inserted.first != nil else { throw EmailTaken() }
                try await Self.insertKey(keyHash, user: user.id, purpose: .activate, now: now, on: connection, pool)
                try await PostgresMailQueue.enqueue(mail, on: connection, pool, now: now)
                return Account(userID: user.id, name: user.name, email: email, passwordHash: passwordHash, activatedAt: nil)
            }
        } catch is EmailTaken {
            return nil
        }
    }

    func addKey(_ keyHash: String, user: String, purpose: AccountKeyPurpose, now: Int64, mail: MailMessage) async throws {
        try await pool.transaction { connection in
            try await Self.insertKey(keyHash, user: user, purpose: purpose, now: now, on: connection, pool)
            try await PostgresMailQueue.enqueue(mail, on: connection, pool, now: now)
        }
    }

    func use(_ keyHash: String, purpose: AccountKeyPurpose, now: Int64, effect: KeyEffect) async throws -> KeyUse {
        try await pool.transaction { connection in
            guard
                let row = try await pool.run(
                    """
                    SELECT k.user_id, k.expires_at_ms, k.used_at_ms, a.activated_at_ms FROM account_key k JOIN account a ON a.user_id = k.user_id
                    WHERE k.key_hash = \(keyHash) AND k.purpose = \(purpose.rawValue) FOR UPDATE OF k
                    """, on: connection
                ).first
            else { return .unknown }
            let (user, expiresAt, usedAt, activatedAt) = try row.decode((String, Int64, Int64?, Int64?).self)
            if usedAt != nil { return .alreadyUsed(userID: user, accountActivated: activatedAt != nil) }
            guard expiresAt > now else { return .expired }
            try await pool.run("UPDATE account_key SET used_at_ms = \(now) WHERE key_hash = \(keyHash)", on: connection)
            if case let .resetPassword(hash) = effect { try await Self.setPassword(user, hash: hash, now: now, on: connection, pool) }
            try await pool.run("UPDATE account SET activated_at_ms = COALESCE(activated_at_ms, \(now)) WHERE user_id = \(user)", on: connection)
            return .used(userID: user)
        }
    }

    func setPassword(_ user: String, hash: String, now: Int64) async throws {
        try await pool.transaction { connection in try await Self.setPassword(user, hash: hash, now: now, on: connection, pool) }
    }

    private static func setPassword(_ user: String, hash: String, now: Int64, on connection: PostgresConnection, _ pool: PostgresPool) async throws {
        try await pool.run("UPDATE account SET password_hash = \(hash) WHERE user_id = \(user)", on: connection)
        try await pool.run(
            "UPDATE account_key SET used_at_ms = \(now) WHERE user_id = \(user) AND purpose = 'reset' AND used_at_ms IS NULL",
            on: connection)
    }

    private static func insertKey(
        _ keyHash: String, user: String, purpose: AccountKeyPurpose, now: Int64,
        on connection: PostgresConnection, _ pool: PostgresPool
    ) async throws {
        try await pool.run(
            """
            INSERT INTO account_key (key_hash, user_id, purpose, expires_at_ms) VALUES (\(keyHash), \(user), \(purpose.rawValue), \(now + purpose.lifetime))
            """, on: connection)
    }

    private static func account(_ row: PostgresRow) throws -> Account {
        let (user, name, email, hash, activatedAt) = try row.decode((String, String, String, String, Int64?).self)
        return Account(userID: user, name: name, email: email, passwordHash: hash, activatedAt: activatedAt)
    }
}
