/// Values remembered for a while, bounded twice: an entry is forgotten once its time is
/// up, or when `maxEntries` newer entries are kept (the oldest go first). Entries are
/// forgotten from the oldest on, so they should be remembered in about the order their
/// time runs out. Remembering a key again keeps its newer value until that one's time is up.
public struct RecentMemo<Key: Hashable, Value, Instant: Comparable> {
    /// Most entries kept; one more forgets the oldest.
    public let maxEntries: Int
    private var values: [Key: (value: Value, serial: Int)] = [:]
    /// Every entry kept, oldest first from `head` on, with the serial number of its remembering.
    private var order: [(key: Key, expires: Instant, serial: Int)] = []
    private var head = 0
    private var nextSerial = 0

    public init(maxEntries: Int) {
        self.maxEntries = maxEntries
    }

    /// How many keys are remembered.
    public var count: Int { values.count }

    /// The value remembered for `key`, if any.
    public func value(of key: Key) -> Value? { values[key]?.value }

    /// Remembers `value` for `key` until `expires`, and forgets what is due at `now`.
    public mutating func remember(_ value: Value, for key: Key, until expires: Instant, now: Instant) {
        values[key] = (value, nextSerial)
        order.append((key, expires, nextSerial))
        nextSerial += 1
        forget(now: now)
    }

    /// Forgets the entries whose time is up at `now` (their `expires` is not after it) and the
    /// oldest beyond `maxEntries`.
    public mutating func forget(now: Instant) {
        while head < order.count, order.count - head > maxEntries || order[head].expires <= now {
            let oldest = order[head]
            // A key remembered again since maps to its newer entry: keep that one.
            if values[oldest.key]?.serial == oldest.serial { values[oldest.key] = nil }
            head += 1
        }
        // Compact once the forgotten prefix is most of the array.
        if head > 1024, head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
    }
}

extension RecentMemo: Sendable where Key: Sendable, Value: Sendable, Instant: Sendable {}
