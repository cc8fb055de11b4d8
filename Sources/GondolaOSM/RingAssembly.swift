import Foundation
import GondolaGeo

/// Joins the ways of a multipolygon into closed rings, as OpenStreetMap draws
/// large areas: several open ways, each ending where the next begins (in either
/// direction). Ways are matched by their end node ids, or by their end positions
/// when the source has no ids.
enum RingAssembly {
    /// The rings the ways close into; throws naming the way whose end is left open.
    static func rings(of ways: [OSMWay], relation: String) throws(OSMImportError) -> [[GeoPoint]] {
        struct End: Hashable {
            let node: Int64
            let lat: Double
            let lon: Double
        }
        func ends(_ way: OSMWay) -> (first: End, last: End) {
            let useIDs = !way.nodes.isEmpty
            let first = way.points.first!
            let last = way.points.last!
            return (
                End(node: useIDs ? way.nodes.first! : 0, lat: useIDs ? 0 : first.lat, lon: useIDs ? 0 : first.lon),
                End(node: useIDs ? way.nodes.last! : 0, lat: useIDs ? 0 : last.lat, lon: useIDs ? 0 : last.lon)
            )
        }
        var open = ways.filter { $0.points.count >= 2 }
        var rings: [[GeoPoint]] = []
        while !open.isEmpty {
            let seed = open.removeFirst()
            var ring = seed.points
            let start = ends(seed).first
            var tail = ends(seed).last
            var lastWay = seed.id
            while tail != start {
                guard let next = open.firstIndex(where: { ends($0).first == tail || ends($0).last == tail }) else {
                    throw OSMImportError("\(relation): its ways do not close into a ring; \(lastWay) ends where no other member way begins or ends")
                }
                let way = open.remove(at: next)
                let (first, last) = ends(way)
                if first == tail {
                    ring += way.points.dropFirst()
                    tail = last
                } else {
                    ring += way.points.reversed().dropFirst()
                    tail = first
                }
                lastWay = way.id
            }
            guard ring.count >= 4 else { throw OSMImportError("\(relation): a ring of \(ring.count) positions is not an area") }
            rings.append(ring)
        }
        return rings
    }

    /// Polygons from outer and inner rings: each inner ring goes to the outer ring holding its first position.
    static func polygons(outer: [[GeoPoint]], inner: [[GeoPoint]]) -> [Polygon] {
        var holes = [[[GeoPoint]]](repeating: [], count: outer.count)
        for ring in inner {
            if let index = outer.indices.first(where: { Polygon(rings: [outer[$0]]).contains(ring[0]) }) { holes[index].append(ring) }
        }
        return outer.indices.map { Polygon(outline: outer[$0], holes: holes[$0]) }
    }
}

/// The area a resort without a drawn boundary covers: the convex hull of its lifts
/// and pistes grown by a margin.
enum SurroundingArea {
    static func polygon(around points: [GeoPoint], margin: Double) -> Polygon? {
        guard let first = points.first else { return nil }
        var grown: [GeoPoint] = []
        for point in points {
            for step in 0..<8 {
                grown.append(Geodesy.destination(from: point, bearing: Double(step) * 45, metres: margin))
            }
        }
        let hull = convexHull(grown, around: first)
        guard hull.count >= 3 else { return nil }
        return Polygon(outline: hull + [hull[0]])
    }

    /// Andrew's monotone chain in local planar coordinates (longitude scaled by the latitude's cosine).
    static func convexHull(_ points: [GeoPoint], around origin: GeoPoint) -> [GeoPoint] {
        let scale = cos(origin.lat * .pi / 180)
        let sorted = points.sorted { ($0.lon, $0.lat) < ($1.lon, $1.lat) }
        func cross(_ o: GeoPoint, _ a: GeoPoint, _ b: GeoPoint) -> Double {
            (a.lon - o.lon) * scale * (b.lat - o.lat) - (a.lat - o.lat) * (b.lon - o.lon) * scale
        }
        var lower: [GeoPoint] = []
        var upper: [GeoPoint] = []
        for point in sorted {
            while lower.count >= 2, cross(lower[lower.count - 2], lower[lower.count - 1], point) <= 0 { lower.removeLast() }
            lower.append(point)
        }
        for point in sorted.reversed() {
            while upper.count >= 2, cross(upper[upper.count - 2], upper[upper.count - 1], point) <= 0 { upper.removeLast() }
            upper.append(point)
        }
        return Array(lower.dropLast() + upper.dropLast())
    }
}
