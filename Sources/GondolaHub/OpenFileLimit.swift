#if canImport(Glibc)
    import Glibc
#endif

/// The process's open-file limit, which bounds the connections a process holds: each is a file
/// descriptor. `gondola serve` (and `gondola-load`) raise the soft limit to the hard one at start, as Go programs
/// such as Centrifugo do, so a shell's usual soft limit of 1,024 does not stop a node at about a
/// thousand connections. The hard limit stays where the system put it (the Debian unit sets it to
/// 1,048,576); a node past it refuses new connections, and NIO pauses accepting for a moment.
public enum OpenFileLimit {
    /// The limits now: soft (in force) and hard (the most the soft one may be raised to).
    public static var current: (soft: UInt64, hard: UInt64)? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        return (UInt64(limit.rlim_cur), UInt64(limit.rlim_max))
    }

    /// Raises the soft limit to the hard one; answers the limits afterwards (nil when they cannot be read).
    @discardableResult
    public static func raiseToHardLimit() -> (soft: UInt64, hard: UInt64)? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return current
    }
}
