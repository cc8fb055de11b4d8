import Foundation

/// A WGS84 position: latitude and longitude in degrees, altitude in metres above sea level.
public struct GeoPoint: Sendable, Hashable, CustomStringConvertible {
    public var lat: Double
    public var lon: Double
    public var alt: Double?

    public init(lat: Double, lon: Double, alt: Double? = nil) {
        self.lat = lat
        self.lon = lon
        self.alt = alt
    }

    /// Whether the coordinates are finite and in range (latitude ±90, longitude ±180).
    public var isValid: Bool {
        lat.isFinite && lon.isFinite && abs(lat) <= 90 && abs(lon) <= 180 && (alt?.isFinite ?? true)
    }

    public var description: String { "(\(lat), \(lon)\(alt.map { ", \($0) m" } ?? ""))" }

    /// The point `north` and `east` metres away (a local approximation for short distances).
    public func offset(north: Double, east: Double) -> GeoPoint {
        GeoPoint(lat: lat + Geodesy.latitudeDegrees(metres: north), lon: lon + Geodesy.longitudeDegrees(metres: east, atLatitude: lat), alt: alt)
    }
}

/// Distances, bearings and conversions on the Earth as a sphere of mean radius.
public enum Geodesy {
    /// Mean Earth radius (IUGG), metres.
    public static let earthRadius = 6_371_008.8
    /// Metres in one degree of latitude (and of longitude at the equator).
    public static let metresPerDegree = earthRadius * .pi / 180

    /// Great-circle distance in metres (haversine formula).
    @inlinable
    public static func distance(_ a: GeoPoint, _ b: GeoPoint) -> Double {
        let lat1 = a.lat * .pi / 180
        let lat2 = b.lat * .pi / 180
        let dLat = lat2 - lat1
        let dLon = (b.lon - a.lon) * .pi / 180
        let h = sin(dLat / 2) * sin(dLat / 2) + cos(lat1) * cos(lat2) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * earthRadius * asin(min(1, sqrt(h)))
    }

    /// A fast distance for short ranges: the equirectangular projection at the
    /// mean latitude of the two points.
    ///
    /// Error bound (checked against `distance` in the tests): for points at most
    /// 10 km apart and latitudes within ±85°, the relative error is below 0.1%
    /// (under 10 m at 10 km, about 1 mm at 300 m near the equator). Across the
    /// antimeridian the longitude difference is taken the short way round.
    public static func fastDistance(_ a: GeoPoint, _ b: GeoPoint) -> Double {
        let x = longitudeDelta(a.lon, b.lon) * cos((a.lat + b.lat) * .pi / 360)
        let y = b.lat - a.lat
        return sqrt(x * x + y * y) * metresPerDegree
    }

    /// `to - from` in degrees of longitude, the short way round (−180...180).
    @inlinable
    public static func longitudeDelta(_ from: Double, _ to: Double) -> Double {
        var delta = to - from
        if delta > 180 { delta -= 360 } else if delta < -180 { delta += 360 }
        return delta
    }

    /// Initial bearing from `a` to `b`, degrees clockwise from north (0..<360).
    public static func bearing(_ a: GeoPoint, _ b: GeoPoint) -> Double {
        let lat1 = a.lat * .pi / 180
        let lat2 = b.lat * .pi / 180
        let dLon = longitudeDelta(a.lon, b.lon) * .pi / 180
        let y = sin(dLon) * cos(lat2)
        let x = cos(lat1) * sin(lat2) - sin(lat1) * cos(lat2) * cos(dLon)
        let degrees = atan2(y, x) * 180 / .pi
        return degrees < 0 ? degrees + 360 : degrees
    }

    /// The point `metres` away from `origin` along `bearing` (degrees), on the great circle.
    public static func destination(from origin: GeoPoint, bearing: Double, metres: Double) -> GeoPoint {
        let angular = metres / earthRadius
        let theta = bearing * .pi / 180
        let lat1 = origin.lat * .pi / 180
        let lon1 = origin.lon * .pi / 180
        let lat2 = asin(sin(lat1) * cos(angular) + cos(lat1) * sin(angular) * cos(theta))
        let lon2 = lon1 + atan2(sin(theta) * sin(angular) * cos(lat1), cos(angular) - sin(lat1) * sin(lat2))
        return GeoPoint(lat: lat2 * 180 / .pi, lon: normalizedLongitude(lon2 * 180 / .pi), alt: origin.alt)
    }

