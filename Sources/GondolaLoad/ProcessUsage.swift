import Foundation

/// CPU time and peak memory of a process, from `/proc`.
public struct ProcessUsage: Sendable {
    /// User plus system CPU seconds so far.
    public let cpuSeconds: Double
    /// Resident set size now, in MiB.
    public let rssMiB: Double

    public init?(pid: Int32) {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 22, let user = Double(fields[11]), let system = Double(fields[12]), let pages = Double(fields[21]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        cpuSeconds = (user + system) / ticks
        rssMiB = pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
    }

    /// The sum over several processes (the nodes of a cluster); nil when there are
    /// none or one cannot be read.
    public init?(pids: [Int32]) {
        let each = pids.compactMap(ProcessUsage.init(pid:))
        guard !each.isEmpty, each.count == pids.count else { return nil }
        cpuSeconds = each.reduce(0) { $0 + $1.cpuSeconds }
        rssMiB = each.reduce(0) { $0 + $1.rssMiB }
    }

    /// CPU used between two readings, in percent of one core over `seconds` (NaN without both).
    public static func cpuPercent(from before: ProcessUsage?, to after: ProcessUsage?, over seconds: Double) -> Double {
        guard let before, let after else { return .nan }
        return (after.cpuSeconds - before.cpuSeconds) / seconds * 100
    }
}
