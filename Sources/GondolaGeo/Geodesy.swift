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
}

/// Distances, bearings and conversions on the Earth as a sphere of mean radius.
public enum Geodesy {
    /// Mean Earth radius (IUGG), metres.
    public static let earthRadius = 6_371_008.8
    /// Metres in one degree of latitude (and of longitude at the equator).
    public static let metresPerDegree = earthRadius * .pi / 180

    /// Great-circle distance in metres (haversine formula).
    public static func distance(_ a: GeoPoint, _ b: GeoPoint) -> Double {
        let lat1 = a.lat * .pi / 180, lat2 = b.lat * .pi / 180
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
    public static func longitudeDelta(_ from: Double, _ to: Double) -> Double {
        var delta = to - from
        if delta > 180 { delta -= 360 } else if delta < -180 { delta += 360 }
        return delta
    }

    /// Initial bearing from `a` to `b`, degrees clockwise from north (0..<360).
    public static func bearing(_ a: GeoPoint, _ b: GeoPoint) -> Double {
        let lat1 = a.lat * .pi / 180, lat2 = b.lat * .pi / 180
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
        let lat1 = origin.lat * .pi / 180, lon1 = origin.lon * .pi / 180
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
