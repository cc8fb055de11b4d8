/// A seeded random generator (SplitMix64) for repeatable simulations: the tests'
/// random walks and the benchmarks' workloads draw the same values every run.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A point within `metres` of `center` (uniform in a square), kept in range.
    public mutating func point(near center: GeoPoint, metres: Double) -> GeoPoint {
        let lat = max(-90, min(90, center.lat + Double.random(in: -1...1, using: &self) * Geodesy.latitudeDegrees(metres: metres)))
        let lonSpan = Geodesy.longitudeDegrees(metres: metres, atLatitude: min(abs(lat), 89.9))
        let lon = Geodesy.normalizedLongitude(center.lon + Double.random(in: -1...1, using: &self) * lonSpan)
        return GeoPoint(lat: lat, lon: lon)
    }
}
