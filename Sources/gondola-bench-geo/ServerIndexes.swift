import CHiredis
import CLibPQ
import Foundation
import GondolaGeo

/// Redis's geo set through hiredis over loopback TCP: GEOADD moves a point, GEOSEARCH
/// BYRADIUS (ascending, with COUNT when the workload has a limit) queries around it. Both
/// commands of an operation go out together, so an operation costs one round trip.
/// The benchmark uses Redis's C client, hiredis: no maintained Swift client is available here.
struct RedisGeoIndex: BenchmarkedIndex {
    let name = "redis"
    private let connection: Connection
    private static let key = "points"

    /// Connects, empties the key and loads `points` (ids are their positions) in pipelined GEOADDs.
    init(host: String, port: Int32, points: [GeoPoint]) throws {
        guard let context = redisConnect(host, port), context.pointee.err == 0 else {
            throw BenchmarkError("redis: cannot connect to \(host):\(port)")
        }
        connection = Connection(context: context)
        try connection.call(["DEL", Self.key])
        for start in stride(from: 0, to: points.count, by: 10_000) {
            let batch = start..<min(start + 10_000, points.count)
            for chunk in stride(from: batch.lowerBound, to: batch.upperBound, by: 500) {
                var arguments = ["GEOADD", Self.key]
                for id in chunk..<min(chunk + 500, batch.upperBound) {
                    arguments += [String(points[id].lon), String(points[id].lat), String(id)]
                }
                connection.append(arguments)
            }
            for _ in stride(from: batch.lowerBound, to: batch.upperBound, by: 500) { try connection.reply { _ in } }
        }
    }

    /// The points are in the set from the load.
    mutating func insert(_ id: Int, _ point: GeoPoint) {}

    mutating func move(_ id: Int, from old: GeoPoint, to new: GeoPoint) {
        connection.append(["GEOADD", Self.key, String(new.lon), String(new.lat), String(id)])
    }

    mutating func nearby(_ center: GeoPoint, radius: Double, limit: Int) -> [Int] {
        connection.append(Self.search(center, radius: radius, limit: limit))
        do {
            try connection.reply { _ in }
            var found: [Int] = []
            try connection.reply { reply in found = Self.members(reply) }
            return found
        } catch {
            fatalError("\(error)")
        }
    }

    /// Runs `steps` with `depth` operations in flight (two commands each) and returns operations per second.
    func pipelined(_ steps: [Workload.Step], depth: Int, radius: Double, limit: Int) throws -> Double {
        let start = ContinuousClock.now
        for batch in stride(from: 0, to: steps.count, by: depth) {
            let slice = steps[batch..<min(batch + depth, steps.count)]
            for step in slice {
                connection.append(["GEOADD", Self.key, String(step.to.lon), String(step.to.lat), String(step.id)])
                connection.append(Self.search(step.to, radius: radius, limit: limit))
            }
            for _ in 0..<(slice.count * 2) { try connection.reply { _ in } }
        }
        return Double(steps.count) / (ContinuousClock.now - start).seconds
    }

    /// Clears Redis's per-command statistics.
    func resetStatistics() throws { try connection.call(["CONFIG", "RESETSTAT"]) }

    /// Microseconds Redis spent executing GEOADD and GEOSEARCH since the last reset, from INFO commandstats.
    func serverMicroseconds() throws -> Double {
        var text = ""
        try connection.call(["INFO", "commandstats"]) { reply in text = String(cString: reply.pointee.str) }
        return text.split(whereSeparator: \.isNewline).reduce(0) { total, line in
            guard line.hasPrefix("cmdstat_geoadd:") || line.hasPrefix("cmdstat_geosearch:") else { return total }
            let usec = line.split(separator: ",").first { $0.hasPrefix("usec=") }
            return total + (Double(usec?.dropFirst(5) ?? "") ?? 0)
        }
    }

    private static func search(_ center: GeoPoint, radius: Double, limit: Int) -> [String] {
        var arguments = ["GEOSEARCH", key, "FROMLONLAT", String(center.lon), String(center.lat), "BYRADIUS", String(radius), "m", "ASC"]
        if limit < .max { arguments += ["COUNT", String(limit)] }
        return arguments
    }

    private static func members(_ reply: UnsafeMutablePointer<redisReply>) -> [Int] {
        (0..<reply.pointee.elements).compactMap { index in
            reply.pointee.element[index].flatMap { Int(String(cString: $0.pointee.str)) }
        }
    }

    /// Owns the hiredis context and frees it with the last copy of the index.
    private final class Connection {
        let context: UnsafeMutablePointer<redisContext>
        init(context: UnsafeMutablePointer<redisContext>) { self.context = context }
        deinit { redisFree(context) }

