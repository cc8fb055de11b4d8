/// The checks a fence's polygon passes before it is used, each failure named the way a
/// host who drew it can fix it: at least 4 positions per ring and the ring closed (its
/// last position repeats its first, as GeoJSON asks), every position in range, at most
/// `maxVertices` positions in all, no ring crossing itself, the outline counterclockwise
/// and holes clockwise (GeoJSON's right-hand rule, RFC 7946 §3.1.6), and every hole
/// starting inside the outline. Rings are compared in longitude/latitude, longitudes
/// unwrapped from the ring's first position (a fence may cross ±180°).
public enum FenceGeometry {
    /// Most positions of one fence's rings together.
    public static let maxVertices = 1_000

    /// The first problem of the polygon `rings` (outline first, then holes), nil when none.
    public static func problem(of rings: [[GeoPoint]]) -> String? {
        guard !rings.isEmpty else { return "the polygon has no ring" }
        let total = rings.reduce(0) { $0 + $1.count }
        guard total <= maxVertices else { return "the polygon has \(total) positions, more than \(maxVertices)" }
        for (index, ring) in rings.enumerated() {
            if let problem = problem(ofRing: ring, index: index) { return problem }
        }
        let outline = Polygon(outline: rings[0])
        for (index, hole) in rings.enumerated().dropFirst() where !outline.contains(hole[0]) {
            return "hole \(index) lies outside the outline (its first position \(hole[0]) is not inside ring 0)"
        }
        return nil
    }

    private static func problem(ofRing ring: [GeoPoint], index: Int) -> String? {
        let name = index == 0 ? "the outline (ring 0)" : "hole \(index)"
        for (position, point) in ring.enumerated() where !(point.lat.isFinite && point.lon.isFinite && abs(point.lat) <= 90 && abs(point.lon) <= 180)
        {
            return "position \(position) of \(name) is out of range: \(point) (latitude within ±90, longitude within ±180)"
        }
        guard ring.count >= 4 else { return "\(name) has \(ring.count) positions; a closed ring needs at least 4" }
        guard ring.first == ring.last else { return "\(name) is not closed: its last position must repeat its first" }
        let plane = unwrapped(ring)
        let edges = plane.count - 1
        for i in 0..<edges where plane[i] == plane[i + 1] {
            return "\(name) repeats position \(i) at \(i + 1)"
        }
        for i in 0..<edges {
            for j in stride(from: i + 2, to: edges, by: 1) where !(i == 0 && j == edges - 1) {
                if segmentsCross(plane[i], plane[i + 1], plane[j], plane[j + 1]) {
                    return "\(name) crosses itself: edge \(i) meets edge \(j)"
                }
            }
        }
        let area = signedArea(plane)
        guard area != 0 else { return "\(name) encloses no area" }
        if index == 0, area < 0 { return "the outline (ring 0) runs clockwise; it must run counterclockwise (RFC 7946 right-hand rule)" }
        if index > 0, area > 0 { return "\(name) runs counterclockwise; a hole must run clockwise (RFC 7946 right-hand rule)" }
        return nil
    }

    /// A point of the longitude/latitude plane.
    private struct PlanePoint: Equatable {
        let x: Double
        let y: Double
    }

    private static func unwrapped(_ ring: [GeoPoint]) -> [PlanePoint] {
        let reference = ring[0].lon
        return ring.map { PlanePoint(x: reference + Geodesy.longitudeDelta(reference, $0.lon), y: $0.lat) }
    }

    /// Twice the shoelace area: positive counterclockwise.
    private static func signedArea(_ ring: [PlanePoint]) -> Double {
        zip(ring, ring.dropFirst()).reduce(0) { $0 + $1.0.x * $1.1.y - $1.1.x * $1.0.y }
    }

    /// Whether segments ab and cd share a point (touching counts).
    private static func segmentsCross(_ a: PlanePoint, _ b: PlanePoint, _ c: PlanePoint, _ d: PlanePoint) -> Bool {
        func orientation(_ p: PlanePoint, _ q: PlanePoint, _ r: PlanePoint) -> Double { (q.x - p.x) * (r.y - p.y) - (q.y - p.y) * (r.x - p.x) }
        func onSegment(_ p: PlanePoint, _ q: PlanePoint, _ r: PlanePoint) -> Bool {
            min(p.x, q.x) <= r.x && r.x <= max(p.x, q.x) && min(p.y, q.y) <= r.y && r.y <= max(p.y, q.y)
        }
        let d1 = orientation(c, d, a)
        let d2 = orientation(c, d, b)
        let d3 = orientation(a, b, c)
        let d4 = orientation(a, b, d)
        if ((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0)) { return true }
        return (d1 == 0 && onSegment(c, d, a)) || (d2 == 0 && onSegment(c, d, b)) || (d3 == 0 && onSegment(a, b, c))
            || (d4 == 0 && onSegment(a, b, d))
    }
}
