import CLibPQ
import CSQLite
import Foundation
import GondolaGeo

/// Fences on a 20 × 20 km region (a ski area and its valley): what judging a traveller's
/// position against 0, 100 and 10,000 fences adds to a position update (`FenceWatch`,
/// beside the live map's own update, `ProximityMap.update`, in the same run), and
/// point-in-fence checks among 10,000 fences (polygons and 200 m circles) by GondolaGeo's
/// `GeofenceIndex`, SQLite's R*Tree with the polygon test in Swift, and PostGIS inside the
/// server (`ST_Contains` on a GiST index for polygons, `ST_DWithin` for circles, in a
/// PL/pgSQL loop: no round trip counted). Seeded: the same fences and points every run.
struct FenceBenchmark {
    static let center = GeoPoint(lat: 45.3, lon: 6.6)
    static let regionMetres = 10_000.0
    static let travellers = 1_000
    static let circleRadius = 200.0

    let checks: Int
    let updates: Int
    let postgres: String?

    /// A fence of the workload: a star polygon of 50 to 500 m, or a 200 m circle (one in five).
    enum Shape {
        case polygon([GeoPoint])
        case circle(GeoPoint)
    }

    static func fences(_ count: Int, seed: UInt64) -> [Shape] {
        var random = SeededRandom(seed: seed)
        return (0..<count).map { index in
            let middle = random.point(near: center, metres: regionMetres)
            if index % 5 == 4 { return .circle(middle) }
            let corners = Int.random(in: 5...10, using: &random)
            let radius = Double.random(in: 50...500, using: &random)
            var ring = (0..<corners).map { step in
                Geodesy.destination(
                    from: middle, bearing: Double(step) * 360 / Double(corners), metres: radius * .random(in: 0.5...1, using: &random))
            }
            ring.append(ring[0])
            return .polygon(ring)
        }
    }

    static func area(_ shape: Shape) -> Geofence<Int>.Area {
        switch shape {
        case let .polygon(ring): .polygons([Polygon(outline: ring)])
        case let .circle(center): .circle(center: center, radius: circleRadius)
        }
    }

    /// The table's rows.
    func run() throws -> [String] {
        var rows: [String] = []
        let baseline = liveMapUpdateNanoseconds()
        rows.append(
            String(
                format: "| fences | a position on the live map alone (`ProximityMap.update`) | %d | %.0f | %.3f | |", updates, 1e9 / baseline,
                baseline / 1000))
        for count in [0, 100, 10_000] {
            let judged = watchUpdateNanoseconds(fences: count)
            rows.append(
                String(
                    format:
                        "| fences | judging a position against %d fences in the region (`FenceWatch.update`; %.1f× the live map's) | %d | %.0f | %.3f | |",
                    count, judged / baseline, updates, 1e9 / judged, judged / 1000))
        }
        let shapes = Self.fences(10_000, seed: 7)
        var random = SeededRandom(seed: 8)
        let points = (0..<checks).map { _ in random.point(near: Self.center, metres: Self.regionMetres) }
        let gondola = indexChecks(shapes, points)
        rows.append(
            String(
                format: "| fences | 10,000 fences, which contain a point: `GeofenceIndex` | %d | %.0f | %.3f | |", checks, 1e9 / gondola.nanoseconds,
                gondola.nanoseconds / 1000))
        let sqlite = sqliteChecks(shapes, Array(points.prefix(checks / 10)))
        rows.append(
            String(
                format: "| fences | the same: SQLite R*Tree + polygon test | %d | %.0f | %.3f | |", checks / 10, 1e9 / sqlite.nanoseconds,
                sqlite.nanoseconds / 1000))
        var ratios = [String(format: "gondola/sqlite %.1f×", sqlite.nanoseconds / gondola.nanoseconds)]
        print("fences: hits gondola \(gondola.hits) of \(checks) checks, sqlite \(sqlite.hits) of \(checks / 10)")
        if let postgres {
            let postgis = try postgisChecks(shapes, Array(points.prefix(checks / 10)), conninfo: postgres)
            rows.append(
                String(
                    format: "| fences | the same: PostGIS in-server (`ST_Contains` + `ST_DWithin`, GiST) | %d | %.0f | %.3f | |", checks / 10,
                    1e9 / postgis.nanoseconds, postgis.nanoseconds / 1000))
            ratios.append(String(format: "gondola/postgis-in-server %.0f×", postgis.nanoseconds / gondola.nanoseconds))
            print("fences: hits postgis \(postgis.hits) of \(checks / 10) (UTM metres)")
        }
        rows.append("| fences | ratios (per check) | | \(ratios.joined(separator: ", ")) | | |")
        return rows
    }

