import Foundation
import GondolaGeo

/// Why an OpenStreetMap export could not be read or imported, naming the file's
/// element or line where it can.
public struct OSMImportError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// An OpenStreetMap element reference as relations name their members.
public struct OSMReference: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable { case node, way, relation }
    public let kind: Kind
    public let id: Int64
    public init(_ kind: Kind, _ id: Int64) {
        self.kind = kind
        self.id = id
    }
    public var description: String { "\(kind.rawValue) \(id)" }
}

/// A way with its tags and, once resolved, its positions. `nodes` holds the node ids
/// when the source had them (OSM XML, Overpass JSON); a GeoJSON feature has none.
public struct OSMWay: Sendable {
    public let id: OSMReference
    public let tags: [String: String]
    public let nodes: [Int64]
    /// Positions in drawing order; an element whose nodes are missing from the file has none.
    public let points: [GeoPoint]

    /// Whether the way is a closed ring (first and last node the same).
    public var isClosed: Bool {
        if let first = nodes.first, nodes.count > 3 { return first == nodes.last }
        return points.count > 3 && points.first == points.last
    }
}

/// A relation member: what it refers to, its role, and the way when the file holds it.
public struct OSMMember: Sendable {
    public let reference: OSMReference
    public let role: String
}

/// A relation with its tags and members.
public struct OSMRelation: Sendable {
    public let id: Int64
    public let tags: [String: String]
    public let members: [OSMMember]
}

/// What an import reads from an export, whatever its format: ways with their
/// positions resolved, relations, and tagged nodes. Node positions carry the
/// altitude of an `ele` tag where the node has one.
public struct OSMExtract: Sendable {
    /// The format the file was read as (`OSM XML`, `Overpass JSON`, `GeoJSON`).
    public var format: String
    public var nodeCount = 0
    public var ways: [OSMWay] = []
    public var relations: [OSMRelation] = []
    /// Nodes with tags, as points (a station, a pylon, a peak).
    public var taggedNodes: [(id: Int64, tags: [String: String], point: GeoPoint)] = []
    /// Ways already assembled into polygons by the source (GeoJSON `Polygon`/`MultiPolygon`).
    public var areas: [(id: OSMReference, tags: [String: String], polygons: [Polygon])] = []
    /// Way ids whose node references did not all resolve, with the first missing node.
    public var incompleteWays: [Int64: Int64] = [:]

    public init(format: String) { self.format = format }

    /// Adds a way with its positions looked up in `positions`; a way with a node the
    /// file lacks gets none, and is listed in `incompleteWays`.
    mutating func addWay(id: Int64, nodes: [Int64], tags: [String: String], from positions: [Int64: GeoPoint]) {
        var points: [GeoPoint] = []
        points.reserveCapacity(nodes.count)
        for ref in nodes {
            guard let point = positions[ref] else {
                incompleteWays[id] = ref
                points = []
                break
            }
            points.append(point)
        }
        ways.append(OSMWay(id: OSMReference(.way, id), tags: tags, nodes: nodes, points: points))
    }

    /// The ways by id.
    func waysByID() -> [Int64: OSMWay] {
        var byID: [Int64: OSMWay] = [:]
        for way in ways where way.id.kind == .way { byID[way.id.id] = way }
        return byID
    }
}

/// The altitude an `ele` tag gives, in metres (`2890`, `2890 m`, `9482 ft`, `9482'`); nil otherwise.
func altitude(ofTag value: String?) -> Double? {
    guard var text = value?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
    var factor = 1.0
    for (suffix, scale) in [("ft", 0.3048), ("'", 0.3048), ("m", 1.0)] where text.hasSuffix(suffix) {
        text = String(text.dropLast(suffix.count)).trimmingCharacters(in: .whitespaces)
        factor = scale
        break
    }
    guard let number = Double(text.replacingOccurrences(of: ",", with: ".")), number.isFinite, abs(number) < 9000 else { return nil }
    return number * factor
}
