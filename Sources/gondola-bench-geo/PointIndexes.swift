import CSQLite
import CSpatialIndex
import GondolaGeo

/// The operations the benchmark runs on every moving-point index it compares.
protocol BenchmarkedIndex {
    var name: String { get }
    mutating func insert(_ id: Int, _ point: GeoPoint)
    mutating func move(_ id: Int, from old: GeoPoint, to new: GeoPoint)
    /// Ids within `radius` metres of `center`, nearest first, at most `limit`.
    mutating func nearby(_ center: GeoPoint, radius: Double, limit: Int) -> [Int]
}

/// GondolaGeo's grid index.
struct GondolaIndex: BenchmarkedIndex {
    var index: MovingPointIndex<Int>
    let name = "gondola"
    init(cellMetres: Double) { index = MovingPointIndex(cellMetres: cellMetres) }
    mutating func insert(_ id: Int, _ point: GeoPoint) { index.upsert(id, at: point, timestamp: 0) }
    mutating func move(_ id: Int, from old: GeoPoint, to new: GeoPoint) { index.upsert(id, at: new, timestamp: 1) }
    mutating func nearby(_ center: GeoPoint, radius: Double, limit: Int) -> [Int] {
        index.nearby(center, radius: radius, limit: limit).map(\.id)
    }
}

/// GondolaGeo's grid alone, the workload's integer ids as its slots: the structure `ProximityMap`
/// keeps travellers in, numbered densely, with no table from ids to slots.
struct GondolaGridIndex: BenchmarkedIndex {
    var grid: PointGrid
    let name = "gondola-grid"
    init(cellMetres: Double) { grid = PointGrid(cellMetres: cellMetres) }
    mutating func insert(_ id: Int, _ point: GeoPoint) { grid.place(Int32(id), at: point) }
    mutating func move(_ id: Int, from old: GeoPoint, to new: GeoPoint) { grid.place(Int32(id), at: new) }
    mutating func nearby(_ center: GeoPoint, radius: Double, limit: Int) -> [Int] {
        grid.nearby(center, radius: radius, limit: limit) { _, _ in true }.map { Int($0.slot) }
    }
}

/// Candidates from a bounding-box query refined by exact distance, the way a
/// box-only index is used for radius queries. It uses GondolaGeo's distance probe,
/// so the comparison measures the indexes, not the distance formula.
struct Refiner {
    var positions: [GeoPoint]
    func refine(_ candidates: some Sequence<Int>, center: GeoPoint, radius: Double, limit: Int) -> [Int] {
        let probe = DistanceProbe(center, radius: radius)
        var found: [(Double, Int)] = []
        for id in candidates {
            let point = positions[id]
            guard probe.mayBeWithin(lat: point.lat, lon: point.lon) else { continue }
            let distance = probe.distance(lat: point.lat, lon: point.lon)
            if distance <= radius { found.append((distance, id)) }
        }
        found.sort { $0.0 < $1.0 }
        return found.prefix(limit).map(\.1)
    }
}

/// SQLite's R*Tree module (the system libsqlite3), in memory, with prepared statements.
struct SQLiteRTreeIndex: BenchmarkedIndex {
    let name = "sqlite-rtree"
    private var db: OpaquePointer?
    private var insertStatement: OpaquePointer?
    private var updateStatement: OpaquePointer?
    private var queryStatement: OpaquePointer?
    private var refiner: Refiner

    init(capacity: Int) {
        refiner = Refiner(positions: Array(repeating: GeoPoint(lat: 0, lon: 0), count: capacity))
        sqlite3_open(":memory:", &db)
        sqlite3_exec(db, "CREATE VIRTUAL TABLE points USING rtree(id, min_lon, max_lon, min_lat, max_lat); BEGIN", nil, nil, nil)
        sqlite3_prepare_v2(db, "INSERT INTO points VALUES (?1, ?2, ?2, ?3, ?3)", -1, &insertStatement, nil)
        sqlite3_prepare_v2(db, "UPDATE points SET min_lon = ?2, max_lon = ?2, min_lat = ?3, max_lat = ?3 WHERE id = ?1", -1, &updateStatement, nil)
        sqlite3_prepare_v2(
            db, "SELECT id FROM points WHERE min_lon <= ?2 AND max_lon >= ?1 AND min_lat <= ?4 AND max_lat >= ?3", -1, &queryStatement, nil)
    }

    private func run(_ statement: OpaquePointer?, _ id: Int, _ point: GeoPoint) {
        sqlite3_bind_int64(statement, 1, Int64(id))
        sqlite3_bind_double(statement, 2, point.lon)
        sqlite3_bind_double(statement, 3, point.lat)
        sqlite3_step(statement)
        sqlite3_reset(statement)
    }

    mutating func insert(_ id: Int, _ point: GeoPoint) {
        refiner.positions[id] = point
        run(insertStatement, id, point)
    }

    mutating func move(_ id: Int, from old: GeoPoint, to new: GeoPoint) {
        refiner.positions[id] = new
        run(updateStatement, id, new)
    }

    mutating func nearby(_ center: GeoPoint, radius: Double, limit: Int) -> [Int] {
        let box = BoundingBox(around: center, radius: radius)
        sqlite3_bind_double(queryStatement, 1, box.minLon)
        sqlite3_bind_double(queryStatement, 2, box.maxLon)
        sqlite3_bind_double(queryStatement, 3, box.minLat)
        sqlite3_bind_double(queryStatement, 4, box.maxLat)
        var candidates: [Int] = []
        while sqlite3_step(queryStatement) == SQLITE_ROW {
            candidates.append(Int(sqlite3_column_int64(queryStatement, 0)))
        }
        sqlite3_reset(queryStatement)
        return refiner.refine(candidates, center: center, radius: radius, limit: limit)
    }
}