    /// Walks that move each traveller up to 5 m per step, as positions arrive.
    private func walk() -> [(traveller: Int, point: GeoPoint)] {
        var random = SeededRandom(seed: 9)
        var positions = (0..<Self.travellers).map { _ in random.point(near: Self.center, metres: Self.regionMetres) }
        return (0..<updates).map { step in
            let traveller = step % Self.travellers
            positions[traveller] = Geodesy.destination(
                from: positions[traveller], bearing: .random(in: 0..<360, using: &random), metres: .random(in: 0...5, using: &random))
            return (traveller, positions[traveller])
        }
    }

    /// Nanoseconds per `ProximityMap.update` of the walk.
    private func liveMapUpdateNanoseconds() -> Double {
        var map = ProximityMap()
        let steps = walk()
        let start = ContinuousClock.now
        for (index, step) in steps.enumerated() {
            map.update(Int32(step.traveller), LivePosition(point: step.point, ts: Int64(index)), receivedAt: Int64(index))
        }
        return (ContinuousClock.now - start).seconds * 1e9 / Double(steps.count)
    }

    /// Nanoseconds per `FenceWatch.update` of the walk with `fences` fences (enter and exit).
    private func watchUpdateNanoseconds(fences count: Int) -> Double {
        var watch = FenceWatch<Int, Int>()
        for (id, shape) in Self.fences(count, seed: 7).enumerated() { watch.add(FenceRule(id: id, shape: .fixed(Self.area(shape)))) }
        let steps = walk()
        var events = 0
        let start = ContinuousClock.now
        for (index, step) in steps.enumerated() { events += watch.update(step.traveller, to: step.point, at: Int64(index)).count }
        let nanoseconds = (ContinuousClock.now - start).seconds * 1e9 / Double(steps.count)
        print("fences: \(count) fences, \(steps.count) updates, \(events) events")
        return nanoseconds
    }

    private func indexChecks(_ shapes: [Shape], _ points: [GeoPoint]) -> (nanoseconds: Double, hits: Int) {
        // The cell `FenceWatch` uses.
        var index = GeofenceIndex<Int>(cellDegrees: 0.0025)
        for (id, shape) in shapes.enumerated() {
            switch Self.area(shape) {
            case let .polygons(polygons): index.insert(Geofence(id: id, polygons: polygons))
            case let .circle(center, radius): index.insert(Geofence(id: id, center: center, radius: radius))
            }
        }
        var hits = 0
        let start = ContinuousClock.now
        for point in points { hits += index.containing(point).count }
        return ((ContinuousClock.now - start).seconds * 1e9 / Double(points.count), hits)
    }

    /// SQLite's R*Tree holds each fence's box; the candidates it answers are tested in Swift.
    private func sqliteChecks(_ shapes: [Shape], _ points: [GeoPoint]) -> (nanoseconds: Double, hits: Int) {
        var db: OpaquePointer?
        sqlite3_open(":memory:", &db)
        defer { sqlite3_close(db) }
        sqlite3_exec(db, "CREATE VIRTUAL TABLE fences USING rtree(id, min_lon, max_lon, min_lat, max_lat)", nil, nil, nil)
        var insert: OpaquePointer?
        sqlite3_prepare_v2(db, "INSERT INTO fences VALUES (?1, ?2, ?3, ?4, ?5)", -1, &insert, nil)
        let fences = shapes.enumerated().map { id, shape -> Geofence<Int> in
            switch Self.area(shape) {
            case let .polygons(polygons): Geofence(id: id, polygons: polygons)
            case let .circle(center, radius): Geofence(id: id, center: center, radius: radius)
            }
        }
        sqlite3_exec(db, "BEGIN", nil, nil, nil)
        for fence in fences {
            sqlite3_bind_int64(insert, 1, Int64(fence.id))
            for (column, value) in [fence.bounds.minLon, fence.bounds.maxLon, fence.bounds.minLat, fence.bounds.maxLat].enumerated() {
                sqlite3_bind_double(insert, Int32(column + 2), value)
            }
            sqlite3_step(insert)
            sqlite3_reset(insert)
        }
        sqlite3_exec(db, "COMMIT", nil, nil, nil)
        sqlite3_finalize(insert)
        var query: OpaquePointer?
        sqlite3_prepare_v2(db, "SELECT id FROM fences WHERE min_lon <= ?1 AND max_lon >= ?1 AND min_lat <= ?2 AND max_lat >= ?2", -1, &query, nil)
        defer { sqlite3_finalize(query) }
        var hits = 0
        let start = ContinuousClock.now
        for point in points {
            sqlite3_bind_double(query, 1, point.lon)
            sqlite3_bind_double(query, 2, point.lat)
            while sqlite3_step(query) == SQLITE_ROW {
                if fences[Int(sqlite3_column_int64(query, 0))].contains(point) { hits += 1 }
            }
            sqlite3_reset(query)
        }
        return ((ContinuousClock.now - start).seconds * 1e9 / Double(points.count), hits)
    }

