import Foundation

/// A lift or piste of a resort, oriented the way it is travelled (pistes down, lifts up).
public struct SkiWay: Sendable, Equatable {
    public enum Kind: String, Sendable { case lift, piste, walk }
    public let kind: Kind
    public let name: String
    public let difficulty: Difficulty?
    /// OSM `aerialway` value of a lift (gondola, chair_lift, drag_lift, ...).
    public let aerialway: String?
    /// Positions with altitude where known.
    public let coordinates: [GeoPoint]

    public init(kind: Kind, name: String, difficulty: Difficulty?, aerialway: String?, coordinates: [GeoPoint]) {
        precondition(coordinates.count >= 2, "a way needs two positions")
        self.kind = kind
        self.name = name
        self.difficulty = difficulty
        self.aerialway = aerialway
        self.coordinates = coordinates
    }

    /// The same way between two of its vertices.
    func piece(_ range: ClosedRange<Int>) -> SkiWay {
        SkiWay(kind: kind, name: name, difficulty: difficulty, aerialway: aerialway, coordinates: Array(coordinates[range]))
    }

    /// The point `distance` metres along the way from its start (its end when beyond).
    public func point(atDistance distance: Double) -> GeoPoint {
        var left = distance
        for (a, b) in zip(coordinates, coordinates.dropFirst()) {
            let length = Geodesy.distance(a, b)
            if left <= length, length > 0 {
                let t = left / length
                let alt = a.alt.flatMap { altA in b.alt.map { altA + ($0 - altA) * t } }
                return GeoPoint(lat: a.lat + (b.lat - a.lat) * t, lon: a.lon + (b.lon - a.lon) * t, alt: alt)
            }
            left -= length
        }
        return coordinates.last!
    }

    public var length: Double {
        zip(coordinates, coordinates.dropFirst()).reduce(0) { $0 + Geodesy.distance($1.0, $1.1) }
    }
}

/// A piste drawn as an area (`area=yes`): shown on the map, not routed.
public struct PisteArea: Sendable, Equatable {
    public let name: String
    public let difficulty: Difficulty?
    public let polygon: Polygon

    public init(name: String, difficulty: Difficulty?, polygon: Polygon) {
        self.name = name
        self.difficulty = difficulty
        self.polygon = polygon
    }
}