/// One libspatialindex R-tree configuration: split variant, node capacities and fill factor.
struct SpatialIndexSettings: CustomStringConvertible {
    var variant: RTIndexVariant
    var indexCapacity: UInt32
    var leafCapacity: UInt32
    var fillFactor: Double

    var description: String {
        let name =
            switch variant {
            case RT_Linear: "linear"
            case RT_Quadratic: "quadratic"
            default: "R*"
            }
        return "\(name), index \(indexCapacity), leaf \(leafCapacity), fill \(fillFactor)"
    }

    /// The grid the benchmark sweeps: every variant, node capacities from 8 to 100, two fill
    /// factors (linear and quadratic take them below 0.5, R* up to 1).
    static let sweep: [SpatialIndexSettings] = [RT_Linear, RT_Quadratic, RT_Star].flatMap { variant in
        [(8, 8), (16, 16), (32, 32), (64, 64), (100, 100), (32, 8), (32, 16), (64, 16)].flatMap { index, leaf in
            (variant == RT_Star ? [0.4, 0.7] : [0.3, 0.45]).map {
                SpatialIndexSettings(variant: variant, indexCapacity: UInt32(index), leafCapacity: UInt32(leaf), fillFactor: $0)
            }
        }
    }
}

/// The points a bulk load reads through libspatialindex's C callback, which takes no context.
nonisolated(unsafe) private var bulkLoadPoints: [GeoPoint] = []
nonisolated(unsafe) private var bulkLoadNext = 0
nonisolated(unsafe) private var bulkLoadCoordinates = UnsafeMutablePointer<Double>.allocate(capacity: 2)

/// libspatialindex's C API: an in-memory R-tree bulk-loaded from the seeded points
/// (sort-tile-recursive packing at the fill factor); a move is a delete and an insert.
struct SpatialIndexRTree: BenchmarkedIndex {
    let name = "libspatialindex"
    private let tree: Tree
    private var index: IndexH { tree.handle }
    private var refiner: Refiner

    /// Builds the tree over `points` (ids are their positions) with `settings`.
    init(points: [GeoPoint], settings: SpatialIndexSettings) {
        refiner = Refiner(positions: points)
        let properties = IndexProperty_Create()
        IndexProperty_SetIndexType(properties, RT_RTree)
        IndexProperty_SetIndexStorage(properties, RT_Memory)
        IndexProperty_SetDimension(properties, 2)
        IndexProperty_SetIndexVariant(properties, settings.variant)
        IndexProperty_SetIndexCapacity(properties, settings.indexCapacity)
        IndexProperty_SetLeafCapacity(properties, settings.leafCapacity)
        IndexProperty_SetFillFactor(properties, settings.fillFactor)
        bulkLoadPoints = points
        bulkLoadNext = 0
        let handle = Index_CreateWithStream(properties) { id, low, high, dimension, data, length in
            // The callback answers 0 while it gives a point and anything else at the end.
            guard bulkLoadNext < bulkLoadPoints.count else { return 1 }
            let point = bulkLoadPoints[bulkLoadNext]
            bulkLoadCoordinates[0] = point.lon
            bulkLoadCoordinates[1] = point.lat
            id?.pointee = Int64(bulkLoadNext)
            low?.pointee = bulkLoadCoordinates
            high?.pointee = bulkLoadCoordinates
            dimension?.pointee = 2
            data?.pointee = nil
            length?.pointee = 0
            bulkLoadNext += 1
            return 0
        }
        IndexProperty_Destroy(properties)
        bulkLoadPoints = []
        guard let handle else { fatalError("libspatialindex refused \(settings): \(String(cString: Error_GetLastErrorMsg()))") }
        tree = Tree(handle: handle)
    }

    /// Owns the C index and destroys it with the last copy of the struct.
    private final class Tree {
        let handle: IndexH
        init(handle: IndexH) { self.handle = handle }
        deinit { Index_Destroy(handle) }
    }

    /// The points are in the tree from the bulk load.
    mutating func insert(_ id: Int, _ point: GeoPoint) {}

    mutating func move(_ id: Int, from old: GeoPoint, to new: GeoPoint) {
        var coordinates = [old.lon, old.lat]
        coordinates.withUnsafeMutableBufferPointer { buffer in
            _ = Index_DeleteData(index, Int64(id), buffer.baseAddress, buffer.baseAddress, 2)
        }
        refiner.positions[id] = new
        coordinates = [new.lon, new.lat]
        coordinates.withUnsafeMutableBufferPointer { buffer in
            _ = Index_InsertData(index, Int64(id), buffer.baseAddress, buffer.baseAddress, 2, nil, 0)
        }
    }

    mutating func nearby(_ center: GeoPoint, radius: Double, limit: Int) -> [Int] {
        let box = BoundingBox(around: center, radius: radius)
        var low = [box.minLon, box.minLat]
        var high = [box.maxLon, box.maxLat]
        var items: UnsafeMutablePointer<Int64>?
        var count: UInt64 = 0
        _ = Index_Intersects_id(index, &low, &high, 2, &items, &count)
        defer { Index_Free(items) }
        let candidates = UnsafeBufferPointer(start: items, count: Int(count)).lazy.map { Int($0) }
        return refiner.refine(candidates, center: center, radius: radius, limit: limit)
    }
}
