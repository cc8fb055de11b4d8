import GRDB
import GondolaPostgres
import GondolaStore
import PostgresNIO

/// Where the devices users registered and their notification settings are kept. Its calls
/// block; they are short single-row writes and indexed reads.
protocol DeviceRepository: Sendable {
    /// Stores `device` (a token registered before, by anyone, moves to this user) and drops
    /// the user's oldest devices beyond `maxPerUser`; answers how many were dropped.
    func register(_ device: PushDevice, maxPerUser: Int) async throws -> Int
    /// Removes `token` if `user` registered it; answers whether it did.
    func unregister(token: String, user: String) async throws -> Bool
    /// Removes `token` whoever registered it (the service said it is no longer valid).
    func remove(token: String) async throws
    /// The devices of `user`, oldest first.
    func devices(of user: String) async throws -> [PushDevice]
    /// The user's settings; the defaults when they never changed them.
    func settings(of user: String) async throws -> NotificationSettings
    func setSettings(_ settings: NotificationSettings, of user: String) async throws
    /// The devices of `users` (every registered device when nil), each with its user's settings.
    func recipients(among users: [String]?) async throws -> [PushRecipient]
}

/// A device with its user's notification settings.
struct PushRecipient: Sendable, Equatable {
    let device: PushDevice
    let settings: NotificationSettings
}

/// The columns `recipients` reads: a device joined with its user's settings, if any.
private let recipientQuery = """
    SELECT d.token, d.platform, d.user_id, d.app, d.locale, d.registered_at_ms, s.chats, s.broadcasts, s.invites, s.quiet_start_min,
        s.quiet_end_min, s.quiet_utc_offset_min
    FROM push_device d LEFT JOIN push_settings s ON s.user_id = d.user_id
    """

/// The devices and settings in SQLite's `push_device` and `push_settings`.
struct SQLiteDeviceRepository: DeviceRepository {
    let database: GondolaDatabase

