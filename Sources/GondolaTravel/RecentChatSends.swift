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
    private var offsets: [ChatMessageKey: UInt64] = [:]
    /// Every remembered send, oldest first from `head` on.
    private var order: [Entry] = []
    private var head = 0

    /// Remembers `entries` (oldest first), keeping the newest that the limits allow at `now`.
    init(limits: Limits = Limits(), entries: [Entry] = [], now: Int64) {
        self.limits = limits
        for entry in entries { remember(entry, now: now) }
    }

    var count: Int { offsets.count }

    /// The offset `key` was stored at, if it is remembered.
    func offset(of key: ChatMessageKey) -> UInt64? { offsets[key] }

    /// Remembers a stored send and forgets what the limits no longer allow at `now`.
    mutating func remember(_ entry: Entry, now: Int64) {
        offsets[entry.key] = entry.offset
        order.append(entry)
        forget(now: now)
    }

    /// Forgets sends older than the window at `now` and the oldest beyond `maxEntries`.
    mutating func forget(now: Int64) {
        while head < order.count, order.count - head > limits.maxEntries || order[head].ts < now - limits.windowMilliseconds {
            let oldest = order[head]
            // A key stored again after it was forgotten maps to its newer offset: keep that one.
            if offsets[oldest.key] == oldest.offset { offsets[oldest.key] = nil }
            head += 1
        }
        if head > 1024, head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
    }
}
