import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import GondolaProtocol
import Histogram
import Synchronization

/// A latency histogram shared by many client tasks (nanoseconds, up to a minute).
public final class LatencyRecorder: Sendable {
    private let histogram = Mutex(Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three))

    public init() {}

    public func reset() { histogram.withLock { $0.reset() } }

    public func record(_ values: [UInt64]) {
        histogram.withLock { histogram in
            for value in values { _ = histogram.record(value) }
        }
    }

    /// The value at `percentile`, in milliseconds.
    public func milliseconds(at percentile: Double) -> Double {
        histogram.withLock { Double($0.valueAtPercentile(percentile)) / 1e6 }
    }

    public var count: UInt64 { histogram.withLock { $0.totalCount } }
}

/// Appends result rows to a Markdown file (created when missing).
public enum MarkdownRows {
    public static func append(_ rows: [String], to path: String) {
        let text = rows.joined(separator: "\n") + "\n"
        if let handle = FileHandle(forWritingAtPath: path) {
            handle.seekToEndOfFile()
            handle.write(Data(text.utf8))
            handle.closeFile()
        } else {
            _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        }
    }
}

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

    /// CPU used between two readings, in percent of one core over `seconds` (NaN without both).
    public static func cpuPercent(from before: ProcessUsage?, to after: ProcessUsage?, over seconds: Double) -> Double {
        guard let before, let after else { return .nan }
        return (after.cpuSeconds - before.cpuSeconds) / seconds * 100
    }
}

/// Waits until `counter` reaches `expected` or `limit` passes; answers the count reached.
public func waitUntil(_ counter: borrowing Atomic<Int>, reaches expected: Int, within limit: Duration) async throws -> Int {
    let deadline = ContinuousClock.now + limit
    while counter.load(ordering: .relaxed) < expected, ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(200))
    }
    return counter.load(ordering: .relaxed)
}

/// The integers after each occurrence of `marker` in `bytes` (a light scan for
/// send timestamps, without parsing the JSON).
public func integers(after marker: [UInt8], in bytes: [UInt8]) -> [Int64] {
    var result: [Int64] = []
    var index = 0
    while index + marker.count < bytes.count {
        if bytes[index] == marker[0], bytes[index..<index + marker.count].elementsEqual(marker) {
            index += marker.count
            var value: Int64 = 0
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                value = value * 10 + Int64(bytes[index] - 48)
                index += 1
            }
            result.append(value)
        } else {
            index += 1
        }
    }
    return result
}

extension Duration {
    public var nanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
}

/// A benchmark setup step failed.
public struct BenchmarkError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The server API calls the benchmarks need (trips and their members).
public struct ServerAPIClient: Sendable {
    public init(base: String, key: String) {
        self.base = base
        self.key = key
    }

    let base: String
    let key: String

    public func call(_ method: String, _ body: JSON) async throws -> JSON {
        var request = URLRequest(url: URL(string: "\(base)/api/\(method)")!)
        request.httpMethod = "POST"
        request.httpBody = Data(body.bytes)
        request.setValue(key, forHTTPHeaderField: "X-API-Key")
        let (data, _) = try await URLSession.shared.data(for: request)
        let answer = try JSONParser.parse(Array(data))
        guard let result = answer["result"] else { throw BenchmarkError("\(method) failed: \(answer.text)") }
        return result
    }

    /// A trip running now with one host and `travellers`; answers its id.
    public func createTrip(host: String, travellers: [String]) async throws -> String {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let result = try await call("trip_create", [
            "name": "bench", "resort": "demo", "starts_at": .int(now - 3_600_000), "ends_at": .int(now + 86_400_000), "hosts": [.string(host)],
        ])
        guard case let .string(id)? = result["trip"]?["id"] else { throw BenchmarkError("trip_create answered \(result.text)") }
        for traveller in travellers {
            _ = try await call("trip_add_member", ["trip": .string(id), "user": .string(traveller), "role": "traveller"])
        }
        return id
    }

    /// Creates `count` trips, eight at a time (the hub writes each membership to SQLite
    /// before answering); `members(i)` names trip `i`'s host and travellers. Answers the ids in order.
    public func createTrips(_ count: Int, members: @escaping @Sendable (Int) -> (host: String, travellers: [String])) async throws -> [String] {
        try await withThrowingTaskGroup(of: (Int, String).self) { group in
            var ids = [String](repeating: "", count: count)
            for trip in 0..<count {
                if trip >= 8, let (done, id) = try await group.next() { ids[done] = id }
                group.addTask {
                    let (host, travellers) = members(trip)
                    return (trip, try await createTrip(host: host, travellers: travellers))
                }
            }
            for try await (done, id) in group { ids[done] = id }
            return ids
        }
    }
}

