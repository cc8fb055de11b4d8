import Foundation
import GondolaHub
import GondolaProtocol
import GRDB

/// Channel streams kept in SQLite, for `history_durable` namespaces: offsets,
/// epoch and retained publications survive a restart.
///
/// Each append trims the stream to the namespace's size and TTL in the same
/// transaction, so the table holds at most `history_size` rows per channel.
public final class SQLiteHistoryStore: LocalHistoryStore {
    private let database: GondolaDatabase

    public init(database: GondolaDatabase) {
        self.database = database
    }

    public func append(_ publication: Publication, to channel: String, options: NamespaceOptions, now: Date) throws -> (Publication, StreamPosition) {
        let nowMillis = Int64(now.timeIntervalSince1970 * 1000)
        let ttlMillis = Int64(options.historyTTL.timeInterval * 1000)
        return try database.pool.write { db in
            let position = try Self.position(db, channel: channel, creating: true)
            let offset = position.offset + 1
            try db.execute(sql: "UPDATE stream SET top_offset = ? WHERE channel = ?", arguments: [offset, channel])
            var stored = publication
            stored.offset = offset
            try db.execute(
                sql: #"INSERT INTO publication (channel, "offset", data, info, created_at_ms) VALUES (?, ?, ?, ?, ?)"#,
                arguments: [channel, offset, Data(publication.data.bytes), publication.info.map { Data($0.json.bytes) }, nowMillis])
            try db.execute(
                sql: #"DELETE FROM publication WHERE channel = ? AND ("offset" <= ? OR created_at_ms <= ?)"#,
                arguments: [channel, Int64(offset) - Int64(options.historySize), nowMillis - ttlMillis])
            return (stored, StreamPosition(offset: offset, epoch: position.epoch))
        }
    }

    public func read(channel: String, after: UInt64?, limit: Int, reverse: Bool, options: NamespaceOptions, now: Date) throws -> StreamSlice {
        let oldest = Int64(now.timeIntervalSince1970 * 1000) - Int64(options.historyTTL.timeInterval * 1000)
        return try database.pool.write { db in
            let position = try Self.position(db, channel: channel, creating: true)
            guard limit > 0 else { return StreamSlice(publications: [], position: position) }
            let order = reverse ? "DESC" : "ASC"
            let rows = try Row.fetchAll(
                db,
                sql: #"SELECT "offset", data, info FROM publication WHERE channel = ? AND "offset" > ? AND created_at_ms > ? ORDER BY "offset" \#(order) LIMIT ?"#,
                arguments: [channel, Int64(after ?? 0), oldest, limit])
            let publications = try rows.map { row in
                let info: Data? = row["info"]
                return Publication(
                    offset: UInt64(row["offset"] as Int64),
                    data: Payload(received: [UInt8](row["data"] as Data)),
                    info: try info.map { try ClientInfo(json: JSONParser.parse([UInt8]($0))) })
            }
            return StreamSlice(publications: publications, position: position)
        }
    }

    public func removeHistory(channel: String) throws {
        try database.pool.write { db in
            try db.execute(sql: "DELETE FROM publication WHERE channel = ?", arguments: [channel])
        }
    }

    private static func position(_ db: Database, channel: String, creating: Bool) throws -> StreamPosition {
        if let row = try Row.fetchOne(db, sql: "SELECT epoch, top_offset FROM stream WHERE channel = ?", arguments: [channel]) {
            return StreamPosition(offset: UInt64(row["top_offset"] as Int64), epoch: row["epoch"])
        }
        let epoch = Epoch.make()
        try db.execute(sql: "INSERT INTO stream (channel, epoch, top_offset) VALUES (?, ?, 0)", arguments: [channel, epoch])
        return StreamPosition(offset: 0, epoch: epoch)
    }
}
