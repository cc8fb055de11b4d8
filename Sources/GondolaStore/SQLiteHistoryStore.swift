import Foundation
import GRDB
import GondolaHub
import GondolaProtocol
import Logging

/// Channel streams kept in SQLite, for `history_durable` namespaces: offsets,
/// epoch and retained publications survive a restart.
///
/// Each append trims the stream to the namespace's size and TTL in the same
/// transaction, so the table holds at most `history_size` rows per channel. A stream's
/// offset and epoch are kept for its namespace's `history_meta_ttl` after its last
/// publication; `sweep` drops those past it.
public final class SQLiteHistoryStore: LocalHistoryStore {
    private let database: GondolaDatabase
    private let logger: Logger

    public init(database: GondolaDatabase, logger: Logger = Logger(label: "gondola.store")) {
        self.database = database
        self.logger = logger
    }

    public func append(
        _ publication: Publication, to channel: String, options: NamespaceOptions, version: StreamVersion?, now: Date
    ) throws -> StreamAppend {
        let nowMillis = Int64(now.timeIntervalSince1970 * 1000)
        let ttlMillis = Int64(options.historyTTL.timeInterval * 1000)
        let metaExpiry = Self.metaExpiry(options, now: now)
        return try database.pool.write { db in
            let position = try Self.position(db, channel: channel, metaExpiry: metaExpiry)
            if let version {
                if version.isSkipped(after: try Self.latestVersion(db, channel: channel)) { return .skipped(position) }
                try db.execute(
                    sql: "UPDATE stream SET top_version = ?, top_version_epoch = ? WHERE channel = ?",
                    arguments: [Int64(bitPattern: version.version), version.epoch, channel])
            }
            let offset = position.offset + 1
            try db.execute(
                sql: "UPDATE stream SET top_offset = ?, meta_expires_at_ms = ? WHERE channel = ?", arguments: [offset, metaExpiry, channel])
            var stored = publication
            stored.offset = offset
            try db.execute(
                sql: #"INSERT INTO publication (channel, "offset", data, info, tags, created_at_ms) VALUES (?, ?, ?, ?, ?, ?)"#,
                arguments: [
                    channel, offset, Data(publication.data.bytes), publication.info.map { Data($0.json.bytes) },
                    publication.tags.isEmpty ? nil : Data(PublicationTags.json(publication.tags).bytes), nowMillis,
                ])
            try db.execute(
                sql: #"DELETE FROM publication WHERE channel = ? AND ("offset" <= ? OR created_at_ms <= ?)"#,
                arguments: [channel, Int64(offset) - Int64(options.historySize), nowMillis - ttlMillis])
            return .appended(stored, StreamPosition(offset: offset, epoch: position.epoch))
        }
    }

    public func read(channel: String, after: UInt64?, limit: Int, reverse: Bool, options: NamespaceOptions, now: Date) throws -> StreamSlice {
        let oldest = Int64(now.timeIntervalSince1970 * 1000) - Int64(options.historyTTL.timeInterval * 1000)
        let metaExpiry = Self.metaExpiry(options, now: now)
        return try database.pool.write { db in
            let position = try Self.position(db, channel: channel, metaExpiry: metaExpiry)
            guard limit > 0 else { return StreamSlice(publications: [], position: position) }
            let order = reverse ? "DESC" : "ASC"
            let rows = try Row.fetchAll(
                db,
                sql:
                    #"SELECT "offset", data, info, tags FROM publication WHERE channel = ? AND "offset" > ? AND created_at_ms > ? ORDER BY "offset" \#(order) LIMIT ?"#,
                arguments: [channel, Int64(after ?? 0), oldest, limit])
            let publications = try rows.map { row in
                let info: Data? = row["info"]
                let tags: Data? = row["tags"]
                return Publication(
                    offset: UInt64(row["offset"] as Int64),
                    data: Payload(received: [UInt8](row["data"] as Data)),
                    info: try info.map { try ClientInfo(json: JSONParser.parse([UInt8]($0))) },
                    tags: try tags.map { try PublicationTags.read([UInt8]($0)) } ?? [:])
            }
            return StreamSlice(publications: publications, position: position)
        }
    }

    public func removeHistory(channel: String) throws {
        try database.pool.write { db in
            try db.execute(sql: "DELETE FROM publication WHERE channel = ?", arguments: [channel])
        }
    }

    /// Drops the streams whose `history_meta_ttl` has passed, with what they still retain,
    /// in a write of its own that no caller waits for; a failure is logged.
    public func sweep(now: Date) {
        let nowMillis = Int64(now.timeIntervalSince1970 * 1000)
        database.pool.asyncWrite(
            { db in
                try db.execute(
                    sql: "DELETE FROM publication WHERE channel IN (SELECT channel FROM stream WHERE meta_expires_at_ms <= ?)", arguments: [nowMillis]
                )
                try db.execute(sql: "DELETE FROM stream WHERE meta_expires_at_ms <= ?", arguments: [nowMillis])
            },
            completion: { [logger] _, result in
                if case let .failure(error) = result { logger.error("stream sweep failed", metadata: ["error": "\(error)"]) }
            })
    }

    /// When a stream written to at `now` loses its offset and epoch, in Unix milliseconds.
    private static func metaExpiry(_ options: NamespaceOptions, now: Date) -> Int64 {
        Int64((now.timeIntervalSince1970 + options.historyMetaTTL.timeInterval) * 1000)
    }

    /// The version of the stream's latest versioned publication, if any.
    private static func latestVersion(_ db: Database, channel: String) throws -> StreamVersion? {
        guard let row = try Row.fetchOne(db, sql: "SELECT top_version, top_version_epoch FROM stream WHERE channel = ?", arguments: [channel]),
            let version = row["top_version"] as Int64?, version != 0
        else { return nil }
        return StreamVersion(version: UInt64(bitPattern: version), epoch: row["top_version_epoch"] ?? "")
    }

    /// The stream's position, creating the stream (to expire at `metaExpiry`) when it has none.
    private static func position(_ db: Database, channel: String, metaExpiry: Int64) throws -> StreamPosition {
        if let row = try Row.fetchOne(db, sql: "SELECT epoch, top_offset FROM stream WHERE channel = ?", arguments: [channel]) {
            return StreamPosition(offset: UInt64(row["top_offset"] as Int64), epoch: row["epoch"])
        }
        let epoch = Epoch.make()
        try db.execute(
            sql: "INSERT INTO stream (channel, epoch, top_offset, meta_expires_at_ms) VALUES (?, ?, 0, ?)", arguments: [channel, epoch, metaExpiry])
        return StreamPosition(offset: 0, epoch: epoch)
    }
}
