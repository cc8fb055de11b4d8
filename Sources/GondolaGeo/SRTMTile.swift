import Foundation

/// Why an SRTM `.hgt` tile could not be read.
public struct SRTMTileError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}

extension ElevationGrid {
    /// Reads an SRTM height tile (`N39W106.hgt`): a square of 1201 × 1201 (3
    /// arc-second) or 3601 × 3601 (1 arc-second) big-endian 16-bit heights in metres,
    /// north row first, whose south-west sample lies on the degree the file's name
    /// gives; -32768 marks a void.
    public init(hgt data: Data, named fileName: String) throws(SRTMTileError) {
        guard let corner = Self.tileCorner(fileName) else {
            throw SRTMTileError(message: "\(fileName): an SRTM tile is named by its south-west corner, like N39W106.hgt")
        }
        let side: Int
        switch data.count {
        case 1201 * 1201 * 2: side = 1201
        case 3601 * 3601 * 2: side = 3601
        default:
            throw SRTMTileError(
                message: "\(fileName): \(data.count) bytes is not an SRTM tile (1201² or 3601² 16-bit samples: 2884802 or 25934402 bytes)")
        }
        var values = [Float](repeating: 0, count: side * side)
        data.withUnsafeBytes { raw in
            for index in 0..<(side * side) {
                let high = UInt16(raw[2 * index])
                let low = UInt16(raw[2 * index + 1])
                values[index] = Float(Int16(bitPattern: high << 8 | low))
            }
        }
        let step = 1 / Double(side - 1)
        self.init(
            columns: side, rows: side, westCenter: corner.lon, southCenter: corner.lat, dx: step, dy: step,
            noData: -32768, values: values)
    }

    /// The south-west corner a tile name gives (`N39W106` → 39, -106).
    static func tileCorner(_ fileName: String) -> (lat: Double, lon: Double)? {
        let name = URL(fileURLWithPath: fileName).deletingPathExtension().lastPathComponent.uppercased()
        let characters = Array(name)
        guard characters.count == 7, let ns = characters.first, ns == "N" || ns == "S", characters[3] == "E" || characters[3] == "W",
            let lat = Double(String(characters[1...2])), let lon = Double(String(characters[4...6])),
            lat <= 90, lon <= 180
        else { return nil }
        return (ns == "N" ? lat : -lat, characters[3] == "E" ? lon : -lon)
    }

    /// The part of the grid covering `box`, one cell beyond it on each side (nil when they do not meet).
    public func cropped(to box: BoundingBox) -> ElevationGrid? {
        let first = max(0, Int(((box.minLon - westCenter) / dx).rounded(.down)) - 1)
        let last = min(columns - 1, Int(((box.maxLon - westCenter) / dx).rounded(.up)) + 1)
        let south = max(0, Int(((box.minLat - southCenter) / dy).rounded(.down)) - 1)
        let north = min(rows - 1, Int(((box.maxLat - southCenter) / dy).rounded(.up)) + 1)
        guard first <= last, south <= north else { return nil }
        var values: [Float] = []
        values.reserveCapacity((last - first + 1) * (north - south + 1))
        for row in stride(from: north, through: south, by: -1) {
            for column in first...last { values.append(Float(value(column: column, rowFromSouth: row) ?? noData ?? -9999)) }
        }
        return ElevationGrid(
            columns: last - first + 1, rows: north - south + 1,
            westCenter: westCenter + Double(first) * dx, southCenter: southCenter + Double(south) * dy,
            dx: dx, dy: dy, noData: noData ?? -9999, values: values)
    }

    /// The grid as ESRI ASCII Grid text (what `init(asciiGrid:)` reads), heights to 0.1 m.
    public func asciiGrid() -> String {
        var text = "ncols \(columns)\nnrows \(rows)\nxllcenter \(westCenter)\nyllcenter \(southCenter)\ndx \(dx)\ndy \(dy)\n"
        text += "NODATA_value \(noData.map { String(Int($0)) } ?? "-9999")\n"
        for row in stride(from: rows - 1, through: 0, by: -1) {
            var line: [String] = []
            line.reserveCapacity(columns)
            for column in 0..<columns {
                let value = value(column: column, rowFromSouth: row) ?? noData ?? -9999
                line.append(String(format: "%.1f", value))
            }
            text += line.joined(separator: " ") + "\n"
        }
        return text
    }
}
