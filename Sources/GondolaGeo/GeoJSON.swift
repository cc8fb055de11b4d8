import Foundation

/// Why a GeoJSON document could not be used, naming the feature and member.
public struct GeoJSONError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// The GeoJSON geometries Gondola reads.
public enum Geometry: Sendable, Equatable {
    case point(GeoPoint)
    case lineString([GeoPoint])
    case polygon(Polygon)
    case multiPolygon([Polygon])

    /// The polygons of a `Polygon` or `MultiPolygon`.
    public var polygons: [Polygon] {
        switch self {
        case let .polygon(polygon): return [polygon]
        case let .multiPolygon(polygons): return polygons
        default: return []
        }
    }
}

/// One GeoJSON feature: geometry and string-valued properties.
public struct Feature: Sendable, Equatable {
    public let geometry: Geometry
    public let properties: [String: String]
}

/// Reads GeoJSON `FeatureCollection`s (RFC 7946) with Foundation's JSON parser.
public enum GeoJSON {
    /// The features of a collection, plus its foreign top-level members as JSON objects.
    public static func features(from data: Data) throws(GeoJSONError) -> (features: [Feature], members: [String: Any]) {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw GeoJSONError("not valid JSON: \(error.localizedDescription)")
        }
        guard let root = object as? [String: Any], root["type"] as? String == "FeatureCollection" else {
            throw GeoJSONError("expected a FeatureCollection object")
        }
        guard let list = root["features"] as? [Any] else { throw GeoJSONError("FeatureCollection has no features array") }
        var features: [Feature] = []
        for (index, item) in list.enumerated() {
            guard let feature = item as? [String: Any], let geometry = feature["geometry"] as? [String: Any] else {
                throw GeoJSONError("features[\(index)] has no geometry object")
            }
            var properties: [String: String] = [:]
            for (key, value) in (feature["properties"] as? [String: Any]) ?? [:] {
                switch value {
                case let text as String: properties[key] = text
                case let number as NSNumber: properties[key] = number.stringValue
                default: continue
                }
            }
            features.append(Feature(geometry: try parse(geometry, path: "features[\(index)].geometry"), properties: properties))
        }
        return (features, root)
    }

    static func parse(_ geometry: [String: Any], path: String) throws(GeoJSONError) -> Geometry {
        let coordinates = geometry["coordinates"]
        switch geometry["type"] as? String {
        case "Point": return .point(try position(coordinates, path: "\(path).coordinates"))
        case "LineString":
            let line = try positions(coordinates, path: "\(path).coordinates")
            guard line.count >= 2 else { throw GeoJSONError("\(path): a LineString needs at least two positions") }
            return .lineString(line)
        case "Polygon": return .polygon(try polygon(coordinates, path: "\(path).coordinates"))
        case "MultiPolygon":
            guard let list = coordinates as? [Any] else { throw GeoJSONError("\(path).coordinates must be an array") }
            var polygons: [Polygon] = []
            for (index, item) in list.enumerated() { polygons.append(try polygon(item, path: "\(path).coordinates[\(index)]")) }
            return .multiPolygon(polygons)
        case let other: throw GeoJSONError("\(path).type '\(other ?? "missing")' is not Point, LineString, Polygon or MultiPolygon")
        }
    }

    static func position(_ value: Any?, path: String) throws(GeoJSONError) -> GeoPoint {
        guard let numbers = value as? [NSNumber], numbers.count >= 2 else {
            throw GeoJSONError("\(path) must be [longitude, latitude] or [longitude, latitude, altitude]")
        }
        let point = GeoPoint(lat: numbers[1].doubleValue, lon: numbers[0].doubleValue, alt: numbers.count > 2 ? numbers[2].doubleValue : nil)
        guard point.isValid else { throw GeoJSONError("\(path) is out of range: \(point)") }
        return point
    }

    static func positions(_ value: Any?, path: String) throws(GeoJSONError) -> [GeoPoint] {
        guard let list = value as? [Any] else { throw GeoJSONError("\(path) must be an array of positions") }
        var result: [GeoPoint] = []
        for (index, item) in list.enumerated() { result.append(try position(item, path: "\(path)[\(index)]")) }
        return result
    }

    static func polygon(_ value: Any?, path: String) throws(GeoJSONError) -> Polygon {
        guard let list = value as? [Any], !list.isEmpty else { throw GeoJSONError("\(path) must be an array of rings") }
        var rings: [[GeoPoint]] = []
        for (index, item) in list.enumerated() {
            let ring = try positions(item, path: "\(path)[\(index)]")
            guard ring.count >= 4 else { throw GeoJSONError("\(path)[\(index)]: a ring needs at least four positions") }
            rings.append(ring)
        }
        return Polygon(rings: rings)
    }
}
