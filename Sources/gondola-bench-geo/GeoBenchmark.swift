import ArgumentParser
import Foundation
import GondolaGeo

/// Measures GondolaGeo against SQLite's R*Tree and libspatialindex on the same
/// seeded workloads (move one point a few metres, then query around it), plus
/// memory per point, roaming proximity throughput and fence lookups.
@main
struct GeoBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "gondola-bench-geo")

    @Option(help: "Points of the country workload.") var countryPoints = 1_000_000
    @Option(help: "Operations per implementation (SQLite runs a tenth).") var operations = 200_000
    @Option(help: "Grid cell of the country index, metres.") var countryCell = 800.0
    @Option(help: "Grid cell of the resort index, metres.") var resortCell = 150.0
    @Option(help: "Grid cell of the roaming proximity map, metres.") var roamingCell = 250.0
    @Option(help: "Markdown file the table is appended to.") var markdown: String?
    @Option(help: "Time only GondolaGeo on one workload: country, resort or roaming (for profiling and cell sizing).") var only: String?

    func validate() throws {
        guard (1000...5_000_000).contains(countryPoints) else { throw ValidationError("--country-points must be 1000...5000000") }
        guard (1000...10_000_000).contains(operations) else { throw ValidationError("--operations must be 1000...10000000") }
    }

    func run() throws {
        let country = Workload(name: "country", center: GeoPoint(lat: 46.0, lon: 8.0), sideMetres: 200_000, points: countryPoints,
                               radius: 300, limit: .max, seed: 1)
        let resort = Workload(name: "resort", center: GeoPoint(lat: 45.3, lon: 6.6), sideMetres: 5000, points: 20_000,
                              radius: 300, limit: 50, seed: 2)
        if only == "roaming" {
            let roaming = roamingThroughput()
            print(String(format: "roaming: %.0f updates/s", roaming.perSecond))
            return
        }
        if let only {
            guard let workload = [country, resort].first(where: { $0.name == only }) else {
                throw ValidationError("--only must be country, resort or roaming, got '\(only)'")
            }
            let result = workload.measure(GondolaIndex(cellMetres: only == "country" ? countryCell : resortCell), operations: operations)
            print(String(format: "%@ gondola: median %.2f µs, %.0f ops/s", only, result.medianMicros, result.opsPerSecond))
            return
        }
        var rows: [String] = ["| workload | implementation | operations | ops/s | median µs | p99 µs |", "| --- | --- | --- | --- | --- | --- |"]

        let bytesPerPoint = memoryPerPoint(country)
        var countryRates: [String: Double] = [:]
        var resortRates: [String: Double] = [:]
        for workload in [country, resort] {
            let cell = workload.name == "country" ? countryCell : resortCell
            var results: [String: Measurement] = [:]
            results["gondola"] = workload.measure(GondolaIndex(cellMetres: cell), operations: operations)
            results["libspatialindex"] = workload.measure(SpatialIndexRTree(capacity: workload.points), operations: operations / 4)
            results["sqlite-rtree"] = workload.measure(SQLiteRTreeIndex(capacity: workload.points), operations: operations / 10)
            let checksums = Set(results.values.map(\.checksum))
            if checksums.count != 1 { print("warning: implementations disagree on the first queries: \(results.mapValues(\.checksum))") }
            for name in ["gondola", "sqlite-rtree", "libspatialindex"] {
                let result = results[name]!
                rows.append(String(format: "| %@ | %@ | %d | %.0f | %.2f | %.2f |", workload.name, name, result.operations, result.opsPerSecond, result.medianMicros, result.p99Micros))
                if workload.name == "country" { countryRates[name] = result.opsPerSecond } else { resortRates[name] = result.opsPerSecond }
            }
            let gondola = results["gondola"]!.opsPerSecond
            rows.append(String(format: "| %@ | ratios | | gondola/sqlite %.1f×, gondola/libspatialindex %.1f× | | |", workload.name,
                               gondola / results["sqlite-rtree"]!.opsPerSecond, gondola / results["libspatialindex"]!.opsPerSecond))
        }
        rows.append(String(format: "| country | gondola bytes per point (RSS delta) | %d | %.1f | | |", countryPoints, bytesPerPoint))
        let roaming = roamingThroughput()
        rows.append(String(format: "| roaming | 100,000 watchers of 500 m, frames every tick | %d | %.0f | | |", roaming.updates, roaming.perSecond))
        let fences = fenceLookups()
        rows.append(String(format: "| fences | 10,000 polygons, point lookups | %d | %.0f | | |", fences.lookups, fences.perSecond))

        let table = rows.joined(separator: "\n")
        print(table)
        let summary = String(format: "geo: gondola %.0f, sqlite-rtree %.0f, libspatialindex %.0f, bytes/point %.0f",
                             countryRates["gondola"]!, countryRates["sqlite-rtree"]!, countryRates["libspatialindex"]!, bytesPerPoint)
        let resortSummary = String(format: "geo-resort: gondola %.0f, sqlite-rtree %.0f, libspatialindex %.0f",
                                   resortRates["gondola"]!, resortRates["sqlite-rtree"]!, resortRates["libspatialindex"]!)
        if let markdown {
            let text = "\n" + table + "\n\n" + summary + "  \n" + resortSummary + "\n"
            if let handle = FileHandle(forWritingAtPath: markdown) {
                handle.seekToEndOfFile()
                handle.write(Data(text.utf8))
                handle.closeFile()
            }
        }
        print(summary)
        print(resortSummary)
    }

    /// Resident memory growth while 1M points go into a GondolaGeo index, per point.
    func memoryPerPoint(_ workload: Workload) -> Double {
        let positions = workload.positions()
        let before = residentBytes()
        var index = MovingPointIndex<Int>(cellMetres: countryCell)
        for (id, point) in positions.enumerated() { index.upsert(id, at: point, timestamp: 0) }
        let after = residentBytes()
        withExtendedLifetime(index) {}
        return Double(after - before) / Double(positions.count)
    }

    func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        return (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// A fix with nothing but the position.
    struct Fix: PositionFix {
        var point: GeoPoint
    }

    /// 100,000 travellers over 200 × 200 km, each watching 500 m (the nearest 50) with the
    /// product's engine: every tick a tenth of them move a few metres, then the watchers of
    /// the tick's phase (one of ten) get their frames. Counts updates and frame work together.
    func roamingThroughput() -> (updates: Int, perSecond: Double) {
        var random = SeededRandom(seed: 3)
        let workload = Workload(name: "roaming", center: GeoPoint(lat: 46, lon: 8), sideMetres: 200_000, points: 100_000, radius: 500, limit: .max, seed: 3)
        var positions = workload.positions()
        var map = ProximityMap<Fix>(cellMetres: roamingCell, margin: 20, phases: 10)
        for (slot, point) in positions.enumerated() { map.update(Int32(slot), Fix(point: point), receivedAt: 0) }
        for slot in positions.indices { _ = map.watch(Int32(slot), radius: 500, limit: 50) { _, _ in true } }
        map.endFrame()
        let perTick = positions.count / 10
        let ticks = max(operations, 100_000) / perTick
        var events = 0
        let start = ContinuousClock.now
        for tick in 0..<ticks {
            for _ in 0..<perTick {
                let slot = Int.random(in: 0..<positions.count, using: &random)
                positions[slot] = Workload.nudge(positions[slot], using: &random)
                map.update(Int32(slot), Fix(point: positions[slot]), receivedAt: Int64(tick))
            }
            events += map.nearbyFrame(phase: map.tick % map.phases) { _, _ in true }.reduce(0) { $0 + $1.events.count }
            map.endFrame()
        }
        let seconds = (ContinuousClock.now - start).seconds
        print("roaming: \(ticks * perTick) updates in \(ticks) ticks, \(events) events")
        return (ticks * perTick, Double(ticks * perTick) / seconds)
    }

    /// 10,000 polygons (stars of 100 m to 1 km) over 200 × 200 km, random point lookups.
    func fenceLookups() -> (lookups: Int, perSecond: Double) {
        var random = SeededRandom(seed: 4)
        let center = GeoPoint(lat: 46, lon: 8)
        var index = GeofenceIndex<Int>(cellDegrees: 0.01)
        for id in 0..<10_000 {
            let middle = random.point(near: center, metres: 100_000)
            let count = Int.random(in: 5...10, using: &random)
            let radius = Double.random(in: 100...1000, using: &random)
            var ring = (0..<count).map { step in
                Geodesy.destination(from: middle, bearing: Double(step) * 360 / Double(count), metres: radius * .random(in: 0.5...1, using: &random))
            }
            ring.append(ring[0])
            index.insert(Geofence(id: id, polygons: [Polygon(outline: ring)]))
        }
        let lookups = max(operations * 5, 1_000_000)
        let points = (0..<lookups).map { _ in random.point(near: center, metres: 100_000) }
        var hits = 0
        let start = ContinuousClock.now
        for point in points { hits += index.containing(point).count }
        let seconds = (ContinuousClock.now - start).seconds
        print("fences: \(lookups) lookups, \(hits) hits")
        return (lookups, Double(lookups) / seconds)
    }
}

