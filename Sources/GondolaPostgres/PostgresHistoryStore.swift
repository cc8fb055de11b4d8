import Foundation
import GondolaHub
import GondolaProtocol
import PostgresNIO

/// Channel streams in PostgreSQL, shared by every node of a cluster: a stream's
/// offsets and epoch are the database's, so every node answers history and
/// recovery alike. `durable` keeps them in logged tables (`stream`, `publication`);
/// otherwise in UNLOGGED ones (`volatile_…`), which PostgreSQL empties after a crash.
///
/// Appends take the stream's row lock, so concurrent appends to one channel get
/// consecutive offsets in commit order; each append trims the stream to the
/// namespace's size and TTL in the same statement (a batch that overflows the
/// size never stores the publications it would push out at once).
public final class PostgresHistoryStore: HistoryStore {
    /// A publication to append, with the namespace that sets its stream's limits.
    public struct Append: Sendable {
        public let channel: String
        public let publication: Publication
        public let options: NamespaceOptions

        public init(channel: String, publication: Publication, options: NamespaceOptions) {
            self.channel = channel
            self.publication = publication
            self.options = options
        }
    }

    public let pool: PostgresPool
    public let durable: Bool
    private let prefix: String

    public init(pool: PostgresPool, durable: Bool) {
        self.pool = pool
        self.durable = durable
        self.prefix = durable ? "" : "volatile_"
    }

    /// Appends several publications in one statement on `connection` (inside the
    /// caller's transaction, if any); the positions come back in the same order.
    /// Streams are locked in channel order, so concurrent batches cannot deadlock.
    public func append(_ appends: [Append], on connection: PostgresConnection, now: Date) -> EventLoopFuture<[StreamPosition]> {
        let nowMillis = Int64(now.timeIntervalSince1970 * 1000)
        var channels: [String] = []
        var data: [ByteBuffer] = []
        var info: [ByteBuffer] = []
        var tags: [ByteBuffer] = []
        var keep: [Int64] = []
        var oldest: [Int64] = []
        var metaExpiry: [Int64] = []
        for append in appends {
            channels.append(append.channel)
            data.append(ByteBuffer(bytes: append.publication.data.bytes))
            info.append(ByteBuffer(bytes: append.publication.info?.json.bytes ?? []))
            tags.append(ByteBuffer(bytes: append.publication.tags.isEmpty ? [] : PublicationTags.json(append.publication.tags).bytes))
            keep.append(Int64(append.options.historySize))
            oldest.append(nowMillis - Int64(append.options.historyTTL.timeInterval * 1000))
            metaExpiry.append(Self.metaExpiry(append.options, nowMillis: nowMillis))
        }
        let query: PostgresQuery = """
            WITH input AS (
                SELECT * FROM unnest(\(channels)::text[], \(data)::bytea[], \(info)::bytea[], \(tags)::bytea[], \(keep)::int8[], \(oldest)::int8[],
                    \(metaExpiry)::int8[]) WITH ORDINALITY AS t(channel, data, info, tags, keep, oldest, meta, ord)
            ), counts AS (
                SELECT channel, count(*) AS n, max(keep) AS keep, max(oldest) AS oldest, max(meta) AS meta FROM input GROUP BY channel
            ), bumped AS (
                INSERT INTO \(unescaped: prefix)stream AS s (channel, epoch, top_offset, last_append_ms, meta_expires_ms)
                SELECT channel, \(Epoch.make()), n, \(nowMillis), meta FROM counts ORDER BY channel
                ON CONFLICT (channel) DO UPDATE SET top_offset = s.top_offset + excluded.top_offset, last_append_ms = excluded.last_append_ms,
                    meta_expires_ms = excluded.meta_expires_ms
                RETURNING channel, epoch, top_offset
            ), numbered AS (
                SELECT i.ord, i.channel, i.data, i.info, i.tags, b.epoch, b.top_offset - c.keep AS floor,
                       b.top_offset - c.n + row_number() OVER (PARTITION BY i.channel ORDER BY i.ord) AS off
                FROM input i JOIN bumped b USING (channel) JOIN counts c USING (channel)
            ), stored AS (
                INSERT INTO \(unescaped: prefix)publication (channel, "offset", data, info, tags, created_at_ms)
                SELECT channel, off, data, NULLIF(info, ''::bytea), NULLIF(tags, ''::bytea), \(nowMillis) FROM numbered WHERE off > floor
            ), trimmed AS (
                DELETE FROM \(unescaped: prefix)publication p USING bumped b JOIN counts c USING (channel)
                WHERE p.channel = b.channel AND (p."offset" <= b.top_offset - c.keep OR p.created_at_ms <= c.oldest)
            )
            SELECT epoch, off FROM numbered ORDER BY ord
            """
        return connection.run(query, within: pool.statementTimeout, logger: pool.logger).flatMapThrowing { result in
            try result.map { row in
                let (epoch, offset) = try row.decode((String, Int64).self)
                return StreamPosition(offset: UInt64(offset), epoch: epoch)
            }
        }
    }

    /// A stream's row as `lock` finds it: its position and latest version.
    public struct LockedStream: Sendable {
        public let position: StreamPosition
        public let version: StreamVersion?
    }

