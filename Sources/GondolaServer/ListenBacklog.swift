import Foundation

/// How many connections the kernel queues on the client listener before the server accepts
/// them. Hummingbird's default is 256: in a reconnect storm, thousands of phones connect
/// within a second, the queue overflows, and the kernel drops their SYNs, which they resend only
/// after 1, 3 and 7 seconds. Like Go's listeners (Centrifugo's), Gondola takes the system's
/// `net.core.somaxconn` (4,096 on current kernels), which is also the most the kernel grants.
public enum ListenBacklog {
    /// The system's `net.core.somaxconn`, at most 65,535; 4,096 when it cannot be read.
    public static var system: Int {
        guard let text = try? String(contentsOfFile: "/proc/sys/net/core/somaxconn", encoding: .utf8),
            let value = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), value > 0
        else { return 4096 }
        return min(value, 65535)
    }
}
