import Foundation

/// Why an ESRI ASCII Grid could not be read, with the line (1-based) and the field.
public struct ElevationGridError: Error, Sendable, Equatable, CustomStringConvertible {
    public let line: Int
    public let field: String
    public let message: String
    public var description: String { "line \(line), \(field): \(message)" }
}

/// A digital elevation model on a regular latitude/longitude grid, read from the
/// ESRI ASCII Grid format (`.asc`), with bilinear interpolation between cell centres.
///
/// Header keys (case-insensitive, one per line): `ncols`, `nrows`, `xllcorner` or
/// `xllcenter`, `yllcorner` or `yllcenter`, `cellsize` (or `dx` and `dy` for
/// non-square cells), optional `nodata_value`. Then `nrows` rows of `ncols`
/// values, the northernmost row first. x is longitude, y latitude, in degrees.
public struct ElevationGrid: Sendable {
    public let columns: Int
    public let rows: Int
    /// Longitude and latitude of the centre of the south-west cell.
    public let westCenter: Double
    public let southCenter: Double
    public let dx: Double
    public let dy: Double
    public let noData: Double?
    /// Values row by row, north to south.
    private let values: [Float]

    public init(columns: Int, rows: Int, westCenter: Double, southCenter: Double, dx: Double, dy: Double, noData: Double?, values: [Float]) {
        precondition(values.count == columns * rows, "values must have columns × rows entries")
        self.columns = columns
        self.rows = rows
        self.westCenter = westCenter
        self.southCenter = southCenter
        self.dx = dx
        self.dy = dy
        self.noData = noData
        self.values = values
    }

