import GRDB
import GondolaStore

/// Where crashes, their photo rows and the users' crash phone numbers live. Photo and
/// report bytes are kept apart, by hash (`CrashFiles`); a row references them by hash.
protocol CrashRepository: Sendable {
    func insert(_ crash: Crash) async throws
    /// The crash `id`, or nil when there is none.
    func crash(_ id: String) async throws -> Crash?
    /// The owner's crashes: drafts first, then reports, newest first within each, with
    /// their photo counts.
    func crashes(of owner: String) async throws -> [(crash: Crash, photos: Int)]
    /// Saves the crash's collected information and times.
    func update(_ crash: Crash) async throws
    /// Deletes a crash with its photo rows; answers the file hashes nothing else uses.
    func delete(_ id: String) async throws -> [String]
    /// The crash's photos, oldest first.
    func photos(of crash: String) async throws -> [CrashPhoto]
    func photo(_ id: String, of crash: String) async throws -> CrashPhoto?
    /// Adds a photo unless its section already holds `limit`; answers whether it was added.
    /// The crash's update time moves with it.
    func insert(_ photo: CrashPhoto, limit: Int) async throws -> Bool
    /// Deletes a photo row; answers whether its file is no longer used by any photo.
    func delete(_ photo: CrashPhoto, at time: Int64) async throws -> Bool
    /// Records a new report; answers the previous report's hash when no row uses it any more.
    func setReport(_ id: String, hash: String, at time: Int64) async throws -> String?
    /// Sets (or, with nil, revokes) the crash's share link.
    func setShare(_ id: String, shareID: String?, expiresAt: Int64?) async throws
    /// The phone number crash texts go to, if the user gave one.
    func phone(of user: String) async throws -> String?
    /// Sets the user's phone number; nil removes it.
    func setPhone(_ phone: String?, of user: String) async throws
    /// Whether a photo or a report references the file `hash`.
    func isReferenced(_ hash: String) async throws -> Bool
}

/// The crash tables in SQLite.
struct SQLiteCrashRepository: CrashRepository {
    let database: GondolaDatabase