    /// A longitude brought into −180...180.
    public static func normalizedLongitude(_ lon: Double) -> Double {
        var value = lon.truncatingRemainder(dividingBy: 360)
        if value > 180 { value -= 360 } else if value < -180 { value += 360 }
        return value
    }

    /// Degrees of latitude spanned by `metres`.
    public static func latitudeDegrees(metres: Double) -> Double { metres / metresPerDegree }

    /// Degrees of longitude spanned by `metres` at latitude `lat` (180 near the poles).
    public static func longitudeDegrees(metres: Double, atLatitude lat: Double) -> Double {
        let scale = cos(lat * .pi / 180)
        guard scale > 1e-9 else { return 180 }
        return min(180, metres / (metresPerDegree * scale))
    }

    /// Metres spanned by `degrees` of longitude at latitude `lat`.
    public static func metres(longitudeDegrees degrees: Double, atLatitude lat: Double) -> Double {
        degrees * metresPerDegree * cos(lat * .pi / 180)
    }
}

/// A latitude/longitude rectangle. When `minLon > maxLon` it crosses the
/// antimeridian: it covers `minLon...180` and `-180...maxLon`.
public struct BoundingBox: Sendable, Hashable {
    public var minLat: Double
    public var minLon: Double
    public var maxLat: Double
    public var maxLon: Double

    public init(minLat: Double, minLon: Double, maxLat: Double, maxLon: Double) {
        self.minLat = minLat
        self.minLon = minLon
        self.maxLat = maxLat
        self.maxLon = maxLon
    }

    /// The box around every point within `radius` metres of `center`, including
    /// the poles (full longitude range) and the antimeridian (wrapping box).
    public init(around center: GeoPoint, radius: Double) {
        let dLat = Geodesy.latitudeDegrees(metres: radius)
        minLat = max(-90, center.lat - dLat)
        maxLat = min(90, center.lat + dLat)
        if minLat <= -90 || maxLat >= 90 {
            minLon = -180
            maxLon = 180
            return
        }
        // The widest longitude span of the circle is at the latitude farthest from the equator.
        let widest = max(abs(minLat), abs(maxLat))
        let dLon = Geodesy.longitudeDegrees(metres: radius, atLatitude: widest) * 1.0001
        if dLon >= 180 {
            minLon = -180
            maxLon = 180
        } else {
            // Past ±180 the normalised ends come out with minLon > maxLon: a wrapping box.
            minLon = Geodesy.normalizedLongitude(center.lon - dLon)
            maxLon = Geodesy.normalizedLongitude(center.lon + dLon)
        }
    }

    public var crossesAntimeridian: Bool { minLon > maxLon }

    /// The box around every point within `metres` of this box (the full longitude range
    /// when it reaches a pole or spans the globe).
    public func widened(by metres: Double) -> BoundingBox {
        let dLat = Geodesy.latitudeDegrees(metres: metres)
        let lower = max(-90, minLat - dLat)
        let upper = min(90, maxLat + dLat)
        let dLon = Geodesy.longitudeDegrees(metres: metres, atLatitude: min(max(abs(lower), abs(upper)), 89.9)) * 1.0001
        let span = crossesAntimeridian ? maxLon + 360 - minLon : maxLon - minLon
        guard lower > -90, upper < 90, span + 2 * dLon < 360 else { return BoundingBox(minLat: lower, minLon: -180, maxLat: upper, maxLon: 180) }
        return BoundingBox(
            minLat: lower, minLon: Geodesy.normalizedLongitude(minLon - dLon), maxLat: upper,
            maxLon: Geodesy.normalizedLongitude(maxLon + dLon))
    }

    public func contains(_ point: GeoPoint) -> Bool {
        guard point.lat >= minLat, point.lat <= maxLat else { return false }
        if crossesAntimeridian { return point.lon >= minLon || point.lon <= maxLon }
        return point.lon >= minLon && point.lon <= maxLon
    }

