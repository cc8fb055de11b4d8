import Foundation

/// CPU time, time waiting for a core, and memory of a process, from `/proc`.
public struct ProcessUsage: Sendable {
    /// User plus system CPU seconds so far.
    public let cpuSeconds: Double
    /// Seconds its threads spent runnable but waiting for a core (the scheduler's run
    /// queue, `/proc/<pid>/task/*/schedstat`), summed over the threads alive now.
    public let runQueueWaitSeconds: Double?
    /// Resident set size now, in MiB.
    public let rssMiB: Double

    public init?(pid: Int32) {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 22, let user = Double(fields[11]), let system = Double(fields[12]), let pages = Double(fields[21]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        cpuSeconds = (user + system) / ticks
        rssMiB = pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
        runQueueWaitSeconds = Self.runQueueWait(pid: pid)
    }

    /// The second field of each thread's `schedstat` (nanoseconds waiting on a run queue), summed.
    static func runQueueWait(pid: Int32) -> Double? {
        guard let threads = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return nil }
        var nanoseconds = 0.0
        for thread in threads {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/schedstat", encoding: .utf8) else { continue }
            let fields = text.split(separator: " ")
            if fields.count > 1, let waited = Double(fields[1].trimmingCharacters(in: .whitespacesAndNewlines)) { nanoseconds += waited }
        }
        return nanoseconds / 1e9
    }

    /// The sum over several processes (the nodes of a cluster); nil when there are
    /// none or one cannot be read.
    public init?(pids: [Int32]) {
        let each = pids.compactMap(ProcessUsage.init(pid:))
        guard !each.isEmpty, each.count == pids.count else { return nil }
        cpuSeconds = each.reduce(0) { $0 + $1.cpuSeconds }
        rssMiB = each.reduce(0) { $0 + $1.rssMiB }
        let waits = each.compactMap(\.runQueueWaitSeconds)
        runQueueWaitSeconds = waits.count == each.count ? waits.reduce(0, +) : nil
    }

    /// CPU used between two readings, in percent of one core over `seconds` (NaN without both).
    public static func cpuPercent(from before: ProcessUsage?, to after: ProcessUsage?, over seconds: Double) -> Double {
        guard let before, let after else { return .nan }
        return (after.cpuSeconds - before.cpuSeconds) / seconds * 100
    }

    /// Time the threads waited for a core between two readings, in percent of `seconds`
    /// (100%: on average one thread was always waiting); nil without both.
    public static func runQueueWaitPercent(from before: ProcessUsage?, to after: ProcessUsage?, over seconds: Double) -> Double? {
        guard let waited = before?.runQueueWaitSeconds, let waiting = after?.runQueueWaitSeconds else { return nil }
        return max(0, waiting - waited) / seconds * 100
    }
}
