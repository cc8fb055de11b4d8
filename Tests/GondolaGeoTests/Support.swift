import GondolaGeo

/// A seeded generator (SplitMix64) so that every random test is repeatable.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension SeededGenerator {
    /// A point within `metres` of `center` (uniform in a square), kept in range.
    mutating func point(near center: GeoPoint, metres: Double) -> GeoPoint {
        let lat = max(-90, min(90, center.lat + Double.random(in: -1...1, using: &self) * Geodesy.latitudeDegrees(metres: metres)))
        let lonSpan = Geodesy.longitudeDegrees(metres: metres, atLatitude: min(abs(lat), 89.9))
        let lon = Geodesy.normalizedLongitude(center.lon + Double.random(in: -1...1, using: &self) * lonSpan)
        return GeoPoint(lat: lat, lon: lon)
    }
}

/// Places with awkward geometry that every spatial test visits.
let testCentres: [GeoPoint] = [
    GeoPoint(lat: 45.3, lon: 6.6),        // the Alps
    GeoPoint(lat: -33.9, lon: 151.2),     // southern hemisphere
    GeoPoint(lat: 0.0, lon: 179.995),     // on the antimeridian
    GeoPoint(lat: 65.0, lon: -179.99),    // antimeridian, far north
    GeoPoint(lat: 89.99, lon: 0),         // the north pole
    GeoPoint(lat: -89.995, lon: 120),     // the south pole
]