    /// PostGIS: polygons and circle centres in UTM zone 32N metres with GiST indexes; a
    /// PL/pgSQL loop counts, for each point, the polygons that contain it and the centres
    /// within 200 m, and the server's own clock times it.
    private func postgisChecks(_ shapes: [Shape], _ points: [GeoPoint], conninfo: String) throws -> (nanoseconds: Double, hits: Int) {
        guard let raw = PQconnectdb(conninfo), PQstatus(raw) == CONNECTION_OK else { throw BenchmarkError("postgis: cannot connect") }
        let connection = LibPQConnection(raw)
        func wkt(_ ring: [GeoPoint]) -> String { "POLYGON((" + ring.map { "\($0.lon) \($0.lat)" }.joined(separator: ",") + "))" }
        var polygons: [String] = []
        var circles: [String] = []
        for (id, shape) in shapes.enumerated() {
            switch shape {
            case let .polygon(ring): polygons.append("\(id)\tSRID=4326;\(wkt(ring))\n")
            case let .circle(center): circles.append("\(id)\tSRID=4326;POINT(\(center.lon) \(center.lat))\n")
            }
        }
        try connection.execute(
            """
            SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS postgis;
            DROP TABLE IF EXISTS fence_polygons; DROP TABLE IF EXISTS fence_circles; DROP TABLE IF EXISTS fence_seeds;
            CREATE UNLOGGED TABLE fence_seeds (id integer, geom geometry);
            COPY fence_seeds FROM STDIN
            """, copying: polygons + circles)
        try connection.execute(
            """
            CREATE UNLOGGED TABLE fence_polygons AS
              SELECT id, ST_Transform(geom, 32632) AS geom FROM fence_seeds WHERE GeometryType(geom) = 'POLYGON';
            CREATE UNLOGGED TABLE fence_circles AS
              SELECT id, ST_Transform(geom, 32632) AS geom FROM fence_seeds WHERE GeometryType(geom) = 'POINT';
            DROP TABLE fence_seeds;
            CREATE INDEX fence_polygons_geom ON fence_polygons USING gist (geom);
            CREATE INDEX fence_circles_geom ON fence_circles USING gist (geom);
            """)
        try connection.execute("VACUUM ANALYZE fence_polygons")
        try connection.execute("VACUUM ANALYZE fence_circles")
        try connection.execute(
            """
            CREATE OR REPLACE FUNCTION fence_checks(lons float8[], lats float8[], radius float8, OUT micros float8, OUT hits bigint)
            LANGUAGE plpgsql AS $$
            DECLARE started timestamptz := clock_timestamp(); here geometry; found bigint;
            BEGIN
              hits := 0;
              FOR i IN 1 .. array_length(lons, 1) LOOP
                here := ST_Transform(ST_SetSRID(ST_MakePoint(lons[i], lats[i]), 4326), 32632);
                SELECT count(*) INTO found FROM fence_polygons WHERE ST_Contains(geom, here);
                hits := hits + found;
                SELECT count(*) INTO found FROM fence_circles WHERE ST_DWithin(geom, here, radius);
                hits := hits + found;
              END LOOP;
              micros := extract(epoch FROM clock_timestamp() - started) * 1e6;
            END $$
            """)
        func array(_ values: [Double]) -> String { "{" + values.map { String($0) }.joined(separator: ",") + "}" }
        var answer = (0.0, 0)
        try connection.query(
            "SELECT micros, hits FROM fence_checks($1, $2, $3)", [array(points.map(\.lon)), array(points.map(\.lat)), String(Self.circleRadius)]
        ) { result in
            answer = (Double(String(cString: PQgetvalue(result, 0, 0))) ?? 0, Int(String(cString: PQgetvalue(result, 0, 1))) ?? 0)
        }
        return (answer.0 * 1000 / Double(points.count), answer.1)
    }
}
