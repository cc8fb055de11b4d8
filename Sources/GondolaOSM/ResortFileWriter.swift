import Foundation
import GondolaGeo
import GondolaProtocol

/// Writes an imported resort as the GeoJSON the hub loads: the `resort` member
/// (id, name, difficulty colours, attribution), the boundary, the base, lifts,
/// pistes and piste areas, positions as `[lon, lat]` or `[lon, lat, altitude]`
/// rounded to 7 decimals (about 1 cm) and altitudes to 0.1 m.
enum ResortFileWriter {
    static func document(_ resort: ImportedResort) -> Data {
        var features: [JSON] = []
        for polygon in resort.boundary {
            features.append(feature(["landuse": "winter_sports", "name": .string(resort.name)], polygon: polygon))
        }
        features.append([
            "type": "Feature", "properties": ["gondola:base": "yes", "name": .string(resort.name)],
            "geometry": ["type": "Point", "coordinates": position(resort.base)],
        ])
        for lift in resort.lifts {
            features.append(line(["aerialway": .string(lift.aerialway ?? "yes"), "name": .string(lift.name)], lift.coordinates))
        }
        for piste in resort.pistes {
            features.append(line(properties(of: piste.difficulty, name: piste.name), piste.coordinates))
        }
        for area in resort.areas {
            var members = properties(of: area.difficulty, name: area.name)
            members.append(("area", "yes"))
            features.append(feature(.object(members), polygon: area.polygon))
        }
        let document: JSON = [
            "type": "FeatureCollection",
            "resort": [
                "id": .string(resort.id), "name": .string(resort.name), "difficulty_colors": .string(resort.colors.scheme),
                "attribution": .string(ImportedResort.attribution),
            ],
            "features": .array(features),
        ]
        return Data(document.bytes)
    }

    static func properties(of difficulty: Difficulty?, name: String) -> [(key: String, value: JSON)] {
        var members: [(key: String, value: JSON)] = [("piste:type", "downhill"), ("name", .string(name))]
        if let difficulty { members.append(("piste:difficulty", .string(difficulty.rawValue))) }
        return members
    }

    static func line(_ properties: JSON, _ points: [GeoPoint]) -> JSON {
        ["type": "Feature", "properties": properties, "geometry": ["type": "LineString", "coordinates": .array(points.map(position))]]
    }

    static func line(_ properties: [(key: String, value: JSON)], _ points: [GeoPoint]) -> JSON {
        line(.object(properties), points)
    }

    static func feature(_ properties: JSON, polygon: Polygon) -> JSON {
        [
            "type": "Feature", "properties": properties,
            "geometry": ["type": "Polygon", "coordinates": .array(polygon.rings.map { .array($0.map(position)) })],
        ]
    }

    static func position(_ point: GeoPoint) -> JSON {
        var members: [JSON] = [.double(rounded(point.lon, 1e7)), .double(rounded(point.lat, 1e7))]
        if let alt = point.alt { members.append(.double(rounded(alt, 10))) }
        return .array(members)
    }

    static func rounded(_ value: Double, _ scale: Double) -> Double { (value * scale).rounded() / scale }
}