    /// Takes the row locks of the streams of `channels` (created empty when missing) in
    /// channel order, as `append` does, on `connection` inside the caller's transaction,
    /// and answers each stream's position and latest version.
    public func lock(_ channels: [String: NamespaceOptions], on connection: PostgresConnection, now: Date) async throws -> [String: LockedStream] {
        let nowMillis = Int64(now.timeIntervalSince1970 * 1000)
        let names = Array(channels.keys)
        let metaExpiry = names.map { Self.metaExpiry(channels[$0]!, nowMillis: nowMillis) }
        let rows = try await pool.run(
            """
            INSERT INTO \(unescaped: prefix)stream AS s (channel, epoch, top_offset, last_append_ms, meta_expires_ms)
            SELECT channel, \(Epoch.make()), 0, \(nowMillis), meta FROM unnest(\(names)::text[], \(metaExpiry)::int8[]) AS t(channel, meta)
            ORDER BY channel
            ON CONFLICT (channel) DO UPDATE SET top_offset = s.top_offset
            RETURNING channel, epoch, top_offset, version, version_epoch
            """, on: connection
        )
        var locked: [String: LockedStream] = [:]
        for row in rows {
            let (channel, epoch, top, version, versionEpoch) = try row.decode((String, String, Int64, Int64?, String?).self)
            locked[channel] = LockedStream(
                position: StreamPosition(offset: UInt64(top), epoch: epoch),
                version: version.map { StreamVersion(version: UInt64($0), epoch: versionEpoch ?? "") })
        }
        return locked
    }

    /// Keeps each stream's latest version, on `connection` inside the transaction that locked them.
    public func setVersions(_ versions: [String: StreamVersion], on connection: PostgresConnection) async throws {
        guard !versions.isEmpty else { return }
        let channels = Array(versions.keys)
        let numbers = channels.map { Int64(clamping: versions[$0]!.version) }
        let epochs = channels.map { versions[$0]!.epoch }
        _ = try await pool.run(
            """
            UPDATE \(unescaped: prefix)stream s SET version = t.version, version_epoch = t.epoch
            FROM unnest(\(channels)::text[], \(numbers)::int8[], \(epochs)::text[]) AS t(channel, version, epoch) WHERE s.channel = t.channel
            """, on: connection
        )
    }

    public func read(channel: String, after: UInt64?, limit: Int, reverse: Bool, options: NamespaceOptions, now: Date) async throws -> StreamSlice {
        let nowMillis = Int64(now.timeIntervalSince1970 * 1000)
        let oldest = nowMillis - Int64(options.historyTTL.timeInterval * 1000)
        let query: PostgresQuery = """
            WITH created AS (
                INSERT INTO \(unescaped: prefix)stream (channel, epoch, top_offset, last_append_ms, meta_expires_ms)
                VALUES (\(channel), \(Epoch.make()), 0, \(nowMillis), \(Self.metaExpiry(options, nowMillis: nowMillis)))
                ON CONFLICT (channel) DO NOTHING RETURNING epoch, top_offset
            ), position AS (
                SELECT epoch, top_offset FROM created
                UNION ALL SELECT epoch, top_offset FROM \(unescaped: prefix)stream WHERE channel = \(channel)
            )
            SELECT position.epoch, position.top_offset, p."offset", p.data, p.info, p.tags FROM position LEFT JOIN LATERAL (
                SELECT "offset", data, info, tags FROM \(unescaped: prefix)publication
                WHERE channel = \(channel) AND "offset" > \(Int64(after ?? 0)) AND "offset" <= position.top_offset AND created_at_ms > \(oldest)
                ORDER BY "offset" \(unescaped: reverse ? "DESC" : "ASC") LIMIT \(Int64(limit))
            ) p ON true
            """
        let rows = try await pool.query(query)
        var position: StreamPosition?
        var publications: [Publication] = []
        for row in rows {
            let (epoch, top, offset, data, info, tags) = try row.decode((String, Int64, Int64?, ByteBuffer?, ByteBuffer?, ByteBuffer?).self)
            position = StreamPosition(offset: UInt64(top), epoch: epoch)
            guard let offset, let data else { continue }
            publications.append(
                Publication(
                    offset: UInt64(offset),
                    data: Payload(received: Array(buffer: data)),
                    info: try info.map { try ClientInfo(json: JSONParser.parse(Array(buffer: $0))) },
                    tags: try tags.map { try PublicationTags.read(Array(buffer: $0)) } ?? [:]))
        }
        guard let position else { throw PostgresStoreError("stream \(channel) has no position row") }
        return StreamSlice(publications: publications, position: position)
    }

    public func removeHistory(channel: String) async throws {
        try await pool.query("DELETE FROM \(unescaped: prefix)publication WHERE channel = \(channel)")
    }

    /// Drops the streams whose `history_meta_ttl` has passed since their last publication,
    /// with what they still retain.
    public func sweep(now: Date) async throws {
        let nowMillis = Int64(now.timeIntervalSince1970 * 1000)
        try await pool.transaction { connection in
            _ = try await pool.run(
                """
                DELETE FROM \(unescaped: prefix)publication p USING \(unescaped: prefix)stream s
                WHERE p.channel = s.channel AND s.meta_expires_ms <= \(nowMillis)
                """, on: connection
            )
            _ = try await pool.run("DELETE FROM \(unescaped: prefix)stream WHERE meta_expires_ms <= \(nowMillis)", on: connection)
        }
    }

    /// When a stream written to at `nowMillis` loses its offset and epoch, in Unix milliseconds.
    private static func metaExpiry(_ options: NamespaceOptions, nowMillis: Int64) -> Int64 {
        nowMillis + Int64(options.historyMetaTTL.timeInterval * 1000)
    }
}

/// Stored rows that make no sense (a stream without its position, say).
public struct PostgresStoreError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
