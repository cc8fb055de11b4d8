/// A simulated skier moving through a resort's graph: at each node it takes one
/// of the ways out (a lift up or a piste down, a short walk only where no way
/// leaves), chosen at random, and moves along it at the speed `SkiSpeeds` gives
/// for it (the lift's type, the piste's difficulty, walking pace). Used by the
/// demo trip and the load generators.
public struct SkiWalker: Sendable {
    /// The node the current leg started from.
    public private(set) var from: Int
    /// The current leg.
    public private(set) var leg: SkiGraph.Departure
    /// Metres travelled along the current leg.
    public private(set) var metres: Double
    /// Legs finished so far.
    public private(set) var legsTaken = 0
    private var random: SeededRandom

    /// A walker starting at `node` (taken modulo the node count), `metres` into its first leg.
    public init(graph: SkiGraph, node: Int, metres: Double = 0, seed: UInt64) {
        precondition(!graph.nodes.isEmpty, "the resort has no ways")
        var random = SeededRandom(seed: seed)
        from = node % graph.nodes.count
        leg = Self.choose(from: from, in: graph, random: &random)
        self.random = random
        self.metres = 0
        self.metres = min(metres, max(0, length(in: graph) - 1))
    }

    /// Metres per second on the current leg.
    public func speed(in graph: SkiGraph) -> Double {
        leg.way.map { graph.speeds.metresPerSecond(on: graph.ways[$0]) } ?? graph.speeds.walking
    }

    /// Length of the current leg in metres.
    public func length(in graph: SkiGraph) -> Double {
        leg.way.map { graph.ways[$0].length } ?? Geodesy.distance(graph.nodes[from], graph.nodes[leg.to])
    }

    /// Where the walker is now.
    public func position(in graph: SkiGraph) -> GeoPoint {
        if let way = leg.way { return graph.ways[way].point(atDistance: metres) }
        let start = graph.nodes[from]
        let end = graph.nodes[leg.to]
        let length = Geodesy.distance(start, end)
        let share = length > 0 ? min(1, metres / length) : 1
        var alt: Double?
        if let startAlt = start.alt, let endAlt = end.alt { alt = startAlt + (endAlt - startAlt) * share }
        return GeoPoint(lat: start.lat + (end.lat - start.lat) * share, lon: start.lon + (end.lon - start.lon) * share, alt: alt)
    }

    /// Moves on by `seconds`, through as many legs as that takes, and answers the new position.
    public mutating func advance(in graph: SkiGraph, seconds: Double) -> GeoPoint {
        var left = seconds
        while left > 0, leg.way != nil || leg.to != from {
            let speed = speed(in: graph)
            let remaining = length(in: graph) - metres
            if remaining > speed * left {
                metres += speed * left
                break
            }
            left -= remaining / speed
            from = leg.to
            leg = Self.choose(from: from, in: graph, random: &random)
            metres = 0
            legsTaken += 1
        }
        return position(in: graph)
    }

    /// A random lift or piste out of `node`; a walk only where none leaves; staying
    /// put (a zero-length walk) at a node nothing leaves.
    static func choose(from node: Int, in graph: SkiGraph, random: inout SeededRandom) -> SkiGraph.Departure {
        let departures = graph.departures(from: node)
        let ways = departures.filter { $0.way != nil }
        return (ways.isEmpty ? departures : ways).randomElement(using: &random) ?? SkiGraph.Departure(to: node, way: nil)
    }
}
