import ArgumentParser
import Foundation
import GondolaGeo

/// Measures GondolaGeo against SQLite's R*Tree and libspatialindex on the same
/// seeded workloads (move one point a few metres, then query around it), plus
/// memory per point, roaming proximity throughput and fence lookups.
@main
struct GeoBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "gondola-bench-geo")
    /// Turns the in-process indexes take on a workload (see `Workload.measure(_:rounds:quiet:)`).
    static let rounds = 10

    @Option(help: "Points of the country workload.") var countryPoints = 1_000_000
    @Option(help: "Operations per implementation (SQLite runs a tenth).") var operations = 200_000
    @Option(help: "Grid cell of the country index, metres.") var countryCell = 800.0
    @Option(help: "Grid cell of the resort index, metres.") var resortCell = 150.0
    @Option(help: "Grid cell of the roaming proximity map, metres.") var roamingCell = 250.0
    @Option(help: "Operations per libspatialindex configuration in its sweep.") var sweepOperations = 3000
    @Option(help: "Redis server (host:port) to compare with; its GEOSEARCH is skipped without it.") var redis: String?
    @Option(help: "libpq connection string of a PostgreSQL server with PostGIS; skipped without it.") var postgres: String?
    @Option(help: "Markdown file the table is appended to.") var markdown: String?
    @Option(help: "Point-in-fence checks among 10,000 fences (SQLite and PostGIS run a tenth).") var fenceChecks = 1_000_000
    @Option(help: "Position updates judged against the fences, per fence count.") var fenceUpdates = 1_000_000
    @Option(
        help:
            "Time only GondolaGeo on one workload: country, resort, roaming, maps or fences (for profiling and cell sizing), or only sweep libspatialindex (libspatialindex)."
    ) var only: String?
    @Flag(help: "With --only country or resort, time the grid keyed by the ids as slots (gondola-grid) instead of MovingPointIndex.") var slots =
        false

    func validate() throws {
        guard (1000...5_000_000).contains(countryPoints) else { throw ValidationError("--country-points must be 1000...5000000") }
        guard (1000...10_000_000).contains(operations) else { throw ValidationError("--operations must be 1000...10000000") }
        if slots, only != "country", only != "resort" {
            throw ValidationError("--slots needs --only country or --only resort, got \(only.map { "--only \($0)" } ?? "no --only")")
        }
    }

    func run() throws {
        let country = Workload(
            name: "country", center: GeoPoint(lat: 46.0, lon: 8.0), sideMetres: 200_000, points: countryPoints,
            radius: 300, limit: .max, seed: 1)
        let resort = Workload(
            name: "resort", center: GeoPoint(lat: 45.3, lon: 6.6), sideMetres: 5000, points: 20_000,
            radius: 300, limit: 50, seed: 2)
        if only == "roaming" {
            let roaming = roamingThroughput()
            print(String(format: "roaming: %.0f updates/s", roaming.perSecond))
            return
        }
        if only == "fences" {
            let rows =
                try ["| workload | implementation | operations | ops/s | median µs | p99 µs |", "| --- | --- | --- | --- | --- | --- |"]
                + FenceBenchmark(checks: fenceChecks, updates: fenceUpdates, postgres: postgres).run()
            let table = rows.joined(separator: "\n")
            print(table)
            if let markdown { append("\n" + table + "\n", to: markdown) }
            return
        }
        if only == "maps" {
            for row in mapSelectionRows() { print(row) }
            return
        }
        if only == "libspatialindex" {
            for workload in [country, resort] {
                let best = sweepSpatialIndex(workload)
                print(String(format: "%@: best %@ at %.0f ops/s", workload.name, best.settings.description, best.opsPerSecond))
            }
            return
        }
        if let only {
            guard let workload = [country, resort].first(where: { $0.name == only }) else {
                throw ValidationError("--only must be country, resort, roaming, maps, fences or libspatialindex, got '\(only)'")
            }
            let cell = only == "country" ? countryCell : resortCell
            if slots { timeAlone(GondolaGridIndex(cellMetres: cell), on: workload) } else { timeAlone(GondolaIndex(cellMetres: cell), on: workload) }
            return
        }
        var rows: [String] = ["| workload | implementation | operations | ops/s | median µs | p99 µs |", "| --- | --- | --- | --- | --- | --- |"]

        let bytesPerPoint = memoryPerPoint(country)
        var sweepRows = [
            "| workload | best libspatialindex configuration | its ops/s in the sweep | worst ops/s (configuration) |", "| --- | --- | --- | --- |",
        ]
        var countryRates: [String: Double] = [:]
        var resortRates: [String: Double] = [:]
        for workload in [country, resort] {
            let cell = workload.name == "country" ? countryCell : resortCell
            var results: [String: Measurement] = [:]
            let best = sweepSpatialIndex(workload)
            sweepRows.append(
                "| \(workload.name) | \(best.settings) | \(String(format: "%.0f", best.opsPerSecond)) | \(String(format: "%.0f", best.worstOpsPerSecond)) (\(best.worst)) |"
            )
            let sequence = workload.steps(operations)
            // GondolaGeo's `MovingPointIndex` (any hashable ids, a table from ids to slots), its grid keyed by
            // the workload's ids as slots (as `ProximityMap` keeps travellers), SQLite's R*Tree, libspatialindex.
            let contenders = [
                workload.contender(GondolaIndex(cellMetres: cell), operations: operations, steps: sequence),
                workload.contender(GondolaGridIndex(cellMetres: cell), operations: operations, steps: sequence),
                workload.contender(SQLiteRTreeIndex(capacity: workload.points), operations: operations / 10, steps: sequence),
                workload.contender(
                    SpatialIndexRTree(points: workload.positions(), settings: best.settings), operations: operations / 4, steps: sequence),
            ]
            let names = contenders.map(\.name)
            for (name, measurement) in zip(names, workload.measure(contenders, rounds: Self.rounds)) { results[name] = measurement }
            let checksums = Set(results.values.map(\.checksum))
            if checksums.count != 1 { print("warning: implementations disagree on the first queries: \(results.mapValues(\.checksum))") }
            for name in names {
                let result = results[name]!
                rows.append(
                    String(
                        format: "| %@ | %@ | %d | %.0f | %.2f | %.2f |", workload.name, name, result.operations, result.opsPerSecond,
                        result.medianMicros, result.p99Micros))
                if workload.name == "country" { countryRates[name] = result.opsPerSecond } else { resortRates[name] = result.opsPerSecond }
            }
            let gondola = results["gondola"]!.opsPerSecond
            let grid = results["gondola-grid"]!.opsPerSecond
            var ratios = [
                String(format: "gondola/sqlite %.1f×", gondola / results["sqlite-rtree"]!.opsPerSecond),
                String(format: "gondola-grid/sqlite %.1f×", grid / results["sqlite-rtree"]!.opsPerSecond),
                String(format: "gondola/libspatialindex %.1f×", gondola / results["libspatialindex"]!.opsPerSecond),
            ]
            let serverRows = try serverPeers(workload, gondolaChecksum: results["gondola"]!.checksum)
            for row in serverRows {
                rows.append(
                    String(
                        format: "| %@ | %@ | %d | %.0f | %@ | %@ |", workload.name, row.label, row.operations, row.opsPerSecond,
                        row.median.map { String(format: "%.2f", $0) } ?? "", row.p99.map { String(format: "%.2f", $0) } ?? ""))
                ratios.append(String(format: "gondola/%@ %.0f×", row.short, gondola / row.opsPerSecond))
            }
            rows.append("| \(workload.name) | ratios | | \(ratios.joined(separator: ", ")) | | |")
        }
        rows.append(String(format: "| country | gondola bytes per point (RSS delta) | %d | %.1f | | |", countryPoints, bytesPerPoint))
        let roaming = roamingThroughput()
        rows.append(String(format: "| roaming | 100,000 watchers of 500 m, frames every tick | %d | %.0f | | |", roaming.updates, roaming.perSecond))
        let fences = fenceLookups()
        rows.append(String(format: "| fences | 10,000 polygons, point lookups | %d | %.0f | | |", fences.lookups, fences.perSecond))
        rows += try FenceBenchmark(checks: fenceChecks, updates: fenceUpdates, postgres: postgres).run()
        rows += mapSelectionRows()

        let table =
            rows.joined(separator: "\n")
            + "\n\nlibspatialindex sweep (\(SpatialIndexSettings.sweep.count) configurations, \(sweepOperations) operations each; the table above uses the best):\n\n"
            + sweepRows.joined(separator: "\n")
        print(table)
        let summary = String(
            format: "geo: gondola %.0f, gondola-grid %.0f, sqlite-rtree %.0f, libspatialindex %.0f, bytes/point %.0f",
            countryRates["gondola"]!, countryRates["gondola-grid"]!, countryRates["sqlite-rtree"]!, countryRates["libspatialindex"]!, bytesPerPoint)
        let resortSummary = String(
            format: "geo-resort: gondola %.0f, gondola-grid %.0f, sqlite-rtree %.0f, libspatialindex %.0f",
            resortRates["gondola"]!, resortRates["gondola-grid"]!, resortRates["sqlite-rtree"]!, resortRates["libspatialindex"]!)
        if let markdown { append("\n" + table + "\n\n" + summary + "  \n" + resortSummary + "\n", to: markdown) }
        print(summary)
        print(resortSummary)
    }

    /// Appends `text` to the Markdown file at `path`.
    func append(_ text: String, to path: String) {
        guard let handle = FileHandle(forWritingAtPath: path) else { return }
        handle.seekToEndOfFile()
        handle.write(Data(text.utf8))
        handle.closeFile()
    }

    /// Times `index` alone on `workload` and prints its median and rate (`--only`).
    func timeAlone(_ index: some BenchmarkedIndex, on workload: Workload) {
        let result = workload.measure(index, operations: operations)
        print(String(format: "%@ %@: median %.2f µs, %.0f ops/s", workload.name, index.name, result.medianMicros, result.opsPerSecond))
    }

    /// One measured row of a server peer.
    struct PeerRow {
        let label: String
        let short: String
        let operations: Int
        let opsPerSecond: Double
        let median: Double?
        let p99: Double?
    }

    /// Redis and PostGIS, when their servers are given: one operation at a time with its round
    /// trip, Redis pipelined, and each server's own time per operation (Redis's command
    /// statistics, a PL/pgSQL loop in PostgreSQL).
    func serverPeers(_ workload: Workload, gondolaChecksum: Int) throws -> [PeerRow] {
        var rows: [PeerRow] = []
        let count = operations / 10
        if let redis {
            let parts = redis.split(separator: ":")
            guard parts.count == 2, let port = Int32(parts[1]) else { throw ValidationError("--redis must be host:port, got '\(redis)'") }
            let index = try RedisGeoIndex(host: String(parts[0]), port: port, points: workload.positions())
            try index.resetStatistics()
            let roundTrip = workload.measure(index, operations: count)
            let serverMicros = try index.serverMicroseconds() / Double(count)
            print("redis checksum \(roundTrip.checksum) (gondola \(gondolaChecksum))")
            let pipelined = try index.pipelined(workload.steps(count * 5), depth: 64, radius: workload.radius, limit: workload.limit)
            rows += [
                PeerRow(
                    label: "redis GEOADD + GEOSEARCH, one round trip each", short: "redis", operations: count,
                    opsPerSecond: roundTrip.opsPerSecond, median: roundTrip.medianMicros, p99: roundTrip.p99Micros),
                PeerRow(
                    label: "redis, 64 operations pipelined", short: "redis pipelined", operations: count * 5,
                    opsPerSecond: pipelined, median: nil, p99: nil),
                PeerRow(
                    label: "redis, server time only (commandstats, mean µs)", short: "redis server", operations: count,
                    opsPerSecond: 1e6 / serverMicros, median: serverMicros, p99: nil),
            ]
        }
        if let postgres {
            let index = try PostGISIndex(conninfo: postgres, points: workload.positions())
            let roundTrip = workload.measure(index, operations: count)
            let inside = try index.insideServer(workload.steps(count), radius: workload.radius, limit: workload.limit)
            print("postgis checksums \(roundTrip.checksum) / \(inside.checksum) (gondola \(gondolaChecksum))")
            rows += [
                PeerRow(
                    label: "postgis GiST, 2 prepared statements, round trips", short: "postgis", operations: count,
                    opsPerSecond: roundTrip.opsPerSecond, median: roundTrip.medianMicros, p99: roundTrip.p99Micros),
                PeerRow(
                    label: "postgis, inside the server (PL/pgSQL loop, mean µs)", short: "postgis server", operations: count,
                    opsPerSecond: Double(count) / inside.micros * 1e6, median: inside.micros / Double(count), p99: nil),
            ]
        }
        return rows
    }

    /// Runs every libspatialindex configuration of the sweep on `workload` and returns the fastest
    /// (and, for the record, the slowest).
    func sweepSpatialIndex(_ workload: Workload) -> (
        settings: SpatialIndexSettings, opsPerSecond: Double, worst: SpatialIndexSettings, worstOpsPerSecond: Double
    ) {
        let positions = workload.positions()
        var rates: [(SpatialIndexSettings, Double)] = []
        for settings in SpatialIndexSettings.sweep {
            let rate = workload.measure(SpatialIndexRTree(points: positions, settings: settings), operations: sweepOperations, quiet: true)
                .opsPerSecond
            print("\(workload.name) libspatialindex \(settings): \(String(format: "%.0f", rate)) ops/s")
            rates.append((settings, rate))
        }
        let sorted = rates.sorted { $0.1 > $1.1 }
        return (sorted[0].0, sorted[0].1, sorted[sorted.count - 1].0, sorted[sorted.count - 1].1)
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

    /// 100,000 travellers over 200 × 200 km, each watching 500 m (the nearest 50) with the
    /// product's engine: every tick a tenth of them move a few metres, then the watchers of
    /// the tick's phase (one of ten) get their frames. Counts updates and frame work together.
    func roamingThroughput() -> (updates: Int, perSecond: Double) {
        var random = SeededRandom(seed: 3)
        let workload = Workload(
            name: "roaming", center: GeoPoint(lat: 46, lon: 8), sideMetres: 200_000, points: 100_000, radius: 500, limit: .max, seed: 3)
        var positions = workload.positions()
        var map = ProximityMap(cellMetres: roamingCell, margin: 20, phases: 10)
        for (slot, point) in positions.enumerated() { map.update(Int32(slot), LivePosition(point: point, ts: 0), receivedAt: 0) }
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
                map.update(Int32(slot), LivePosition(point: positions[slot], ts: 0), receivedAt: Int64(tick))
            }
            events += map.nearbyFrame(phase: map.tick % map.phases) { _, _ in true }.reduce(0) { $0 + $1.events.count }
            map.endFrame()
        }
        let seconds = (ContinuousClock.now - start).seconds
        print("roaming: \(ticks * perTick) updates in \(ticks) ticks, \(events) events")
        return (ticks * perTick, Double(ticks * perTick) / seconds)
    }

    /// Map selection per position update with 1 and 50 resorts, as table rows (µs per update in the median column).
    func mapSelectionRows() -> [String] {
        [1, 50].map { resorts in
            let result = MapSelectionBenchmark(resorts: resorts, updates: max(operations, 100_000)).run()
            return String(
                format: "| maps | %d resort%@, map choice per position update (%d mountain) | %d | %.0f | %.3f | |", resorts,
                resorts == 1 ? "" : "s", result.mountain, result.updates, 1e6 / result.microsPerUpdate, result.microsPerUpdate)
        }
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
        GeoPoint(
            lat: point.lat + Double.random(in: -5...5, using: &random) / Geodesy.metresPerDegree,
            lon: point.lon + Double.random(in: -5...5, using: &random) / Geodesy.metresPerDegree / cos(point.lat * .pi / 180))
    }

    /// One operation: point `id` moves from `from` to `to`, then the query runs around `to`.
    struct Step {
        let id: Int
        let from: GeoPoint
        let to: GeoPoint
    }

    /// The seeded sequence of `count` operations every implementation runs.
    func steps(_ count: Int) -> [Step] {
        var positions = positions()
        var random = SeededRandom(seed: seed &+ 100)
        return (0..<count).map { _ in
            let id = Int.random(in: 0..<points, using: &random)
            let moved = Self.nudge(positions[id], using: &random)
            defer { positions[id] = moved }
            return Step(id: id, from: positions[id], to: moved)
        }
    }

    /// Loads the points, then times `operations` of (move one point, query around it).
    func measure(_ index: some BenchmarkedIndex, operations: Int, quiet: Bool = false) -> Measurement {
        let sequence = steps(operations)
        return measure([contender(index, operations: operations, steps: sequence)], rounds: 1, quiet: quiet)[0]
    }

    /// An index loaded with the points, ready to run `steps` (at least `operations` of them).
    func contender(_ index: some BenchmarkedIndex, operations: Int, steps: [Step]) -> Contender {
        var index = index
        for (id, point) in positions().enumerated() { index.insert(id, point) }
        let radius = radius
        let limit = limit
        return Contender(name: index.name, operations: operations) { share, timings, checksum in
            let clock = ContinuousClock()
            let start = clock.now
            for number in share {
                let step = steps[number]
                let began = clock.now
                index.move(step.id, from: step.from, to: step.to)
                let found = index.nearby(step.to, radius: radius, limit: limit)
                timings[number] = clock.now - began
                if number < 1000 { checksum += found.count }
            }
            return clock.now - start
        }
    }

    /// Times each contender's operations in `rounds` turns: every round, each runs the next share
    /// of its operations. A phase of the shared machine (a busy neighbour, a slower clock) then
    /// falls on all of them alike, and the ratios between them hold even when the machine's speed
    /// does not.
    func measure(_ contenders: [Contender], rounds: Int, quiet: Bool = false) -> [Measurement] {
        var timings = contenders.map { [Duration](repeating: .zero, count: $0.operations) }
        var totals = [Duration](repeating: .zero, count: contenders.count)
        var checksums = [Int](repeating: 0, count: contenders.count)
        for round in 0..<rounds {
            for (position, contender) in contenders.enumerated() {
                let count = contender.operations
                let share = (count * round / rounds)..<(count * (round + 1) / rounds)
                totals[position] += contender.run(share, &timings[position], &checksums[position])
            }
        }
        return contenders.indices.map { position in
            let operations = contenders[position].operations
            let total = totals[position].seconds
            if !quiet { print("\(name) \(contenders[position].name): \(operations) operations in \(String(format: "%.2f", total)) s") }
            timings[position].sort()
            return Measurement(
                operations: operations, opsPerSecond: Double(operations) / total,
                medianMicros: timings[position][operations / 2].seconds * 1e6,
                p99Micros: timings[position][operations * 99 / 100].seconds * 1e6,
                checksum: checksums[position])
        }
    }
}

/// An index loaded for a workload, with the loop that runs its steps (specialised for its type).
struct Contender {
    let name: String
    let operations: Int
    /// Runs the steps numbered `share`, writes each one's time into `timings` at its number, adds the
    /// result sizes of the first 1,000 steps to `checksum`, and returns the share's time together.
    let run: (_ share: Range<Int>, _ timings: inout [Duration], _ checksum: inout Int) -> Duration
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