        /// Queues a command in hiredis's output buffer (sent with the next reply read).
        func append(_ arguments: [String]) {
            var pointers = arguments.map { UnsafePointer(strdup($0)) }
            defer { pointers.forEach { free(UnsafeMutableRawPointer(mutating: $0)) } }
            let lengths = arguments.map { $0.utf8.count }
            pointers.withUnsafeMutableBufferPointer { argv in
                _ = redisAppendCommandArgv(context, Int32(arguments.count), argv.baseAddress, lengths)
            }
        }

        /// Reads the next reply and hands it to `body`; an error reply throws.
        func reply(_ body: (UnsafeMutablePointer<redisReply>) -> Void) throws {
            var raw: UnsafeMutableRawPointer?
            guard redisGetReply(context, &raw) == REDIS_OK, let reply = raw?.assumingMemoryBound(to: redisReply.self) else {
                let reason = withUnsafeBytes(of: context.pointee.errstr) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                throw BenchmarkError("redis: connection failed: \(reason)")
            }
            defer { freeReplyObject(raw) }
            if reply.pointee.type == REDIS_REPLY_ERROR { throw BenchmarkError("redis: \(String(cString: reply.pointee.str))") }
            body(reply)
        }

        func call(_ arguments: [String], _ body: (UnsafeMutablePointer<redisReply>) -> Void = { _ in }) throws {
            append(arguments)
            try reply(body)
        }
    }
}

/// PostGIS through libpq: an unlogged table of points in UTM zone 32N (metres, so
/// ST_DWithin and the GiST index work in metres), moved and queried with two prepared
/// statements — an UPDATE, then ST_DWithin ordered by `<->` with the workload's limit.
struct PostGISIndex: BenchmarkedIndex {
    let name = "postgis"
    private let connection: LibPQConnection
    private static let point = "ST_Transform(ST_SetSRID(ST_MakePoint($1, $2), 4326), 32632)"

    /// Connects with `conninfo`, creates the table with `points` (ids are their positions),
    /// builds its GiST index and prepares the statements.
    init(conninfo: String, points: [GeoPoint]) throws {
        guard let raw = PQconnectdb(conninfo), PQstatus(raw) == CONNECTION_OK else {
            throw BenchmarkError("postgis: cannot connect with '\(conninfo)'")
        }
        connection = LibPQConnection(raw)
        try connection.execute(
            """
            SET client_min_messages = warning; SET synchronous_commit = off;
            CREATE EXTENSION IF NOT EXISTS postgis;
            DROP TABLE IF EXISTS points; DROP TABLE IF EXISTS seeds;
            CREATE UNLOGGED TABLE seeds (id integer, lon float8, lat float8);
            COPY seeds FROM STDIN
            """, copying: points.enumerated().map { "\($0.offset)\t\($0.element.lon)\t\($0.element.lat)\n" })
        try connection.execute(
            """
            CREATE UNLOGGED TABLE points (id integer PRIMARY KEY, geom geometry(Point, 32632) NOT NULL);
            INSERT INTO points SELECT id, ST_Transform(ST_SetSRID(ST_MakePoint(lon, lat), 4326), 32632) FROM seeds;
            DROP TABLE seeds;
            CREATE INDEX points_geom ON points USING gist (geom);
            """)
        try connection.execute("VACUUM ANALYZE points")
        try connection.prepare("move", "UPDATE points SET geom = ST_Transform(ST_SetSRID(ST_MakePoint($2, $3), 4326), 32632) WHERE id = $1")
        try connection.prepare("near", "SELECT id FROM points WHERE ST_DWithin(geom, \(Self.point), $3) ORDER BY geom <-> \(Self.point) LIMIT $4")
        try connection.execute(
            """
            CREATE OR REPLACE FUNCTION run_steps(ids integer[], lons float8[], lats float8[], radius float8, most bigint,
                                                 OUT micros float8, OUT checksum bigint) LANGUAGE plpgsql AS $$
            DECLARE started timestamptz := clock_timestamp(); found bigint; here geometry;
            BEGIN
              checksum := 0;
              FOR i IN 1 .. array_length(ids, 1) LOOP
                here := ST_Transform(ST_SetSRID(ST_MakePoint(lons[i], lats[i]), 4326), 32632);
                UPDATE points SET geom = here WHERE id = ids[i];
                SELECT count(*) INTO found FROM (SELECT id FROM points WHERE ST_DWithin(geom, here, radius) ORDER BY geom <-> here LIMIT most) AS near;
                IF i <= 1000 THEN checksum := checksum + found; END IF;
              END LOOP;
              micros := extract(epoch FROM clock_timestamp() - started) * 1e6;
            END $$
            """)
    }

