import GondolaHub

/// The chat sends of the last minutes by sender and `client_message_id`, with the
/// offset each was stored at: a retry of a send whose reply was lost finds its
/// message here and is answered with it instead of being stored twice.
///
/// Kept in memory by the chat writer and reloaded from the stored messages of the
/// last `window` when the server starts, so a retry after a restart is recognised
/// too. (A unique SQLite index on the same key cost every commit one B-tree leaf per
/// message, at random places, which doubled the pages each chat batch wrote.)
///
/// Bounded twice: a send is forgotten once it is older than `window` or when
/// `maxEntries` newer ones are kept; a retry that comes later than that is stored
/// as a new message.
struct RecentChatSends {
    /// How long and how many sends are remembered.
    struct Limits: Sendable {
        /// Sends older than this (by their `ts`) are forgotten.
        var windowMilliseconds: Int64 = 10 * 60 * 1000
        /// Most sends remembered; the oldest go first.
        var maxEntries = 500_000
    }

    /// One remembered send.
    struct Entry: Sendable {
        let key: ChatMessageKey
        let offset: UInt64
        let ts: Int64
    }

    let limits: Limits
    /// Each remembered send's offset, until a send older than the window: a send of `ts` is
    /// due at `ts + window + 1`, so one exactly `window` old is still remembered.
    private var offsets: RecentMemo<ChatMessageKey, UInt64, Int64>

    /// Remembers `entries` (oldest first), keeping the newest that the limits allow at `now`.
    init(limits: Limits = Limits(), entries: [Entry] = [], now: Int64) {
        self.limits = limits
        offsets = RecentMemo(maxEntries: limits.maxEntries)
        for entry in entries { remember(entry, now: now) }
    }

    var count: Int { offsets.count }

    /// The offset `key` was stored at, if it is remembered.
    func offset(of key: ChatMessageKey) -> UInt64? { offsets.value(of: key) }

    /// Remembers a stored send and forgets what the limits no longer allow at `now`.
    mutating func remember(_ entry: Entry, now: Int64) {
        offsets.remember(entry.offset, for: entry.key, until: entry.ts + limits.windowMilliseconds + 1, now: now)
    }

    /// Forgets sends older than the window at `now` and the oldest beyond `maxEntries`.
    mutating func forget(now: Int64) {
        offsets.forget(now: now)
    }
}
