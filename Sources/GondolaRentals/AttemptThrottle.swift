import Synchronization

/// Counts attempts per key (an email, a client address) in a sliding window and says
/// when a key has had its share: `limit` attempts per `window` milliseconds. It tracks at
/// most `maxKeys` keys; when full, the keys whose last attempt is oldest are forgotten
/// first (so an attacker filling it with new keys only frees its own oldest ones).
final class AttemptThrottle: Sendable {
    let limit: Int
    let window: Int64
    let maxKeys: Int
    private let attempts = Mutex<[String: [Int64]]>([:])

    init(limit: Int, window: Int64, maxKeys: Int = 100_000) {
        self.limit = limit
        self.window = window
        self.maxKeys = maxKeys
    }

    /// Seconds until `key` may try again, or nil when it may try now.
    func retryAfter(_ key: String, now: Int64) -> Int? {
        attempts.withLock { table in
            guard let times = table[key] else { return nil }
            let recent = times.filter { $0 > now - window }
            guard recent.count >= limit, let oldest = recent.first else { return nil }
            return Int((oldest + window - now + 999) / 1000)
        }
    }

    /// Counts an attempt of `key`.
    func record(_ key: String, now: Int64) {
        attempts.withLock { table in
            var times = (table[key] ?? []).filter { $0 > now - window }
            times.append(now)
            if times.count > limit { times.removeFirst(times.count - limit) }
            if table[key] == nil, table.count >= maxKeys { Self.forgetOldest(in: &table, now: now, window: window, maxKeys: maxKeys) }
            table[key] = times
        }
    }

    /// Forgets `key`'s attempts (a successful sign-in clears its failures).
    func clear(_ key: String) {
        _ = attempts.withLock { $0.removeValue(forKey: key) }
    }

    /// Drops keys whose attempts are all outside the window and, when that is not
    /// enough, the tenth of the keys with the oldest last attempt.
    private static func forgetOldest(in table: inout [String: [Int64]], now: Int64, window: Int64, maxKeys: Int) {
        table = table.filter { ($0.value.last ?? 0) > now - window }
        guard table.count >= maxKeys else { return }
        let drop = max(1, table.count / 10)
        for key in table.sorted(by: { ($0.value.last ?? 0) < ($1.value.last ?? 0) }).prefix(drop).map(\.key) {
            table.removeValue(forKey: key)
        }
    }
}
