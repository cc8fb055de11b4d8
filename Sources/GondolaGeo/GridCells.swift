/// The cells of a uniform latitude/longitude grid: square cells of `cellMetres` of
/// latitude and the same angle in longitude, a whole number of columns round the
/// globe so cells wrap cleanly at ±180°, numbered `row * columns + column`. Shared by
/// the grids that keep something per cell (`PointGrid`, `ChangeGrid`), so a cell
/// means the same in both.
public struct GridCells: Sendable {
    /// Edge of a cell in metres (north–south).
    public let cellMetres: Double
    @usableFromInline let cellDegrees: Double
    @usableFromInline let columns: Int64
    /// Index of the northernmost row (latitude 90 falls in it).
    @usableFromInline let lastRow: Int64

    @inlinable public init(cellMetres: Double) {
        precondition(cellMetres > 0, "cellMetres must be positive")
        self.cellMetres = cellMetres
        let degrees = Geodesy.latitudeDegrees(metres: cellMetres)
        let columns = max(1, Int64((360 / degrees).rounded(.down)))
        self.columns = columns
        self.cellDegrees = 360 / Double(columns)
        self.lastRow = Int64((180 / cellDegrees).rounded(.up))
    }

    @inlinable func row(_ lat: Double) -> Int64 { min(max(0, Int64(((lat + 90) / cellDegrees).rounded(.down))), lastRow) }

    @inlinable func column(_ lon: Double) -> Int64 {
        min(max(0, Int64(((lon + 180) / cellDegrees).rounded(.down))), columns - 1)
    }

    /// The cell a position falls in.
    @inlinable func key(lat: Double, lon: Double) -> Int64 { row(lat) * columns + column(lon) }

    /// Latitude and longitude of a cell's south-west corner.
    @inlinable func corner(of cell: Int64) -> (Double, Double) {
        (Double(cell / columns) * cellDegrees - 90, Double(cell % columns) * cellDegrees - 180)
    }

    /// The cells a box covers: its rows, its columns east of an antimeridian crossing
    /// (or all of them), and the columns west of it when it crosses.
    @usableFromInline
    struct Ranges {
        @usableFromInline let rows: ClosedRange<Int64>
        @usableFromInline let columns: ClosedRange<Int64>
        @usableFromInline let wrapped: ClosedRange<Int64>?

        @inlinable init(rows: ClosedRange<Int64>, columns: ClosedRange<Int64>, wrapped: ClosedRange<Int64>?) {
            self.rows = rows
            self.columns = columns
            self.wrapped = wrapped
        }

        /// How many cells they are.
        @inlinable var count: Int64 { Int64(rows.count) * (Int64(columns.count) + Int64(wrapped?.count ?? 0)) }
    }

    /// The cells `box` covers.
    @inlinable func ranges(of box: BoundingBox) -> Ranges {
        let rows = row(max(-90, box.minLat))...row(min(90, box.maxLat))
        if box.crossesAntimeridian { return Ranges(rows: rows, columns: column(box.minLon)...(columns - 1), wrapped: 0...column(box.maxLon)) }
        return Ranges(rows: rows, columns: column(box.minLon)...column(box.maxLon), wrapped: nil)
    }

    /// Whether `cell` is among `ranges`.
    @inlinable func contains(_ ranges: Ranges, _ cell: Int64) -> Bool {
        let column = cell % columns
        return ranges.rows.contains(cell / columns) && (ranges.columns.contains(column) || ranges.wrapped?.contains(column) == true)
    }
}