    /// The longitude ranges the box covers (two when it crosses the antimeridian).
    public var longitudeRanges: [ClosedRange<Double>] {
        crossesAntimeridian ? [minLon...180, -180...maxLon] : [minLon...maxLon]
    }

    public func intersects(_ other: BoundingBox) -> Bool {
        guard minLat <= other.maxLat, other.minLat <= maxLat else { return false }
        for a in longitudeRanges {
            for b in other.longitudeRanges where a.overlaps(b) { return true }
        }
        return false
    }
}

/// Distances from one fixed point to many others, equal to `Geodesy.distance`
/// up to floating-point rounding but much cheaper for nearby points.
///
/// The centre's sine and cosine are computed once; for separations under about
/// 60 km each distance uses short Taylor series of the haversine terms (truncation
/// below 1e-15 relative), so no trigonometric call is made per point. Farther
/// points fall back to the haversine formula. `mayBeWithin` is a cheaper test
/// still: it never rejects a point within the probe's radius.
public struct DistanceProbe: Sendable {
    public let center: GeoPoint
    public let radius: Double
    @usableFromInline let cosLat: Double
    @usableFromInline let sinLat: Double
    /// cos of the query's highest latitude: shrinks east–west offsets, so the prefilter stays conservative.
    @usableFromInline let prefilterCos: Double
    @usableFromInline let radiusDegreesSquared: Double
    /// The prefilter's bound holds for small radii only; larger ones skip it.
    @usableFromInline let prefilters: Bool

    @inlinable
    public init(_ center: GeoPoint, radius: Double = .infinity) {
        self.center = center
        self.radius = radius
        let latRadians = center.lat * .pi / 180
        cosLat = cos(latRadians)
        sinLat = sin(latRadians)
        prefilters = radius <= 50_000
        let radiusDegrees = prefilters ? radius / Geodesy.metresPerDegree : 0
        prefilterCos = max(0, cos(min(90, abs(center.lat) + radiusDegrees) * .pi / 180))
        let widened = Self.prefilterDegrees(radiusDegrees)
        radiusDegreesSquared = widened * widened
    }

    /// The prefilter's reach for a radius of `degrees` (of latitude): widened for the equirectangular
    /// approximation, so it never falls short of the great-circle distance.
    @inlinable
    static func prefilterDegrees(_ degrees: Double) -> Double { degrees * 1.002 + 1e-9 }

    /// False only for points certainly farther than `radius` (equirectangular test, no square root).
    @inlinable
    public func mayBeWithin(lat: Double, lon: Double) -> Bool {
        guard prefilters else { return true }
        let dLon = Geodesy.longitudeDelta(center.lon, lon)
        let dLat = lat - center.lat
        let x = dLon * prefilterCos
        return x * x + dLat * dLat <= radiusDegreesSquared
    }

    /// Great-circle distance in metres from the centre.
    @inlinable
    public func distance(lat: Double, lon: Double) -> Double {
        let dLat = (lat - center.lat) * .pi / 180
        let dLon = Geodesy.longitudeDelta(center.lon, lon) * .pi / 180
        guard abs(dLat) < 0.01, abs(dLon) < 0.01 else {
            return Geodesy.distance(center, GeoPoint(lat: lat, lon: lon))
        }
        let d2 = dLat * dLat
        let cosDLat = 1 - d2 / 2 + d2 * d2 / 24 - d2 * d2 * d2 / 720
        let sinDLat = dLat * (1 - d2 / 6 + d2 * d2 / 120)
        let cosLat2 = cosLat * cosDLat - sinLat * sinDLat
        let halfLat = dLat / 2
        let halfLon = dLon / 2
        let hl2 = halfLat * halfLat
        let ho2 = halfLon * halfLon
        let sinHalfLat = halfLat * (1 - hl2 / 6 + hl2 * hl2 / 120)
        let sinHalfLon = halfLon * (1 - ho2 / 6 + ho2 * ho2 / 120)
        let h = sinHalfLat * sinHalfLat + cosLat * cosLat2 * sinHalfLon * sinHalfLon
        let s = h.squareRoot()
        let s2 = s * s
        return 2 * Geodesy.earthRadius * s * (1 + s2 / 6 + 3 * s2 * s2 / 40)
    }
}