/// Timings of one implementation on one workload.
struct Measurement {
    let operations: Int
    let opsPerSecond: Double
    let medianMicros: Double
    let p99Micros: Double
    /// Sum of result sizes of the first 1,000 queries, to check the implementations agree.
    let checksum: Int
}

/// A seeded set of points in a square and a sequence of moves and queries over it.
struct Workload {
    let name: String
    let center: GeoPoint
    let sideMetres: Double
    let points: Int
    let radius: Double
    let limit: Int
    let seed: UInt64

    func positions() -> [GeoPoint] {
        var random = SeededRandom(seed: seed)
        return (0..<points).map { _ in random.point(near: center, metres: sideMetres / 2) }
    }

    /// A move of up to 5 m each way.
    static func nudge(_ point: GeoPoint, using random: inout SeededRandom) -> GeoPoint {
        GeoPoint(lat: point.lat + Double.random(in: -5...5, using: &random) / Geodesy.metresPerDegree,
                 lon: point.lon + Double.random(in: -5...5, using: &random) / Geodesy.metresPerDegree / cos(point.lat * .pi / 180))
    }

    /// Loads the points, then times `operations` of (move one point, query around it).
    func measure(_ index: some BenchmarkedIndex, operations: Int) -> Measurement {
        var index = index
        var positions = positions()
        for (id, point) in positions.enumerated() { index.insert(id, point) }
        var random = SeededRandom(seed: seed &+ 100)
        var timings = [Duration](repeating: .zero, count: operations)
        var checksum = 0
        let clock = ContinuousClock()
        let start = clock.now
        for step in 0..<operations {
            let id = Int.random(in: 0..<points, using: &random)
            let moved = Self.nudge(positions[id], using: &random)
            let began = clock.now
            index.move(id, from: positions[id], to: moved)
            let found = index.nearby(moved, radius: radius, limit: limit)
            timings[step] = clock.now - began
            positions[id] = moved
            if step < 1000 { checksum += found.count }
        }
        let total = (clock.now - start).seconds
        timings.sort()
        print("\(name) \(index.name): \(operations) operations in \(String(format: "%.2f", total)) s")
        return Measurement(
            operations: operations, opsPerSecond: Double(operations) / total,
            medianMicros: timings[operations / 2].seconds * 1e6, p99Micros: timings[operations * 99 / 100].seconds * 1e6,
            checksum: checksum)
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