    func insert(_ crash: Crash) throws {
        try database.pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO crash (id, owner, source, occurred_at_ms, lat, lon, injured, note, created_at_ms, updated_at_ms, reported_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    crash.id, crash.owner, crash.source.rawValue, crash.occurredAt, crash.place?.lat, crash.place?.lon,
                    CrashRows.injuredText(crash.injured), crash.note, crash.createdAt, crash.updatedAt, crash.reportedAt,
                ])
        }
    }

    /// The crash `id`, or nil when there is none.
    func crash(_ id: String) throws -> Crash? {
        try database.pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM crash WHERE id = ?", arguments: [id]).map(Self.crash)
        }
    }

    /// The owner's crashes: drafts first, then reports, newest first within each, with
    /// their photo counts.
    func crashes(of owner: String) throws -> [(crash: Crash, photos: Int)] {
        try database.pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT crash.*, (SELECT COUNT(*) FROM crash_photo WHERE crash_id = crash.id) AS photo_count
                    FROM crash WHERE owner = ?
                    ORDER BY reported_at_ms IS NOT NULL, COALESCE(reported_at_ms, updated_at_ms) DESC, id
                    """, arguments: [owner]
            ).map { (Self.crash($0), $0["photo_count"] as Int) }
        }
    }

    /// Saves the crash's collected information and times.
    func update(_ crash: Crash) throws {
        try database.pool.write { db in
            try db.execute(
                sql: "UPDATE crash SET injured = ?, note = ?, updated_at_ms = ?, reported_at_ms = ? WHERE id = ?",
                arguments: [CrashRows.injuredText(crash.injured), crash.note, crash.updatedAt, crash.reportedAt, crash.id])
        }
    }

    /// Deletes a crash with its photo rows; answers the file hashes nothing else uses.
    func delete(_ id: String) throws -> [String] {
        try database.pool.write { db in
            let hashes = try String.fetchAll(
                db,
                sql: """
                    SELECT file_hash FROM crash_photo WHERE crash_id = ?
                    UNION SELECT report_hash FROM crash WHERE id = ? AND report_hash IS NOT NULL
                    """, arguments: [id, id])
            try db.execute(sql: "DELETE FROM crash WHERE id = ?", arguments: [id])
            return try hashes.filter { try Self.unreferenced($0, db) }
        }
    }

    func photos(of crash: String) throws -> [CrashPhoto] {
        try database.pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM crash_photo WHERE crash_id = ? ORDER BY created_at_ms, id", arguments: [crash]).map(Self.photo)
        }
    }

    func photo(_ id: String, of crash: String) throws -> CrashPhoto? {
        try database.pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM crash_photo WHERE id = ? AND crash_id = ?", arguments: [id, crash]).map(Self.photo)
        }
    }

    /// Adds a photo unless its section already holds `limit`; answers whether it was added.
    /// The crash's update time moves with it.
    func insert(_ photo: CrashPhoto, limit: Int) throws -> Bool {
        try database.pool.write { db in
            let count =
                try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM crash_photo WHERE crash_id = ? AND section = ?",
                    arguments: [photo.crash, photo.section.rawValue]) ?? 0
            guard count < limit else { return false }
            try db.execute(
                sql: """
                    INSERT INTO crash_photo (id, crash_id, section, file_hash, file_name, content_type, size, width, height, created_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    photo.id, photo.crash, photo.section.rawValue, photo.fileHash, photo.fileName, photo.contentType,
                    photo.size, photo.width, photo.height, photo.createdAt,
                ])
            try db.execute(sql: "UPDATE crash SET updated_at_ms = ? WHERE id = ?", arguments: [photo.createdAt, photo.crash])
            return true
        }
    }

    /// Deletes a photo row; answers whether its file is no longer used by any photo.
    func delete(_ photo: CrashPhoto, at time: Int64) throws -> Bool {
        try database.pool.write { db in
            try db.execute(sql: "DELETE FROM crash_photo WHERE id = ?", arguments: [photo.id])
            try db.execute(sql: "UPDATE crash SET updated_at_ms = ? WHERE id = ?", arguments: [time, photo.crash])
            return try Self.unreferenced(photo.fileHash, db)
        }
    }

    /// Records a new report; answers the previous report's hash when no row uses it any more.
    func setReport(_ id: String, hash: String, at time: Int64) throws -> String? {
        try database.pool.write { db in
            let previous = try String.fetchOne(db, sql: "SELECT report_hash FROM crash WHERE id = ?", arguments: [id])
            try db.execute(
                sql: "UPDATE crash SET report_hash = ?, reported_at_ms = ?, updated_at_ms = ? WHERE id = ?",
                arguments: [hash, time, time, id])
            guard let previous, previous != hash else { return nil }
            return try Self.unreferenced(previous, db) ? previous : nil
        }
    }

    /// Sets (or, with nil, revokes) the crash's share link.
    func setShare(_ id: String, shareID: String?, expiresAt: Int64?) throws {
        try database.pool.write { db in
            try db.execute(sql: "UPDATE crash SET share_id = ?, share_expires_at_ms = ? WHERE id = ?", arguments: [shareID, expiresAt, id])
        }
    }

    /// The phone number crash texts go to, if the user gave one.
    func phone(of user: String) throws -> String? {
        try database.pool.read { db in try String.fetchOne(db, sql: "SELECT phone FROM crash_contact WHERE user_id = ?", arguments: [user]) }
    }

    /// Sets the user's phone number; nil removes it.
    func setPhone(_ phone: String?, of user: String) throws {
        try database.pool.write { db in
            if let phone {
                try db.execute(
                    sql: "INSERT INTO crash_contact (user_id, phone) VALUES (?, ?) ON CONFLICT(user_id) DO UPDATE SET phone = excluded.phone",
                    arguments: [user, phone])
            } else {
                try db.execute(sql: "DELETE FROM crash_contact WHERE user_id = ?", arguments: [user])
            }
        }
    }

    /// Every file hash a photo or report references (what the file store keeps at start).
    func referencedFiles() throws -> Set<String> {
        try database.pool.read { db in
            Set(try String.fetchAll(db, sql: "SELECT file_hash FROM crash_photo UNION SELECT report_hash FROM crash WHERE report_hash IS NOT NULL"))
        }
    }

    func isReferenced(_ hash: String) throws -> Bool {
        try database.pool.read { db in try !Self.unreferenced(hash, db) }
    }

    private static func unreferenced(_ hash: String, _ db: Database) throws -> Bool {
        try Int.fetchOne(
            db, sql: "SELECT (SELECT COUNT(*) FROM crash_photo WHERE file_hash = ?) + (SELECT COUNT(*) FROM crash WHERE report_hash = ?)",
            arguments: [hash, hash]) == 0
    }

    private static func crash(_ row: Row) -> Crash {
        let lat: Double? = row["lat"]
        let lon: Double? = row["lon"]
        return Crash(
            id: row["id"], owner: row["owner"], source: CrashSource(rawValue: row["source"]) ?? .manual,
            occurredAt: row["occurred_at_ms"], place: lat.flatMap { lat in lon.map { CrashPlace(lat: lat, lon: $0) } },
            injured: CrashRows.injured(row["injured"]),
            note: row["note"], createdAt: row["created_at_ms"], updatedAt: row["updated_at_ms"], reportedAt: row["reported_at_ms"],
            reportHash: row["report_hash"], shareID: row["share_id"], shareExpiresAt: row["share_expires_at_ms"])
    }

    private static func photo(_ row: Row) -> CrashPhoto {
        CrashPhoto(
            id: row["id"], crash: row["crash_id"], section: PhotoSection(rawValue: row["section"]) ?? .crashScene,
            fileHash: row["file_hash"], fileName: row["file_name"], contentType: row["content_type"],
            size: row["size"], width: row["width"], height: row["height"], createdAt: row["created_at_ms"])
    }
}