    func register(_ device: PushDevice, maxPerUser: Int) throws -> Int {
        try database.pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO push_device (token, platform, user_id, app, locale, registered_at_ms) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (token) DO UPDATE SET platform = excluded.platform, user_id = excluded.user_id, app = excluded.app,
                        locale = excluded.locale, registered_at_ms = excluded.registered_at_ms
                    """, arguments: [device.token, device.platform.rawValue, device.user, device.app, device.locale, device.registeredAt])
            try db.execute(
                sql: """
                    DELETE FROM push_device WHERE user_id = ? AND token NOT IN
                        (SELECT token FROM push_device WHERE user_id = ? ORDER BY registered_at_ms DESC, token LIMIT ?)
                    """, arguments: [device.user, device.user, maxPerUser])
            return db.changesCount
        }
    }

    func unregister(token: String, user: String) throws -> Bool {
        try database.pool.write { db in
            try db.execute(sql: "DELETE FROM push_device WHERE token = ? AND user_id = ?", arguments: [token, user])
            return db.changesCount > 0
        }
    }

    func remove(token: String) throws {
        try database.pool.write { db in try db.execute(sql: "DELETE FROM push_device WHERE token = ?", arguments: [token]) }
    }

    func devices(of user: String) throws -> [PushDevice] {
        try database.pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT token, platform, user_id, app, locale, registered_at_ms FROM push_device WHERE user_id = ? ORDER BY registered_at_ms, token
                    """, arguments: [user]
            ).compactMap { row in
                PushPlatform(rawValue: row["platform"]).map { platform in
                    PushDevice(
                        token: row["token"], platform: platform, user: row["user_id"], app: row["app"], locale: row["locale"],
                        registeredAt: row["registered_at_ms"])
                }
            }
        }
    }

    func settings(of user: String) throws -> NotificationSettings {
        try database.pool.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM push_settings WHERE user_id = ?", arguments: [user]) else {
                return NotificationSettings()
            }
            return StoredSettings(
                chats: row["chats"], broadcasts: row["broadcasts"], invites: row["invites"], quietStart: row["quiet_start_min"],
                quietEnd: row["quiet_end_min"], quietOffset: row["quiet_utc_offset_min"]
            ).settings
        }
    }

    func setSettings(_ settings: NotificationSettings, of user: String) throws {
        let quiet = settings.quietHours
        try database.pool.write { db in
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO push_settings (user_id, chats, broadcasts, invites, quiet_start_min, quiet_end_min, quiet_utc_offset_min)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [user, settings.chats, settings.broadcasts, settings.invites, quiet?.start, quiet?.end, quiet?.utcOffsetMinutes])
        }
    }

    func recipients(among users: [String]?) throws -> [PushRecipient] {
        try database.pool.read { db in
            guard let users else { return try Array(Row.fetchCursor(db, sql: recipientQuery).compactMap(Self.recipient)) }
            var found: [PushRecipient] = []
            for start in stride(from: 0, to: users.count, by: 500) {
                let chunk = Array(users[start..<min(start + 500, users.count)])
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                found += try Array(
                    Row.fetchCursor(db, sql: recipientQuery + " WHERE d.user_id IN (\(marks))", arguments: StatementArguments(chunk))
                        .compactMap(Self.recipient))
            }
            return found
        }
    }

    /// The positions of `recipientQuery`'s columns, read by index rather than by name (a name is
    /// lowercased and searched for on every read, and an announcement reads every device).
    private enum RecipientColumn {
        static let token = 0, platform = 1, user = 2, app = 3, locale = 4, registeredAt = 5, chats = 6, broadcasts = 7, invites = 8,
            quietStart = 9, quietEnd = 10, quietOffset = 11
    }

    private static func recipient(_ row: Row) -> PushRecipient? {
        guard let platform = PushPlatform(rawValue: row[RecipientColumn.platform]) else { return nil }
        let device = PushDevice(
            token: row[RecipientColumn.token], platform: platform, user: row[RecipientColumn.user], app: row[RecipientColumn.app],
            locale: row[RecipientColumn.locale], registeredAt: row[RecipientColumn.registeredAt])
        let settings =
            (row[RecipientColumn.chats] as Bool?).map { chats in
                StoredSettings(
                    chats: chats, broadcasts: row[RecipientColumn.broadcasts], invites: row[RecipientColumn.invites],
                    quietStart: row[RecipientColumn.quietStart], quietEnd: row[RecipientColumn.quietEnd],
                    quietOffset: row[RecipientColumn.quietOffset]
                ).settings
            } ?? NotificationSettings()
        return PushRecipient(device: device, settings: settings)
    }
}

/// The devices and settings in PostgreSQL (cluster mode); a registration and its trimming
/// run in one transaction.
struct PostgresDeviceRepository: DeviceRepository {
    let pool: PostgresPool

    func register(_ device: PushDevice, maxPerUser: Int) async throws -> Int {
        try await pool.transaction { connection in
            try await pool.run(
                """
                INSERT INTO push_device (token, platform, user_id, app, locale, registered_at_ms)
                VALUES (\(device.token), \(device.platform.rawValue), \(device.user), \(device.app), \(device.locale), \(device.registeredAt))
                ON CONFLICT (token) DO UPDATE SET platform = EXCLUDED.platform, user_id = EXCLUDED.user_id, app = EXCLUDED.app,
                    locale = EXCLUDED.locale, registered_at_ms = EXCLUDED.registered_at_ms
                """, on: connection)
            return try await pool.run(
                """
                DELETE FROM push_device WHERE user_id = \(device.user) AND token NOT IN
                    (SELECT token FROM push_device WHERE user_id = \(device.user) ORDER BY registered_at_ms DESC, token LIMIT \(Int64(maxPerUser)))
                RETURNING token
                """, on: connection
            ).reduce(0) { count, _ in count + 1 }
        }
    }

    func unregister(token: String, user: String) async throws -> Bool {
        try await pool.query("DELETE FROM push_device WHERE token = \(token) AND user_id = \(user) RETURNING token").first != nil
    }

    func remove(token: String) async throws {
        try await pool.query("DELETE FROM push_device WHERE token = \(token)")
    }

