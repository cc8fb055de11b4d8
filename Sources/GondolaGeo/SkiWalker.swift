/// A simulated skier: rides a lift or skis a piste to its end, then takes the
/// next way of the resort, at typical speeds (4 m/s on lifts, 8 m/s on pistes).
/// Used by the demo trip and the load benchmarks.
public struct SkiWalker: Sendable {
    /// Index of the current way.
    public private(set) var way: Int
    /// Metres travelled along it.
    public private(set) var metres: Double

    public init(way: Int, metres: Double = 0) {
        self.way = way
        self.metres = metres
    }

    /// Moves on by `seconds` and answers the new position.
    public mutating func advance(on ways: [SkiWay], seconds: Double) -> GeoPoint {
        let current = ways[way % ways.count]
        metres += (current.kind == .lift ? 4 : 8) * seconds
        if metres > current.length {
            metres = 0
            way = (way + 1) % ways.count
        }
        return ways[way % ways.count].point(atDistance: metres)
    }
}
