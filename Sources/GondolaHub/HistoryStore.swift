import Foundation
import GondolaProtocol
import Synchronization

/// A slice of a channel's stream and the stream's current position.
public struct StreamSlice: Sendable, Equatable {
    public var publications: [Publication]
    /// The offset of the newest publication and the stream's epoch.
    public var position: StreamPosition

    public init(publications: [Publication], position: StreamPosition) {
        self.publications = publications
        self.position = position
    }
}

/// Where a namespace's channel streams live, as readers see them: offsets, epochs and
/// retained publications. Reads may wait on a database; the calling task waits, no thread.
public protocol HistoryStore: Sendable {
    /// Publications with an offset above `after` (all retained ones when nil), oldest
    /// first or newest first when `reverse`, at most `limit` (none when 0).
    func read(channel: String, after: UInt64?, limit: Int, reverse: Bool, options: NamespaceOptions, now: Date) async throws -> StreamSlice

    /// Drops the channel's retained publications; offsets and epoch stay.
    func removeHistory(channel: String) async throws
}

/// A store in this process (memory, the SQLite file) that a node alone appends to
/// under the channel's own lock: the append is a call, not a round trip to another
/// process. Appends for one channel are serialised by the caller, so an
/// implementation only has to be safe across channels.
public protocol LocalHistoryStore: HistoryStore {
    /// Appends `publication` to the channel's stream (creating the stream if needed),
    /// trims it to the namespace's size and TTL, and returns it with its offset; with a
    /// `version` the stream skips (see `StreamVersion.isSkipped`) it answers its position.
    func append(
        _ publication: Publication, to channel: String, options: NamespaceOptions, version: StreamVersion?, now: Date
    ) throws -> StreamAppend

    /// Drops the streams (offset and epoch) whose namespace's `history_meta_ttl` has
    /// passed since their last publication; a failure is the store's to log.
    func sweep(now: Date)
}

/// What a stream made of a publication: appended at a position, or skipped for its
/// version, with the stream's position.
public enum StreamAppend: Sendable, Equatable {
    case appended(Publication, StreamPosition)
    case skipped(StreamPosition)
}

extension LocalHistoryStore {
    /// Appends without a version: never skipped.
    public func append(_ publication: Publication, to channel: String, options: NamespaceOptions, now: Date) throws -> (Publication, StreamPosition) {
        switch try append(publication, to: channel, options: options, version: nil, now: now) {
        case let .appended(stored, position): (stored, position)
        case .skipped: preconditionFailure("a publication without a version is never skipped")
        }
    }

    /// `append` as the hub answers it: a refusal the store states (`HubError`) as it is,
    /// any other failure as an internal error naming it.
    func appending(
        _ publication: Publication, to channel: String, options: NamespaceOptions, version: StreamVersion?
    ) throws(HubError) -> StreamAppend {
        do {
            return try append(publication, to: channel, options: options, version: version, now: Date())
        } catch let refused as HubError {
            throw refused
        } catch {
            throw .internalError("history append failed: \(error)")
        }
    }
}

/// Streams held in memory: lost on restart, so every stream gets a new epoch then.
///
/// A stream's publications are trimmed to the namespace's size on append and to
/// its TTL on every access; the stream itself (epoch and top offset) is dropped
/// once it has had no publication for its namespace's `history_meta_ttl`, so memory
/// stays bounded by the channels that are in use.
public final class MemoryHistoryStore: LocalHistoryStore {
    private struct Stream {
        var epoch: String
        var top: UInt64 = 0
        /// The version of the latest versioned publication.
        var version: StreamVersion?
        var entries: [(publication: Publication, at: Date)] = []
        /// When the stream's offset and epoch are dropped: `history_meta_ttl` after its last publication.
        var metaExpiresAt: Date
    }

    private let streams = Mutex<[String: Stream]>([:])

    public init() {}

    public func append(
        _ publication: Publication, to channel: String, options: NamespaceOptions, version: StreamVersion?, now: Date
    ) -> StreamAppend {
        streams.withLock { streams in
            // The stream is changed where the dictionary keeps it: a copy taken out and put back
            // would copy its entries on every append.
            Self.append(
                publication, to: &streams[channel, default: Stream(epoch: Epoch.make(), metaExpiresAt: now)], options: options, version: version,
                now: now)
        }
    }

    private static func append(
        _ publication: Publication, to stream: inout Stream, options: NamespaceOptions, version: StreamVersion?, now: Date
    ) -> StreamAppend {
        if let version {
            if version.isSkipped(after: stream.version) { return .skipped(StreamPosition(offset: stream.top, epoch: stream.epoch)) }
            stream.version = version
        }
        stream.top += 1
        var stored = publication
        stored.offset = stream.top
        var kept = stored
        kept.useDelta = false
        stream.entries.append((kept, now))
        stream.metaExpiresAt = now.addingTimeInterval(options.historyMetaTTL.timeInterval)
        trim(&stream, options: options, now: now)
        return .appended(stored, StreamPosition(offset: stream.top, epoch: stream.epoch))
    }

    public func read(channel: String, after: UInt64?, limit: Int, reverse: Bool, options: NamespaceOptions, now: Date) -> StreamSlice {
        streams.withLock { streams in
            let fresh = { Stream(epoch: Epoch.make(), metaExpiresAt: now.addingTimeInterval(options.historyMetaTTL.timeInterval)) }
            Self.trim(&streams[channel, default: fresh()], options: options, now: now)
            let stream = streams[channel]!
            let after = after ?? 0
            let matching = stream.entries.lazy.map(\.publication).filter { $0.offset > after }
            let publications = reverse ? Array(matching.reversed().prefix(limit)) : Array(matching.prefix(limit))
            return StreamSlice(publications: publications, position: StreamPosition(offset: stream.top, epoch: stream.epoch))
        }
    }

    public func removeHistory(channel: String) {
        streams.withLock { streams in streams[channel]?.entries.removeAll() }
    }

    /// Drops streams whose `history_meta_ttl` has passed since their last publication.
    public func sweep(now: Date) {
        streams.withLock { streams in
            streams = streams.filter { $0.value.metaExpiresAt > now }
        }
    }

    /// Channels with a stream in memory.
    public var streamCount: Int { streams.withLock { $0.count } }

    private static func trim(_ stream: inout Stream, options: NamespaceOptions, now: Date) {
        let ttl = options.historyTTL.timeInterval
        let expired = stream.entries.prefix { now.timeIntervalSince($0.at) >= ttl }.count
        let overflow = max(0, stream.entries.count - expired - options.historySize)
        let drop = expired + overflow
        if drop > 0 { stream.entries.removeFirst(drop) }
    }
}

/// Random stream epochs.
public enum Epoch {
    /// A new random epoch string.
    public static func make() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<8).map { _ in alphabet.randomElement()! })
    }
}

extension Duration {
    /// The duration in seconds as a `TimeInterval`.
    public var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// The duration in whole milliseconds.
    public var milliseconds: Int64 { Int64(self / .milliseconds(1)) }
}
