import GondolaPostgres
import PostgresNIO

/// The crash tables in PostgreSQL (cluster mode). Adding a photo or a report locks the
/// crash's row, so that two nodes cannot both pass a section's photo limit.
struct PostgresCrashRepository: CrashRepository {
    let pool: PostgresPool

    private static let columns = """
        id, owner, source, occurred_at_ms, lat, lon, injured, note, created_at_ms, updated_at_ms, reported_at_ms, \
        report_hash, share_id, share_expires_at_ms
        """
    private static let photoColumns = "id, crash_id, section, file_hash, file_name, content_type, size, width, height, created_at_ms"

    func insert(_ crash: Crash) async throws {
        try await pool.query(
            """
            INSERT INTO crash (id, owner, source, occurred_at_ms, lat, lon, injured, note, created_at_ms, updated_at_ms, reported_at_ms)
            VALUES (\(crash.id), \(crash.owner), \(crash.source.rawValue), \(crash.occurredAt), \(crash.place?.lat), \(crash.place?.lon),
                    \(CrashRows.injuredText(crash.injured)), \(crash.note), \(crash.createdAt), \(crash.updatedAt), \(crash.reportedAt))
            """)
    }

    func crash(_ id: String) async throws -> Crash? {
        try await pool.query("SELECT \(unescaped: Self.columns) FROM crash WHERE id = \(id)").first.map(Self.crash)
    }

    func crashes(of owner: String) async throws -> [(crash: Crash, photos: Int)] {
        try await pool.query(
            """
            SELECT \(unescaped: Self.columns), (SELECT COUNT(*) FROM crash_photo WHERE crash_id = crash.id)
            FROM crash WHERE owner = \(owner)
            ORDER BY reported_at_ms IS NOT NULL, COALESCE(reported_at_ms, updated_at_ms) DESC, id
            """
        ).map { row in (try Self.crash(row), Int(try row.makeRandomAccess()[14].decode(Int64.self))) }
    }

    func update(_ crash: Crash) async throws {
        try await pool.query(
            """
            UPDATE crash SET injured = \(CrashRows.injuredText(crash.injured)), note = \(crash.note), updated_at_ms = \(crash.updatedAt),
                reported_at_ms = \(crash.reportedAt)
            WHERE id = \(crash.id)
            """)
    }

    func delete(_ id: String) async throws -> [String] {
        try await pool.transaction { connection in
            let hashes = try await pool.run(
                """
                SELECT file_hash FROM crash_photo WHERE crash_id = \(id)
                UNION SELECT report_hash FROM crash WHERE id = \(id) AND report_hash IS NOT NULL
                """, on: connection
            ).map { try $0.decode(String.self) }
            try await pool.run("DELETE FROM crash WHERE id = \(id)", on: connection)
            var unused: [String] = []
            for hash in hashes where try await !Self.referenced(hash, on: connection, pool) { unused.append(hash) }
            return unused
        }
    }

    func photos(of crash: String) async throws -> [CrashPhoto] {
        try await pool.query("SELECT \(unescaped: Self.photoColumns) FROM crash_photo WHERE crash_id = \(crash) ORDER BY created_at_ms, id")
            .map(Self.photo)
    }

    func photo(_ id: String, of crash: String) async throws -> CrashPhoto? {
        try await pool.query("SELECT \(unescaped: Self.photoColumns) FROM crash_photo WHERE id = \(id) AND crash_id = \(crash)").first.map(Self.photo)
    }

    func insert(_ photo: CrashPhoto, limit: Int) async throws -> Bool {
        try await pool.transaction { connection in
            guard try await pool.run("SELECT id FROM crash WHERE id = \(photo.crash) FOR UPDATE", on: connection).first != nil else { return false }
            let count =
                try await pool.run(
                    """
                    SELECT COUNT(*) FROM crash_photo WHERE crash_id = \(photo.crash) AND section = \(photo.section.rawValue)
                    """, on: connection
                ).first?.decode(Int64.self) ?? 0
            guard count < limit else { return false }
            try await pool.run(
                """
                INSERT INTO crash_photo (\(unescaped: Self.photoColumns))
                VALUES (\(photo.id), \(photo.crash), \(photo.section.rawValue), \(photo.fileHash), \(photo.fileName), \(photo.contentType),
                        \(photo.size), \(photo.width), \(photo.height), \(photo.createdAt))
                """, on: connection)
            try await pool.run("UPDATE crash SET updated_at_ms = \(photo.createdAt) WHERE id = \(photo.crash)", on: connection)
            return true
        }
    }

