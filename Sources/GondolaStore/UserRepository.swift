import Foundation
import GRDB
import GondolaHub

/// A Gondola user as other users may see it: the Telegram id and username are
/// stored beside it but never part of it.
public struct User: Sendable, Equatable {
    public var id: String
    public var name: String

    public init(id: String, name: String) {
        self.id = id
        self.name = name
    }
}

/// A Telegram account that signed in with the Login Widget.
public struct TelegramAccount: Sendable, Equatable {
    public var telegramID: Int64
    public var username: String?
    public var displayName: String
    public var photoURL: String?

    public init(telegramID: Int64, username: String?, displayName: String, photoURL: String?) {
        self.telegramID = telegramID
        self.username = username
        self.displayName = displayName
        self.photoURL = photoURL
    }
}

/// Where users are kept: SQLite (`SQLiteUserRepository`) on one node, PostgreSQL
/// in a cluster.
public protocol UserRepository: Sendable {
    /// The user of a Telegram account, created on its first sign-in with a new
    /// random id; later sign-ins refresh the Telegram username (the photo only
    /// when the user has no avatar, so one set with `profile.update` stays).
    func user(forTelegram account: TelegramAccount) async throws -> User

    /// The user with `id`, created with `name` when missing (development sign-in).
    func ensureUser(id: String, name: String) async throws -> User

    /// The user with `id`, if there is one.
    func user(id: String) async throws -> User?
}

/// Users in SQLite.
public final class SQLiteUserRepository: UserRepository {
    private let database: GondolaDatabase

    public init(database: GondolaDatabase) {
        self.database = database
    }

    public func user(forTelegram account: TelegramAccount) throws -> User {
        try database.pool.write { db in
            if let row = try Row.fetchOne(db, sql: "SELECT id, name FROM user WHERE telegram_id = ?", arguments: [account.telegramID]) {
                try db.execute(
                    sql: "UPDATE user SET telegram_username = ?, photo_url = COALESCE(photo_url, ?) WHERE telegram_id = ?",
                    arguments: [account.username, account.photoURL, account.telegramID])
                return User(id: row["id"], name: row["name"])
            }
            let user = User(id: RandomID.make("u", hexDigits: 15), name: account.displayName)
            try db.execute(
                sql: "INSERT INTO user (id, name, telegram_id, telegram_username, photo_url, created_at_ms) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [user.id, user.name, account.telegramID, account.username, account.photoURL, Int64(Date().timeIntervalSince1970 * 1000)])
            return user
        }
    }

    public func ensureUser(id: String, name: String) throws -> User {
        try database.pool.write { db in
            if let row = try Row.fetchOne(db, sql: "SELECT id, name FROM user WHERE id = ?", arguments: [id]) {
                return User(id: row["id"], name: row["name"])
            }
            try db.execute(
                sql: "INSERT INTO user (id, name, created_at_ms) VALUES (?, ?, ?)",
                arguments: [id, name, Int64(Date().timeIntervalSince1970 * 1000)])
            return User(id: id, name: name)
        }
    }

    /// Adds a new user inside the caller's transaction (a domain creating an account).
    public static func insert(_ user: User, in db: Database, now: Int64) throws {
        try db.execute(sql: "INSERT INTO user (id, name, created_at_ms) VALUES (?, ?, ?)", arguments: [user.id, user.name, now])
    }

    public func user(id: String) throws -> User? {
        try database.pool.read { db in
            try Row.fetchOne(db, sql: "SELECT id, name FROM user WHERE id = ?", arguments: [id]).map { User(id: $0["id"], name: $0["name"]) }
        }
    }
}