    func devices(of user: String) async throws -> [PushDevice] {
        try await pool.query(
            """
            SELECT token, platform, user_id, app, locale, registered_at_ms FROM push_device WHERE user_id = \(user) ORDER BY registered_at_ms, token
            """
        ).compactMap { row in
            let (token, platform, user, app, locale, registeredAt) = try row.decode((String, String, String, String?, String?, Int64).self)
            return PushPlatform(rawValue: platform).map {
                PushDevice(token: token, platform: $0, user: user, app: app, locale: locale, registeredAt: registeredAt)
            }
        }
    }

    func settings(of user: String) async throws -> NotificationSettings {
        guard
            let row = try await pool.query(
                """
                SELECT chats, broadcasts, invites, quiet_start_min, quiet_end_min, quiet_utc_offset_min FROM push_settings WHERE user_id = \(user)
                """
            ).first
        else { return NotificationSettings() }
        let (chats, broadcasts, invites, start, end, offset) = try row.decode((Bool, Bool, Bool, Int32?, Int32?, Int32?).self)
        return StoredSettings(
            chats: chats, broadcasts: broadcasts, invites: invites, quietStart: start.map(Int.init), quietEnd: end.map(Int.init),
            quietOffset: offset.map(Int.init)
        ).settings
    }

    func setSettings(_ settings: NotificationSettings, of user: String) async throws {
        let quiet = settings.quietHours
        try await pool.query(
            """
            INSERT INTO push_settings (user_id, chats, broadcasts, invites, quiet_start_min, quiet_end_min, quiet_utc_offset_min)
            VALUES (\(user), \(settings.chats), \(settings.broadcasts), \(settings.invites), \(quiet.map { Int32($0.start) }),
                    \(quiet.map { Int32($0.end) }), \(quiet.map { Int32($0.utcOffsetMinutes) }))
            ON CONFLICT (user_id) DO UPDATE SET chats = EXCLUDED.chats, broadcasts = EXCLUDED.broadcasts, invites = EXCLUDED.invites,
                quiet_start_min = EXCLUDED.quiet_start_min, quiet_end_min = EXCLUDED.quiet_end_min,
                quiet_utc_offset_min = EXCLUDED.quiet_utc_offset_min
            """)
    }

    func recipients(among users: [String]?) async throws -> [PushRecipient] {
        let rows =
            if let users {
                try await pool.query("\(unescaped: recipientQuery) WHERE d.user_id = ANY(\(users))")
            } else {
                try await pool.query("\(unescaped: recipientQuery)")
            }
        return try rows.compactMap { row in
            let (token, platform, user, app, locale, registeredAt, chats, broadcasts, invites, start, end, offset) =
                try row.decode((String, String, String, String?, String?, Int64, Bool?, Bool?, Bool?, Int32?, Int32?, Int32?).self)
            guard let platform = PushPlatform(rawValue: platform) else { return nil }
            let settings =
                chats.map { chats in
                    StoredSettings(
                        chats: chats, broadcasts: broadcasts ?? true, invites: invites ?? true, quietStart: start.map(Int.init),
                        quietEnd: end.map(Int.init), quietOffset: offset.map(Int.init)
                    ).settings
                } ?? NotificationSettings()
            return PushRecipient(
                device: PushDevice(token: token, platform: platform, user: user, app: app, locale: locale, registeredAt: registeredAt),
                settings: settings)
        }
    }
}

/// A `push_settings` row's columns, as both databases give them back.
private struct StoredSettings {
    let chats: Bool
    let broadcasts: Bool
    let invites: Bool
    let quietStart: Int?
    let quietEnd: Int?
    let quietOffset: Int?

    var settings: NotificationSettings {
        var settings = NotificationSettings()
        settings.chats = chats
        settings.broadcasts = broadcasts
        settings.invites = invites
        if let quietStart, let quietEnd {
            settings.quietHours = QuietHours(start: quietStart, end: quietEnd, utcOffsetMinutes: quietOffset ?? 0)
        }
        return settings
    }
}