    func delete(_ photo: CrashPhoto, at time: Int64) async throws -> Bool {
        try await pool.transaction { connection in
            try await pool.run("DELETE FROM crash_photo WHERE id = \(photo.id)", on: connection)
            try await pool.run("UPDATE crash SET updated_at_ms = \(time) WHERE id = \(photo.crash)", on: connection)
            return try await !Self.referenced(photo.fileHash, on: connection, pool)
        }
    }

    func setReport(_ id: String, hash: String, at time: Int64) async throws -> String? {
        try await pool.transaction { connection in
            let previous = try await pool.run("SELECT report_hash FROM crash WHERE id = \(id) FOR UPDATE", on: connection)
                .first?.decode(String?.self)
            try await pool.run(
                "UPDATE crash SET report_hash = \(hash), reported_at_ms = \(time), updated_at_ms = \(time) WHERE id = \(id)",
                on: connection)
            guard let previous, previous != hash else { return nil }
            return try await Self.referenced(previous, on: connection, pool) ? nil : previous
        }
    }

    func setShare(_ id: String, shareID: String?, expiresAt: Int64?) async throws {
        try await pool.query("UPDATE crash SET share_id = \(shareID), share_expires_at_ms = \(expiresAt) WHERE id = \(id)")
    }

    func phone(of user: String) async throws -> String? {
        try await pool.query("SELECT phone FROM crash_contact WHERE user_id = \(user)").first?.decode(String.self)
    }

    func setPhone(_ phone: String?, of user: String) async throws {
        if let phone {
            try await pool.query(
                """
                INSERT INTO crash_contact (user_id, phone) VALUES (\(user), \(phone))
                ON CONFLICT (user_id) DO UPDATE SET phone = EXCLUDED.phone
                """)
        } else {
            try await pool.query("DELETE FROM crash_contact WHERE user_id = \(user)")
        }
    }

    func isReferenced(_ hash: String) async throws -> Bool {
        try await pool.withConnection { connection in try await Self.referenced(hash, on: connection, pool) }
    }

    private static func referenced(_ hash: String, on connection: PostgresConnection, _ pool: PostgresPool) async throws -> Bool {
        try await pool.run(
            """
            SELECT EXISTS (SELECT 1 FROM crash_photo WHERE file_hash = \(hash)) OR EXISTS (SELECT 1 FROM crash WHERE report_hash = \(hash))
            """, on: connection
        ).first?.decode(Bool.self) ?? false
    }

    /// A crash from a row whose first fourteen columns are `columns`.
    private static func crash(_ row: PostgresRow) throws -> Crash {
        let columns = row.makeRandomAccess()
        let lat = try columns[4].decode(Double?.self)
        let lon = try columns[5].decode(Double?.self)
        return Crash(
            id: try columns[0].decode(String.self), owner: try columns[1].decode(String.self),
            source: CrashSource(rawValue: try columns[2].decode(String.self)) ?? .manual, occurredAt: try columns[3].decode(Int64.self),
            place: lat.flatMap { lat in lon.map { CrashPlace(lat: lat, lon: $0) } },
            injured: CrashRows.injured(try columns[6].decode(String.self)), note: try columns[7].decode(String.self),
            createdAt: try columns[8].decode(Int64.self), updatedAt: try columns[9].decode(Int64.self),
            reportedAt: try columns[10].decode(Int64?.self), reportHash: try columns[11].decode(String?.self),
            shareID: try columns[12].decode(String?.self), shareExpiresAt: try columns[13].decode(Int64?.self))
    }

    private static func photo(_ row: PostgresRow) throws -> CrashPhoto {
        let (id, crash, section, fileHash, fileName, contentType, size, width, height, createdAt) =
            try row.decode((String, String, String, String, String, String, Int32, Int32, Int32, Int64).self)
        return CrashPhoto(
            id: id, crash: crash, section: PhotoSection(rawValue: section) ?? .crashScene, fileHash: fileHash, fileName: fileName,
            contentType: contentType, size: Int(size), width: Int(width), height: Int(height), createdAt: createdAt)
    }
}

/// How both engines store a crash's injured parties: their names, comma-separated.
enum CrashRows {
    static func injuredText(_ injured: [InjuredParty]) -> String {
        injured.map(\.rawValue).joined(separator: ",")
    }

    static func injured(_ text: String) -> [InjuredParty] {
        text.split(separator: ",").compactMap { InjuredParty(rawValue: String($0)) }
    }
}
