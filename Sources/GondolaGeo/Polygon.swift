import Foundation

/// A polygon with holes, as GeoJSON's `Polygon`: the first ring is the outline,
/// the others are holes. Rings are lists of positions; closing the ring (repeating
/// the first position) is optional. Edges are straight in latitude/longitude.
/// A polygon may cross the antimeridian: its longitudes are unwrapped relative
/// to the first vertex.
public struct Polygon: Sendable, Hashable {
    public let rings: [[GeoPoint]]
    public let bounds: BoundingBox
    /// Longitudes unwrapped so that no edge jumps by more than 180°.
    private let unwrapped: [[(lat: Double, lon: Double)]]
    private let referenceLon: Double

    public init(rings: [[GeoPoint]]) {
        self.rings = rings
        let reference = rings.first?.first?.lon ?? 0
        referenceLon = reference
        unwrapped = rings.map { ring in
            ring.map { point in (lat: point.lat, lon: reference + Geodesy.longitudeDelta(reference, point.lon)) }
        }
        let all = unwrapped.flatMap { $0 }
        let minLon = all.map(\.lon).min() ?? 0
        let maxLon = all.map(\.lon).max() ?? 0
        bounds = BoundingBox(
            minLat: all.map(\.lat).min() ?? 0, minLon: Geodesy.normalizedLongitude(minLon),
            maxLat: all.map(\.lat).max() ?? 0, maxLon: Geodesy.normalizedLongitude(maxLon))
    }

    public init(outline: [GeoPoint], holes: [[GeoPoint]] = []) {
        self.init(rings: [outline] + holes)
    }

    public static func == (lhs: Polygon, rhs: Polygon) -> Bool { lhs.rings == rhs.rings }
    public func hash(into hasher: inout Hasher) { hasher.combine(rings) }

    /// Whether `point` is inside the outline and outside every hole (even-odd rule).
    public func contains(_ point: GeoPoint) -> Bool {
        guard bounds.contains(point) else { return false }
        let lon = referenceLon + Geodesy.longitudeDelta(referenceLon, point.lon)
        var inside = false
        for ring in unwrapped where ring.count >= 3 {
            var j = ring.count - 1
            for i in 0..<ring.count {
                let a = ring[i]
                let b = ring[j]
                if (a.lat > point.lat) != (b.lat > point.lat) {
                    let crossLon = a.lon + (point.lat - a.lat) / (b.lat - a.lat) * (b.lon - a.lon)
                    if lon < crossLon { inside.toggle() }
                }
                j = i
            }
        }
        return inside
    }

    /// Distance in metres from `point` to the nearest edge of any ring (local projection).
    public func distanceToBoundary(_ point: GeoPoint) -> Double {
        var best = Double.infinity
        let scale = cos(point.lat * .pi / 180)
        for ring in rings where ring.count >= 2 {
            for i in 0..<ring.count {
                let a = ring[i]
                let b = ring[(i + 1) % ring.count]
                best = min(best, Self.segmentDistance(point, a, b, scale: scale))
            }
        }
        return best
    }

    /// Distance from `p` to segment `ab` in metres, in the equirectangular projection around `p`.
    static func segmentDistance(_ p: GeoPoint, _ a: GeoPoint, _ b: GeoPoint, scale: Double) -> Double {
        let ax = Geodesy.longitudeDelta(p.lon, a.lon) * scale
        let ay = a.lat - p.lat
        let bx = Geodesy.longitudeDelta(p.lon, b.lon) * scale
        let by = b.lat - p.lat
        let dx = bx - ax
        let dy = by - ay
        let lengthSquared = dx * dx + dy * dy
        let t = lengthSquared > 0 ? max(0, min(1, -(ax * dx + ay * dy) / lengthSquared)) : 0
        let x = ax + t * dx
        let y = ay + t * dy
        return (x * x + y * y).squareRoot() * Geodesy.metresPerDegree
    }
}

extension BoundingBox {
    /// The box around every polygon (at least one) of a list.
    public init(covering polygons: [Polygon]) {
        precondition(!polygons.isEmpty, "a box needs at least one polygon")
        self = polygons.dropFirst().reduce(polygons[0].bounds) { box, polygon in
            BoundingBox(
                minLat: min(box.minLat, polygon.bounds.minLat), minLon: min(box.minLon, polygon.bounds.minLon),
                maxLat: max(box.maxLat, polygon.bounds.maxLat), maxLon: max(box.maxLon, polygon.bounds.maxLon))
        }
    }
}
