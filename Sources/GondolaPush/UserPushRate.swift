import Synchronization

/// The per-user rate of notifications: at most `perMinute` sent to one user's devices in a
/// minute-long window. A notification over the rate is not dropped: it waits in the outbox
/// until the window ends, and chat messages arriving meanwhile fold into it. At most
/// `maxUsers` windows are kept; past that, ended windows are forgotten (a user whose window
/// was forgotten starts a new one, which can only let fewer through in that minute).
final class UserPushRate: Sendable {
    static let window: Int64 = 60_000
    static let maxUsers = 200_000

    let perMinute: Int
    private let windows = Mutex<[String: (start: Int64, sent: Int)]>([:])

    init(perMinute: Int) { self.perMinute = perMinute }

    /// Takes one of `user`'s sends at `now`; nil when allowed, else when the user's window ends.
    func take(_ user: String, now: Int64) -> Int64? {
        windows.withLock { windows in
            if windows.count >= Self.maxUsers { windows = windows.filter { now - $0.value.start < Self.window } }
            var window = windows[user] ?? (now, 0)
            if now - window.start >= Self.window { window = (now, 0) }
            guard window.sent < perMinute else { return window.start + Self.window }
            window.sent += 1
            windows[user] = window
            return nil
        }
    }
}
