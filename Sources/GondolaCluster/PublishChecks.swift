import Foundation
@_spi(Engine) import GondolaHub
import GondolaPostgres
import GondolaProtocol
import PostgresNIO

/// Centrifugo's idempotency keys and versions on the PostgreSQL bus, checked inside the
/// transaction of a `BusWriter` batch before it appends: a key already answered on the
/// channel within `lifetime` answers that position again, a version the stream skips
/// (`StreamVersion.isSkipped`) answers the stream's position, and neither is written or
/// delivered. Keys are claimed in `cluster_publish_result` first (a claim in flight on
/// another node makes this transaction wait for that one's commit, so a key is published
/// once cluster-wide); streams with versioned publications are locked in the order
/// `append` locks them, so batches cannot deadlock.
struct PublishChecks {
    /// How long a key's answer is kept: Centrifugo's five minutes.
    static let lifetime = Duration.seconds(300)

    /// What becomes of one request of the batch.
    enum Fate {
        /// Written as usual.
        case write
        /// Answered without being written: its key's earlier position (nil: no stream).
        case answered(StreamPosition?)
        /// Answers whatever the request at this index answers (the same key earlier in the batch).
        case sameAs(Int)
        /// Its version is skipped: answers the stream's position at its place in the batch.
        case skipped(channel: String, durable: Bool)
    }

    private(set) var fates: [Fate]
    /// The requests whose key this batch claimed, with the key.
    private var claims: [(index: Int, channel: String, key: String)] = []
    /// The locked streams (durable, then volatile) before the batch's appends.
    private var locked: [Bool: [String: PostgresHistoryStore.LockedStream]] = [:]
    /// The latest versions the batch leaves, per store.
    private var versions: [Bool: [String: StreamVersion]] = [:]

    /// Whether the batch asks for any check (most do not: nothing is queried then).
    static func needed(_ batch: [BusWriter.Request]) -> Bool {
        batch.contains { request in
            guard case let .publication(_, _, _, publishing) = request.item else { return false }
            return publishing.idempotencyKey != nil || publishing.version > 0
        }
    }

    /// Claims the batch's keys and locks the streams of its versioned publications.
    init(
        _ batch: [BusWriter.Request], stores: [PostgresHistoryStore], on connection: PostgresConnection, now: Date, pool: PostgresPool
    ) async throws {
        fates = Array(repeating: .write, count: batch.count)
        try await claimKeys(batch, on: connection, now: now, pool: pool)
        try await checkVersions(batch, stores: stores, on: connection, now: now)
    }

    private mutating func claimKeys(_ batch: [BusWriter.Request], on connection: PostgresConnection, now: Date, pool: PostgresPool) async throws {
        var first: [String: Int] = [:]
        for (index, request) in batch.enumerated() {
            guard case let .publication(channel, _, _, publishing) = request.item, let key = publishing.idempotencyKey else { continue }
            let entry = PublishOptions.keyEntry(channel: channel, key: key)
            if let earlier = first[entry] {
                fates[index] = .sameAs(earlier)
            } else {
                first[entry] = index
                claims.append((index, channel, key))
            }
        }
        guard !claims.isEmpty else { return }
        let nowMillis = Int64(now.timeIntervalSince1970 * 1000)
        let expires = nowMillis + Int64(Self.lifetime.components.seconds) * 1000
        let channels = claims.map(\.channel)
        let keys = claims.map(\.key)
        let claimed = try await pool.run(
            """
            INSERT INTO cluster_publish_result AS r (channel, key, expires_ms)
            SELECT channel, key, \(expires) FROM unnest(\(channels)::text[], \(keys)::text[]) AS t(channel, key) ORDER BY channel, key
            ON CONFLICT (channel, key) DO UPDATE SET expires_ms = excluded.expires_ms, "offset" = NULL, epoch = NULL
                WHERE r.expires_ms <= \(nowMillis)
            RETURNING channel, key
            """, on: connection
        )
        var taken = Set<String>()
        for row in claimed {
            let (channel, key) = try row.decode((String, String).self)
            taken.insert(PublishOptions.keyEntry(channel: channel, key: key))
        }
        let answered = claims.filter { !taken.contains(PublishOptions.keyEntry(channel: $0.channel, key: $0.key)) }
        claims.removeAll { !taken.contains(PublishOptions.keyEntry(channel: $0.channel, key: $0.key)) }
        guard !answered.isEmpty else { return }
        let rows = try await pool.run(
            """
            SELECT r.channel, r.key, r."offset", r.epoch FROM cluster_publish_result r
            JOIN unnest(\(answered.map(\.channel))::text[], \(answered.map(\.key))::text[]) AS t(channel, key) USING (channel, key)
            """, on: connection
        )
        var positions: [String: StreamPosition?] = [:]
        for row in rows {
            let (channel, key, offset, epoch) = try row.decode((String, String, Int64?, String?).self)
            positions[PublishOptions.keyEntry(channel: channel, key: key)] = offset.map { StreamPosition(offset: UInt64($0), epoch: epoch ?? "") }
        }
        for claim in answered {
            fates[claim.index] = .answered(positions[PublishOptions.keyEntry(channel: claim.channel, key: claim.key)] ?? nil)
        }
    }

