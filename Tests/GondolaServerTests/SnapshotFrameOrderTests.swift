import Foundation
import GondolaGeo
import GondolaProtocol
import GondolaTestSupport
import Testing

/// Frames are published after the live state's lock is released; a subscribe that
/// lands while a tick is being published must still see every change exactly
/// once — in its snapshot or in a later frame, never in both and never in neither.
@Suite struct SnapshotFrameOrderTests {
    /// 12 travellers report positions as fast as they can, each with a larger `ts`
    /// than the last; 16 hosts subscribe to the trip's locations at staggered times
    /// while that goes on. For every host and traveller the `ts` seen (snapshot, then
    /// frames) must strictly increase — a change in both the snapshot and a frame
    /// would repeat one — and once the travellers stop, each host's last `ts` of each
    /// traveller must be the last one sent.
    @Test func subscribeSnapshotsAndFramesNeitherOverlapNorLeaveAGap() async throws {
        let server = try await startTravelServer()
        let travellers = (0..<12).map { "walker\($0)" }
        let hosts = (0..<16).map { "watcher\($0)" }
        let trip = try await server.createTrip(hosts: hosts, travellers: travellers)
        let origin = GeoPoint(lat: 45.3, lon: 6.58)
        let start = Int64(Date().timeIntervalSince1970 * 1000)
        let walkers = try await travellers.asyncMap { try await server.client($0) }
        let watchers = try await hosts.asyncMap { try await server.client($0) }
        async let snapshots = watchers.asyncMap { watcher in
            try await Task.sleep(for: .milliseconds(15))
            return try await watcher.subscribe("locations:\(trip)")
        }
        let lastSent = try await withThrowingTaskGroup(of: (String, Int64).self) { group in
            for (number, walker) in walkers.enumerated() {
                group.addTask {
                    var ts = start
                    for step in 0..<150 {
                        ts += 1
                        let point = origin.offset(north: Double(step), east: Double(number * 10))
                        _ = try await walker.rpc("location.update", ["lat": .double(point.lat), "lon": .double(point.lon), "ts": .int(ts)])
                    }
                    return (travellers[number], ts)
                }
            }
            var last: [String: Int64] = [:]
            for try await (user, ts) in group { last[user] = ts }
            return last
        }
        let snapshotOf = try await snapshots
        // Wait (with a deadline) until every watcher holds every traveller's last position, then check how it got there.
        func latest(_ index: Int) -> [String: Int64] {
            var latest: [String: Int64] = [:]
            for message in [snapshotOf[index]] + watchers[index].publications("locations:\(trip)") {
                for position in message?["positions"]?.arrayValue ?? [] {
                    let user = position["user"]?.stringValue ?? ""
                    let ts = Int64(position["ts"]?.doubleValue ?? 0)
                    latest[user] = max(latest[user] ?? 0, ts)
                }
            }
            return latest
        }
        // The expectations below say which watcher misses what when the wait ends without it.
        try? await eventually { watchers.indices.allSatisfy { latest($0) == lastSent } }
        #expect(snapshotOf.contains { ($0?["positions"]?.arrayValue.count ?? 0) > 0 }, "some hosts subscribed while the travellers moved")
        for (index, (host, watcher)) in zip(hosts, watchers).enumerated() {
            var seen: [String: Int64] = [:]
            for message in [snapshotOf[index]] + watcher.publications("locations:\(trip)") {
                for position in message?["positions"]?.arrayValue ?? [] {
                    let user = position["user"]?.stringValue ?? ""
                    let ts = Int64(position["ts"]?.doubleValue ?? 0)
                    #expect(ts > seen[user, default: 0], "\(host) saw \(user) at ts \(ts) again (or out of order)")
                    seen[user] = ts
                }
            }
            #expect(seen == lastSent, "\(host) ends with \(seen), the travellers' last positions are \(lastSent)")
        }
        for client in walkers + watchers { await client.close() }
        try await server.stop()
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