    /// The points are in the table from the load.
    mutating func insert(_ id: Int, _ point: GeoPoint) {}

    mutating func move(_ id: Int, from old: GeoPoint, to new: GeoPoint) {
        connection.run("move", [String(id), String(new.lon), String(new.lat)]) { _ in }
    }

    mutating func nearby(_ center: GeoPoint, radius: Double, limit: Int) -> [Int] {
        var found: [Int] = []
        connection.run("near", [String(center.lon), String(center.lat), String(radius), String(limit)]) { result in
            found = (0..<PQntuples(result)).compactMap { Int(String(cString: PQgetvalue(result, $0, 0))) }
        }
        return found
    }

    /// Runs `steps` inside the server (a PL/pgSQL loop of the same statements): the time
    /// PostGIS spends without the round trip, and the result checksum of the first 1,000.
    func insideServer(_ steps: [Workload.Step], radius: Double, limit: Int) throws -> (micros: Double, checksum: Int) {
        func array(_ values: [String]) -> String { "{" + values.joined(separator: ",") + "}" }
        var answer = (0.0, 0)
        try connection.query(
            "SELECT micros, checksum FROM run_steps($1, $2, $3, $4, $5)",
            [
                array(steps.map { String($0.id) }), array(steps.map { String($0.to.lon) }), array(steps.map { String($0.to.lat) }),
                String(radius), String(limit),
            ]
        ) { result in
            answer = (Double(String(cString: PQgetvalue(result, 0, 0))) ?? 0, Int(String(cString: PQgetvalue(result, 0, 1))) ?? 0)
        }
        return answer
    }
}

/// A libpq connection for the benchmark's PostGIS work, closed with its last reference.
final class LibPQConnection {
    let raw: OpaquePointer
    init(_ raw: OpaquePointer) { self.raw = raw }
    deinit { PQfinish(raw) }

    private var lastError: String { String(cString: PQerrorMessage(raw)) }

    /// Runs `sql`; when it ends in COPY FROM STDIN, sends `rows` as the copied data.
    func execute(_ sql: String, copying rows: [String] = []) throws {
        var result = PQexec(raw, sql)
        while let current = result {
            defer { PQclear(current) }
            switch PQresultStatus(current) {
            case PGRES_COMMAND_OK, PGRES_TUPLES_OK: break
            case PGRES_COPY_IN:
                for start in stride(from: 0, to: rows.count, by: 10_000) {
                    let chunk = rows[start..<min(start + 10_000, rows.count)].joined()
                    guard PQputCopyData(raw, chunk, Int32(chunk.utf8.count)) == 1 else {
                        throw BenchmarkError("postgis: COPY failed: \(lastError)")
                    }
                }
                guard PQputCopyEnd(raw, nil) == 1 else { throw BenchmarkError("postgis: COPY failed: \(lastError)") }
            default: throw BenchmarkError("postgis: \(lastError)")
            }
            result = PQgetResult(raw)
        }
    }

    func prepare(_ name: String, _ sql: String) throws {
        let result = PQprepare(raw, name, sql, 0, nil)
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else { throw BenchmarkError("postgis: preparing \(name): \(lastError)") }
    }

    /// Executes prepared statement `name` with text parameters.
    func run(_ name: String, _ parameters: [String], _ body: (OpaquePointer) -> Void) {
        let result = withTextParameters(parameters) { PQexecPrepared(raw, name, Int32(parameters.count), $0, nil, nil, 0) }
        defer { PQclear(result) }
        guard let result, [PGRES_COMMAND_OK, PGRES_TUPLES_OK].contains(PQresultStatus(result)) else {
            fatalError("postgis: \(name): \(lastError)")
        }
        body(result)
    }

    /// Runs one parameterised query.
    func query(_ sql: String, _ parameters: [String], _ body: (OpaquePointer) -> Void) throws {
        let result = withTextParameters(parameters) { PQexecParams(raw, sql, Int32(parameters.count), nil, $0, nil, nil, 0) }
        defer { PQclear(result) }
        guard let result, PQresultStatus(result) == PGRES_TUPLES_OK else { throw BenchmarkError("postgis: \(lastError)") }
        body(result)
    }

    private func withTextParameters<T>(_ parameters: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T) -> T {
        let pointers = parameters.map { UnsafePointer(strdup($0)) }
        defer { pointers.forEach { free(UnsafeMutableRawPointer(mutating: $0)) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}

/// A benchmark setup failure with its reason.
struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