    /// Locks every stream the batch appends to (when any publication has a version) and
    /// decides, in the batch's order, which versions the streams skip.
    private mutating func checkVersions(
        _ batch: [BusWriter.Request], stores: [PostgresHistoryStore], on connection: PostgresConnection, now: Date
    ) async throws {
        let versioned = batch.indices.contains { index in
            guard case .write = fates[index], case let .publication(_, _, _, publishing) = batch[index].item else { return false }
            return publishing.version > 0
        }
        guard versioned else { return }
        for store in stores {
            var channels: [String: NamespaceOptions] = [:]
            for (index, request) in batch.enumerated() {
                guard case .write = fates[index], case let .publication(channel, _, options, _) = request.item, options.keepsHistory,
                    options.historyDurable == store.durable
                else { continue }
                channels[channel] = channels[channel] ?? options
            }
            guard !channels.isEmpty else { continue }
            locked[store.durable] = try await store.lock(channels, on: connection, now: now)
        }
        var latest = locked.mapValues { $0.compactMapValues(\.version) }
        for (index, request) in batch.enumerated() {
            guard case .write = fates[index], case let .publication(channel, _, options, publishing) = request.item,
                let version = publishing.streamVersion
            else { continue }
            let durable = options.historyDurable
            if version.isSkipped(after: latest[durable]?[channel]) {
                fates[index] = .skipped(channel: channel, durable: durable)
            } else {
                latest[durable, default: [:]][channel] = version
                versions[durable, default: [:]][channel] = version
            }
        }
    }

    /// The answer of every request once the written ones have their positions
    /// (`written[i]` for a request whose fate is `write`).
    func answers(_ batch: [BusWriter.Request], written: [StreamPosition?]) -> [StreamPosition?] {
        var answers = [StreamPosition?](repeating: nil, count: batch.count)
        var tops: [Bool: [String: StreamPosition]] = locked.mapValues { $0.mapValues(\.position) }
        for index in batch.indices {
            switch fates[index] {
            case .write:
                answers[index] = written[index]
                if case let .publication(channel, _, options, _) = batch[index].item, let position = written[index] {
                    tops[options.historyDurable, default: [:]][channel] = position
                }
            case let .answered(position): answers[index] = position
            case let .sameAs(earlier): answers[index] = answers[earlier]
            case let .skipped(channel, durable): answers[index] = tops[durable]?[channel]
            }
        }
        return answers
    }

    /// Keeps the streams' latest versions and the claimed keys' answers (a key whose
    /// publication was skipped for its version is let go, as a node alone does).
    func record(answers: [StreamPosition?], stores: [PostgresHistoryStore], on connection: PostgresConnection, pool: PostgresPool) async throws {
        for store in stores { try await store.setVersions(versions[store.durable] ?? [:], on: connection) }
        guard !claims.isEmpty else { return }
        var kept: [(channel: String, key: String, position: StreamPosition?)] = []
        var released: [(channel: String, key: String)] = []
        for claim in claims {
            if case .skipped = fates[claim.index] {
                released.append((claim.channel, claim.key))
            } else {
                kept.append((claim.channel, claim.key, answers[claim.index]))
            }
        }
        if !kept.isEmpty {
            // Arrays of NULLs do not bind: -1 stands for "no stream".
            _ = try await pool.run(
                """
                UPDATE cluster_publish_result r SET "offset" = NULLIF(t.off, -1), epoch = CASE WHEN t.off = -1 THEN NULL ELSE t.epoch END
                FROM unnest(\(kept.map(\.channel))::text[], \(kept.map(\.key))::text[], \(kept.map { $0.position.map { Int64($0.offset) } ?? -1 })::int8[],
                    \(kept.map { $0.position?.epoch ?? "" })::text[]) AS t(channel, key, off, epoch)
                WHERE r.channel = t.channel AND r.key = t.key
                """, on: connection
            )
        }
        if !released.isEmpty {
            _ = try await pool.run(
                """
                DELETE FROM cluster_publish_result r USING unnest(\(released.map(\.channel))::text[], \(released.map(\.key))::text[]) AS t(channel, key)
                WHERE r.channel = t.channel AND r.key = t.key
                """, on: connection
            )
        }
    }

    /// Drops the answers past their lifetime; the heartbeat calls it every minute.
    static func sweep(pool: PostgresPool, now: Date) async throws {
        try await pool.query("DELETE FROM cluster_publish_result WHERE expires_ms <= \(Int64(now.timeIntervalSince1970 * 1000))")
    }
}
