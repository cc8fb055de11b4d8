import Foundation
import GondolaGeo

/// Reads Overpass API JSON (`[out:json]`, with `out body` plus `>` for the nodes, or
/// `out geom` with positions inline): an `"elements"` array of nodes, ways and relations.
enum OverpassJSONReader {
    static func read(_ root: [String: Any]) throws(OSMImportError) -> OSMExtract {
        guard let elements = root["elements"] as? [Any] else { throw OSMImportError("Overpass JSON needs an \"elements\" array") }
        var extract = OSMExtract(format: "Overpass JSON")
        var nodes: [Int64: GeoPoint] = [:]
        var ways: [(id: Int64, nodes: [Int64], tags: [String: String], inline: [GeoPoint]?)] = []
        for (index, item) in elements.enumerated() {
            guard let element = item as? [String: Any], let type = element["type"] as? String,
                let id = (element["id"] as? NSNumber)?.int64Value
            else {
                throw OSMImportError("elements[\(index)] needs a \"type\" and a numeric \"id\"")
            }
            let tags = stringTags(element["tags"])
            switch type {
            case "node":
                guard let point = position(element), point.isValid else {
                    throw OSMImportError("elements[\(index)] (node \(id)) has no valid lat/lon")
                }
                var located = point
                located.alt = altitude(ofTag: tags["ele"])
                nodes[id] = located
                if !tags.isEmpty { extract.taggedNodes.append((id, tags, located)) }
            case "way":
                let refs = (element["nodes"] as? [NSNumber])?.map(\.int64Value) ?? []
                let inline = (element["geometry"] as? [Any])?.compactMap { ($0 as? [String: Any]).flatMap(position) }
                ways.append((id, refs, tags, inline))
            case "relation":
                var members: [OSMMember] = []
                for (memberIndex, entry) in ((element["members"] as? [Any]) ?? []).enumerated() {
                    guard let member = entry as? [String: Any], let kind = (member["type"] as? String).flatMap(OSMReference.Kind.init(rawValue:)),
                        let ref = (member["ref"] as? NSNumber)?.int64Value
                    else {
                        throw OSMImportError("elements[\(index)] (relation \(id)): members[\(memberIndex)] needs a type and a numeric ref")
                    }
                    members.append(OSMMember(reference: OSMReference(kind, ref), role: member["role"] as? String ?? ""))
                    // `out geom` gives a member way's positions inline, though the way is not an element.
                    if kind == .way, let inline = (member["geometry"] as? [Any])?.compactMap({ ($0 as? [String: Any]).flatMap(position) }),
                        inline.count >= 2, !ways.contains(where: { $0.id == ref })
                    {
                        ways.append((ref, [], [:], inline))
                    }
                }
                extract.relations.append(OSMRelation(id: id, tags: tags, members: members))
            default:
                continue
            }
        }
        extract.nodeCount = nodes.count
        for way in ways {
            if let inline = way.inline, inline.count >= 2, way.nodes.isEmpty || inline.count == way.nodes.count {
                extract.ways.append(OSMWay(id: OSMReference(.way, way.id), tags: way.tags, nodes: way.nodes, points: inline))
            } else {
                extract.addWay(id: way.id, nodes: way.nodes, tags: way.tags, from: nodes)
            }
        }
        return extract
    }

    static func position(_ object: [String: Any]) -> GeoPoint? {
        guard let lat = (object["lat"] as? NSNumber)?.doubleValue, let lon = (object["lon"] as? NSNumber)?.doubleValue else { return nil }
        return GeoPoint(lat: lat, lon: lon)
    }
}

/// Reads a GeoJSON FeatureCollection as Overpass turbo exports it: tags as the
/// feature's properties (or under `properties.tags`), the OSM id as `"id"` or `"@id"`
/// (`way/123`). Lines and closed ways become ways, points tagged nodes, and
/// relations arrive already assembled as polygons.
enum OSMGeoJSONReader {
    static func read(_ data: Data) throws(OSMImportError) -> OSMExtract {
        let features: [Feature]
        let members: [String: Any]
        do {
            (features, members) = try GeoJSON.features(from: data)
        } catch {
            throw OSMImportError("GeoJSON: \(error)")
        }
        let rawFeatures = members["features"] as? [Any] ?? []
        var extract = OSMExtract(format: "GeoJSON")
        for (index, feature) in features.enumerated() {
            let raw = rawFeatures[index] as? [String: Any] ?? [:]
            let properties = raw["properties"] as? [String: Any] ?? [:]
            var tags = properties["tags"] as? [String: Any] != nil ? stringTags(properties["tags"]) : feature.properties
            tags = tags.filter { !$0.key.hasPrefix("@") && $0.key != "id" }
            let reference = osmReference(raw["id"] ?? properties["@id"] ?? properties["id"]) ?? OSMReference(.way, -Int64(index + 1))
            switch feature.geometry {
            case let .point(point):
                var located = point
                if located.alt == nil { located.alt = altitude(ofTag: tags["ele"]) }
                extract.taggedNodes.append((reference.id, tags, located))
                extract.nodeCount += 1
            case let .lineString(points):
                extract.ways.append(OSMWay(id: reference, tags: tags, nodes: [], points: points))
            case let .polygon(polygon) where reference.kind == .way && polygon.rings.count == 1:
                extract.ways.append(OSMWay(id: reference, tags: tags, nodes: [], points: polygon.rings[0]))
            case .polygon, .multiPolygon:
                extract.areas.append((reference, tags, feature.geometry.polygons))
            }
        }
        return extract
    }

    /// `way/123`, `relation/5` or `node/7` as a reference.
    static func osmReference(_ value: Any?) -> OSMReference? {
        guard let text = value as? String else { return nil }
        let parts = text.split(separator: "/")
        guard parts.count == 2, let kind = OSMReference.Kind(rawValue: String(parts[0])), let id = Int64(parts[1]) else { return nil }
        return OSMReference(kind, id)
    }
}

/// Tags as strings (numbers written as text; other values left out).
func stringTags(_ value: Any?) -> [String: String] {
    var tags: [String: String] = [:]
    for (key, value) in (value as? [String: Any]) ?? [:] {
        switch value {
        case let text as String: tags[key] = text
        case let number as NSNumber: tags[key] = number.stringValue
        default: continue
        }
    }
    return tags
}

/// Reads an export in whichever format its first bytes show.
public enum OSMReader {
    /// OSM XML when the file starts with `<`, otherwise JSON: Overpass JSON (an
    /// `"elements"` array) or a GeoJSON FeatureCollection.
    public static func read(_ data: Data) throws(OSMImportError) -> OSMExtract {
        guard let first = data.first(where: { ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }) else {
            throw OSMImportError("the file is empty")
        }
        if first == UInt8(ascii: "<") { return try OSMXMLReader.read(data) }
        guard first == UInt8(ascii: "{") else {
            let start = String(decoding: data.prefix(16), as: UTF8.self).debugDescription
            throw OSMImportError("not OSM XML, Overpass JSON or GeoJSON: the file starts with \(start)")
        }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw OSMImportError("not valid JSON (\(error.localizedDescription)); is the file truncated?")
        }
        guard let root = object as? [String: Any] else { throw OSMImportError("expected a JSON object") }
        if root["elements"] != nil { return try OverpassJSONReader.read(root) }
        if root["type"] as? String == "FeatureCollection" { return try OSMGeoJSONReader.read(data) }
        throw OSMImportError("not an OSM export: expected Overpass JSON (an \"elements\" array) or a GeoJSON FeatureCollection")
    }
}
