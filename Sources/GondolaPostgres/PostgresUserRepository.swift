import Foundation
import GondolaHub
import GondolaStore
import PostgresNIO

/// Users in PostgreSQL (`app_user`), shared by the nodes of a cluster.
public final class PostgresUserRepository: UserRepository {
    private let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    public func user(forTelegram account: TelegramAccount) async throws -> User {
        let newID = RandomID.make("u", hexDigits: 15)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        // One statement: two sign-ins of a new account at once still make one user.
        let rows = try await pool.query(
            """
            INSERT INTO app_user (id, name, telegram_id, telegram_username, photo_url, created_at_ms)
            VALUES (\(newID), \(account.displayName), \(account.telegramID), \(account.username), \(account.photoURL), \(now))
            ON CONFLICT (telegram_id) DO UPDATE SET telegram_username = excluded.telegram_username,
                photo_url = COALESCE(app_user.photo_url, excluded.photo_url)
            RETURNING id, name
            """)
        return try Self.user(rows)!
    }

    public func ensureUser(id: String, name: String) async throws -> User {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let rows = try await pool.query(
            """
            WITH created AS (
                INSERT INTO app_user (id, name, created_at_ms) VALUES (\(id), \(name), \(now)) ON CONFLICT (id) DO NOTHING RETURNING id, name
            )
            SELECT id, name FROM created UNION ALL SELECT id, name FROM app_user WHERE id = \(id)
            """)
        return try Self.user(rows)!
    }

    public func user(id: String) async throws -> User? {
        try Self.user(try await pool.query("SELECT id, name FROM app_user WHERE id = \(id)"))
    }

    private static func user(_ rows: PostgresQueryResult) throws -> User? {
        guard let row = rows.first else { return nil }
        let (id, name) = try row.decode((String, String).self)
        return User(id: id, name: name)
    }
}