    /// Parses the text of an `.asc` file (read as bytes: a grid has tens of thousands of
    /// numbers, and every hub start reads one per resort).
    public init(asciiGrid text: String) throws(ElevationGridError) {
        let bytes = Array(text.utf8)
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated()
            .map { ($0.offset + 1, $0.element) }
            .filter { !$0.1.allSatisfy(Self.isBlank) }
        var header: [String: (line: Int, value: Double, text: String)] = [:]
        var cursor = 0
        let known: Set<String> = ["ncols", "nrows", "xllcorner", "xllcenter", "yllcorner", "yllcenter", "cellsize", "dx", "dy", "nodata_value"]
        while cursor < lines.count {
            let (number, line) = lines[cursor]
            let parts = Self.fields(of: line)
            guard let first = parts.first, Double(first) == nil else { break }
            let key = first.lowercased()
            guard known.contains(key) else {
                throw ElevationGridError(line: number, field: first, message: "unknown header key")
            }
            guard parts.count == 2 else {
                throw ElevationGridError(line: number, field: key, message: "expected one value, found \(parts.count - 1)")
            }
            guard let value = Double(parts[1]), value.isFinite else {
                throw ElevationGridError(line: number, field: key, message: "'\(parts[1])' is not a number")
            }
            header[key] = (number, value, parts[1])
            cursor += 1
        }
        let headerEnd = cursor < lines.count ? lines[cursor].0 : (lines.last?.0 ?? 0) + 1
        func required(_ key: String) throws(ElevationGridError) -> (line: Int, value: Double, text: String) {
            guard let entry = header[key] else { throw ElevationGridError(line: headerEnd, field: key, message: "missing header key") }
            return entry
        }
        func count(_ key: String) throws(ElevationGridError) -> Int {
            let entry = try required(key)
            guard let value = Int(entry.text), value > 0 else {
                throw ElevationGridError(line: entry.line, field: key, message: "must be a positive whole number, got '\(entry.text)'")
            }
            return value
        }
        let columns = try count("ncols")
        let rows = try count("nrows")
        let dx: Double
        let dy: Double
        if let cell = header["cellsize"] {
            dx = cell.value
            dy = cell.value
        } else {
            dx = try required("dx").value
            dy = try required("dy").value
        }
        for (key, value) in [("cellsize/dx", dx), ("cellsize/dy", dy)] where value <= 0 {
            throw ElevationGridError(line: header["cellsize"]?.line ?? headerEnd, field: key, message: "must be positive")
        }
        let west: Double
        if let corner = header["xllcorner"] { west = corner.value + dx / 2 } else { west = try required("xllcenter").value }
        let south: Double
        if let corner = header["yllcorner"] { south = corner.value + dy / 2 } else { south = try required("yllcenter").value }
        let noData = header["nodata_value"]?.value

        var values: [Float] = []
        values.reserveCapacity(columns * rows)
        var rowNumber = 0
        while cursor < lines.count {
            let (number, line) = lines[cursor]
            cursor += 1
            rowNumber += 1
            guard rowNumber <= rows else {
                throw ElevationGridError(line: number, field: "data", message: "more than nrows = \(rows) rows")
            }
            let rowValues = Self.numbers(in: line)
            guard rowValues.count == columns else {
                throw ElevationGridError(
                    line: number, field: "row \(rowNumber)", message: "expected ncols = \(columns) values, found \(rowValues.count)")
            }
            for (index, value) in rowValues.enumerated() {
                guard let value, value.isFinite else {
                    let field = Self.fields(of: line)[index]
                    throw ElevationGridError(line: number, field: "row \(rowNumber), column \(index + 1)", message: "'\(field)' is not a number")
                }
                values.append(value)
            }
        }
        guard rowNumber == rows else {
            throw ElevationGridError(line: (lines.last?.0 ?? 0) + 1, field: "data", message: "expected nrows = \(rows) rows, found \(rowNumber)")
        }
        self.init(columns: columns, rows: rows, westCenter: west, southCenter: south, dx: dx, dy: dy, noData: noData, values: values)
    }

    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")
    }

    /// The fields of one line, split at spaces, tabs and carriage returns.
    private static func fields(of line: ArraySlice<UInt8>) -> [String] {
        line.split(whereSeparator: isBlank).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The numbers of one data row, nil for a field that is not one. C's `strtof` reads
    /// them in place (a grid row holds hundreds), accepting what `Float(String)` accepts.
    private static func numbers(in line: ArraySlice<UInt8>) -> [Float?] {
        var text = line.map { CChar(bitPattern: $0) }
        text.append(0)
        return text.withUnsafeMutableBufferPointer { buffer -> [Float?] in
            guard let start = buffer.baseAddress else { return [] }
            var numbers: [Float?] = []
            var offset = 0
            let end = buffer.count - 1
            while true {
                while offset < end, isBlank(UInt8(bitPattern: start[offset])) { offset += 1 }
                guard offset < end else { return numbers }
                var stop: UnsafeMutablePointer<CChar>?
                let value = strtof(start + offset, &stop)
                let read = stop.map { $0 - (start + offset) } ?? 0
                var fieldEnd = offset
                while fieldEnd < end, !isBlank(UInt8(bitPattern: start[fieldEnd])) { fieldEnd += 1 }
                numbers.append(read > 0 && offset + read == fieldEnd ? value : nil)
                offset = fieldEnd
            }
        }
    }

    /// Reads an `.asc` file.
    public init(contentsOf url: URL) throws {
        try self.init(asciiGrid: String(contentsOf: url, encoding: .utf8))
    }

    /// The grid's extent (outer edges of the cells).
    public var bounds: BoundingBox {
        BoundingBox(
            minLat: southCenter - dy / 2, minLon: westCenter - dx / 2,
            maxLat: southCenter + (Double(rows) - 0.5) * dy, maxLon: westCenter + (Double(columns) - 0.5) * dx)
    }

    /// The value of a cell, counted from the south-west; nil for no-data.
    public func value(column: Int, rowFromSouth: Int) -> Double? {
        let value = Double(values[(rows - 1 - rowFromSouth) * columns + column])
        if let noData, value == noData { return nil }
        return value
    }

    /// Elevation at `point` by bilinear interpolation of the four surrounding cell
    /// centres (clamped at the grid's edge); nil outside the grid or next to no-data.
    public func elevation(at point: GeoPoint) -> Double? {
        guard bounds.contains(point) else { return nil }
        let x = min(max((point.lon - westCenter) / dx, 0), Double(columns - 1))
        let y = min(max((point.lat - southCenter) / dy, 0), Double(rows - 1))
        let x0 = Int(x.rounded(.down))
        let y0 = Int(y.rounded(.down))
        let x1 = min(x0 + 1, columns - 1)
        let y1 = min(y0 + 1, rows - 1)
        let fx = x - Double(x0)
        let fy = y - Double(y0)
        guard let a = value(column: x0, rowFromSouth: y0), let b = value(column: x1, rowFromSouth: y0),
            let c = value(column: x0, rowFromSouth: y1), let d = value(column: x1, rowFromSouth: y1)
        else { return nil }
        let south = a + (b - a) * fx
        let north = c + (d - c) * fx
        return south + (north - south) * fy
    }
}
