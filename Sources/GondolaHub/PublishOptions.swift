import GondolaProtocol
import Synchronization

/// How one publication is published beyond its data and tags: Centrifugo's per-publication
/// options of the server API's `publish` and `broadcast`.
public struct PublishOptions: Sendable, Equatable {
    /// Not appended to the channel's stream even where its namespace keeps one: the
    /// publication reaches the subscribers without an offset, and the answer has no position.
    public var skipHistory: Bool
    /// A publication to the same channel with the same key within
    /// `IdempotentResults.lifetime` answers this one's position and publishes nothing.
    public var idempotencyKey: String?
    /// The publication's version (0: none): a version not above the stream's latest one is
    /// skipped, answered with the stream's position, when `versionEpoch` is empty or the
    /// latest version's epoch.
    public var version: UInt64
    /// The epoch of `version`: a new epoch starts the versions over.
    public var versionEpoch: String
    /// Subscriptions that negotiated deltas may get the publication as a delta (the
    /// namespace's `deltaPublish` asks it of every publication).
    public var delta: Bool

    public init(skipHistory: Bool = false, idempotencyKey: String? = nil, version: UInt64 = 0, versionEpoch: String = "", delta: Bool = false) {
        self.skipHistory = skipHistory
        self.idempotencyKey = idempotencyKey
        self.version = version
        self.versionEpoch = versionEpoch
        self.delta = delta
    }

    /// How an engine keys an idempotency key: per channel (a NUL cannot appear in a channel name).
    public static func keyEntry(channel: String, key: String) -> String { "\(channel)\u{0}\(key)" }

    /// The version condition a stream checks before appending, nil without a version.
    public var streamVersion: StreamVersion? {
        version > 0 ? StreamVersion(version: version, epoch: versionEpoch) : nil
    }
}

/// A publication's version and its epoch, kept with the channel's stream: the latest
/// appended one is what the next versioned publication is compared with.
public struct StreamVersion: Sendable, Equatable {
    public var version: UInt64
    public var epoch: String

    public init(version: UInt64, epoch: String) {
        self.version = version
        self.epoch = epoch
    }

    /// Whether a stream whose latest version is `latest` skips this one: not newer, in
    /// the same epoch (an empty epoch matches any).
    public func isSkipped(after latest: StreamVersion?) -> Bool {
        guard let latest else { return false }
        return (epoch.isEmpty || epoch == latest.epoch) && version <= latest.version
    }
}

/// The positions `publish` answered for idempotency keys, per channel, for
/// `lifetime` (Centrifugo's five minutes): a retry within it gets the first answer.
/// At most `limit` keys are kept; past it the oldest is forgotten before its time
/// (all keys live equally long, so the oldest is the next to expire anyway).
final class IdempotentResults: Sendable {
    static let lifetime = Duration.seconds(300)
    static let limit = 100_000

    private let results = Mutex(RecentMemo<String, StreamPosition?, ContinuousClock.Instant>(maxEntries: limit))

    /// The position answered for `key` on `channel` within its lifetime, if any (`.some(nil)`:
    /// published without a stream).
    func result(channel: String, key: String, now: ContinuousClock.Instant) -> StreamPosition?? {
        results.withLock { results in
            results.forget(now: now)
            return results.value(of: PublishOptions.keyEntry(channel: channel, key: key))
        }
    }

    /// Keeps the answer for `key` on `channel`.
    func remember(_ position: StreamPosition?, channel: String, key: String, now: ContinuousClock.Instant) {
        results.withLock { $0.remember(position, for: PublishOptions.keyEntry(channel: channel, key: key), until: now + Self.lifetime, now: now) }
    }

    /// How many keys are kept.
    var count: Int { results.withLock { $0.count } }
}
