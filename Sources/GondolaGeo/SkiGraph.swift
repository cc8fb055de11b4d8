import Foundation

/// A resort's lifts and pistes as a directed graph, and routing over it with A*.
///
/// Real maps join runs in their middles: a run ends on another run, two runs share
/// a vertex, a run is drawn as several ways end to end. So every piste is cut at
/// each inner vertex within `snapMetres` of a junction (another way's end, or a
/// vertex two ways share); the pieces are the graph's `ways`. Piece ends within
/// `snapMetres` of each other are one node. Pistes run downhill only, lifts uphill
/// only (boarded at their bottom, left at their top); nodes within `walkMetres` of
/// each other are linked by walks both ways. Cost is time (see `SkiSpeeds`). A node
/// nothing leaves (the end of a run drawn short of the lift) gets a walk out to the
/// nearest node a lift or run leaves, however far, so that a simulated skier is never
/// stranded; routes never take those walks.
public struct SkiGraph: Sendable {
    struct Edge: Sendable {
        let to: Int
        /// Index into `ways`, or nil for a walk.
        let way: Int?
        let seconds: Double
        /// A walk out of a dead end (see `init`), which the unreachable report leaves out.
        var walkOut = false
    }

    /// The pieces that routes and walkers travel along.
    public let ways: [SkiWay]
    /// For each piece, the index of the way it was cut from.
    public let sourceOfWay: [Int]
    public let nodes: [GeoPoint]
    public let speeds: SkiSpeeds
    public let colors: DifficultyColors
    /// Ends closer than this are one node, so a traveller changing ways may shift by up to twice it.
    public let snapMetres: Double
    private let edges: [[Edge]]

    public init(
        ways: [SkiWay], speeds: SkiSpeeds = SkiSpeeds(), colors: DifficultyColors = .european,
        snapMetres: Double = 30, walkMetres: Double = 150
    ) {
        self.speeds = speeds
        self.colors = colors
        self.snapMetres = snapMetres
        let (pieces, sources) = Self.cut(ways, snapMetres: snapMetres)
        self.ways = pieces
        self.sourceOfWay = sources

        var nodes: [GeoPoint] = []
        var nodeGrid = PointGrid(cellMetres: max(snapMetres, 10))
        func node(for point: GeoPoint) -> Int {
            if let existing = nodeGrid.nearby(point, radius: snapMetres, limit: 1, accepting: { _, _ in true }).first {
                return Int(existing.slot)
            }
            nodes.append(point)
            nodeGrid.place(Int32(nodes.count - 1), at: point)
            return nodes.count - 1
        }
        var edges: [[Edge]] = []
        func addEdge(from: Int, _ edge: Edge) {
            while edges.count <= max(from, edge.to) { edges.append([]) }
            edges[from].append(edge)
        }
        for (index, way) in pieces.enumerated() {
            let from = node(for: way.coordinates.first!)
            let to = node(for: way.coordinates.last!)
            guard from != to else { continue }
            addEdge(from: from, Edge(to: to, way: index, seconds: Self.seconds(for: way, speeds: speeds)))
        }
        var walkGrid = PointGrid(cellMetres: walkMetres)
        for (index, point) in nodes.enumerated() { walkGrid.place(Int32(index), at: point) }
        for a in nodes.indices {
            for match in walkGrid.nearby(nodes[a], radius: walkMetres, accepting: { slot, _ in Int(slot) != a }) {
                let b = Int(match.slot)
                addEdge(from: a, Edge(to: b, way: nil, seconds: Self.walkSeconds(from: nodes[a], to: nodes[b], speeds: speeds)))
            }
        }
        while edges.count < nodes.count { edges.append([]) }
        let departing = nodes.indices.filter { node in edges[node].contains { $0.way != nil } }
        for node in nodes.indices where edges[node].isEmpty {
            guard
                let nearest = departing.filter({ $0 != node }).min(by: {
                    Geodesy.distance(nodes[node], nodes[$0]) < Geodesy.distance(nodes[node], nodes[$1])
                })
            else { continue }
            edges[node].append(
                Edge(
                    to: nearest, way: nil, seconds: Self.walkSeconds(from: nodes[node], to: nodes[nearest], speeds: speeds),
                    walkOut: true))
        }
        self.nodes = nodes
        self.edges = edges
    }

    /// Cuts every piste at its inner vertices that lie within `snapMetres` of a
    /// junction: the end of another way, or a vertex it shares with another way.
    /// Lifts stay whole. Answers the pieces and, for each, its way's index.
    static func cut(_ ways: [SkiWay], snapMetres: Double) -> (pieces: [SkiWay], sources: [Int]) {
        struct Place: Hashable { let lat: Double, lon: Double }
        var owners: [Place: Set<Int>] = [:]
        for (index, way) in ways.enumerated() {
            for point in way.coordinates { owners[Place(lat: point.lat, lon: point.lon), default: []].insert(index) }
        }
        // Junction slots: ends first (owner = the way), then shared vertices (owner = -1: any way may cut there).
        var junctions = PointGrid(cellMetres: max(snapMetres, 10))
        var junctionOwner: [Int] = []
        func addJunction(_ point: GeoPoint, owner: Int) {
            junctions.place(Int32(junctionOwner.count), at: point)
            junctionOwner.append(owner)
        }
        for (index, way) in ways.enumerated() {
            addJunction(way.coordinates.first!, owner: index)
            addJunction(way.coordinates.last!, owner: index)
        }
        for (place, wayIndexes) in owners where wayIndexes.count > 1 {
            addJunction(GeoPoint(lat: place.lat, lon: place.lon), owner: -1)
        }
        var pieces: [SkiWay] = []
        var sources: [Int] = []
        for (index, way) in ways.enumerated() {
            guard way.kind == .piste, way.coordinates.count > 2 else {
                pieces.append(way)
                sources.append(index)
                continue
            }
            var start = 0
            for vertex in 1..<(way.coordinates.count - 1) {
                let point = way.coordinates[vertex]
                let atJunction = !junctions.nearby(
                    point, radius: snapMetres, limit: 1,
                    accepting: { slot, _ in
                        junctionOwner[Int(slot)] != index
                    }
                ).isEmpty
                guard atJunction else { continue }
                pieces.append(way.piece(start...vertex))
                sources.append(index)
                start = vertex
            }
            pieces.append(way.piece(start...(way.coordinates.count - 1)))
            sources.append(index)
        }
        return (pieces, sources)
    }

    static func seconds(for way: SkiWay, speeds: SkiSpeeds) -> Double {
        way.length / speeds.metresPerSecond(on: way) + (way.kind == .lift ? speeds.liftBoarding : 0)
    }

    /// A way out of a node: a lift or piste (`way` is its index), or a walk to a nearby node.
    public struct Departure: Sendable, Equatable {
        public let to: Int
        /// Index into `ways`, or nil for a walk.
        public let way: Int?
    }

    /// Every way out of `node`.
    public func departures(from node: Int) -> [Departure] {
        edges[node].map { Departure(to: $0.to, way: $0.way) }
    }

    static func walkSeconds(from a: GeoPoint, to b: GeoPoint, speeds: SkiSpeeds) -> Double {
        let climb = max(0, (b.alt ?? 0) - (a.alt ?? 0))
        return Geodesy.distance(a, b) / speeds.walking + climb * speeds.walkingClimbPenalty
    }

    /// The index of the node nearest to `point`.
    public func nearestNode(to point: GeoPoint) -> Int? {
        nodes.indices.min { Geodesy.distance(nodes[$0], point) < Geodesy.distance(nodes[$1], point) }
    }

    /// Which source ways (indexes of the ways the graph was built from) a skier
    /// starting at `origin`'s nearest node cannot reach, and from which they cannot
    /// get back to it, by lifts, pistes and walks between nearby nodes (walks out of
    /// dead ends do not count: they show where the data has a gap).
    public func unreachable(from origin: GeoPoint) -> (notReached: [Int], noWayBack: [Int]) {
        guard let start = nearestNode(to: origin) else { return ([], []) }
        var reverse = [[Int]](repeating: [], count: nodes.count)
        for (from, list) in edges.enumerated() { for edge in list where !edge.walkOut { reverse[edge.to].append(from) } }
        func visit(_ next: (Int) -> [Int]) -> [Bool] {
            var seen = [Bool](repeating: false, count: nodes.count)
            var stack = [start]
            seen[start] = true
            while let node = stack.popLast() {
                for neighbour in next(node) where !seen[neighbour] {
                    seen[neighbour] = true
                    stack.append(neighbour)
                }
            }
            return seen
        }
        let forward = visit { node in edges[node].filter { !$0.walkOut }.map(\.to) }
        let backward = visit { reverse[$0] }
        var notReached = Set<Int>()
        var noWayBack = Set<Int>()
        for (from, list) in edges.enumerated() {
            for edge in list {
                guard let way = edge.way else { continue }
                if !forward[from] { notReached.insert(sourceOfWay[way]) }
                if !backward[edge.to] { noWayBack.insert(sourceOfWay[way]) }
            }
        }
        return (notReached.sorted(), noWayBack.sorted())
    }

    /// The quickest route from `from` to `to` using pistes no harder than
    /// `maxDifficulty` (unrated pistes only without a cap); each end walks to its
    /// nearest node, and the pieces of one way travelled in a row are one leg.
    /// Nil when there is none.
    public func route(from: GeoPoint, to: GeoPoint, maxDifficulty: Difficulty = .hardest) -> Route? {
        guard let start = nearestNode(to: from), let goal = nearestNode(to: to) else { return nil }
        guard let path = shortestPath(from: start, to: goal, maxDifficulty: maxDifficulty) else { return nil }
        var legs: [RouteLeg] = []
        var legSource: [Int?] = []
        if Geodesy.distance(from, nodes[start]) > 1 {
            legs.append(walkLeg([from, nodes[start]]))
            legSource.append(nil)
        }
        for edge in path {
            if let index = edge.way {
                let way = ways[index]
                let source = sourceOfWay[index]
                if let last = legs.last, legSource.last == source {
                    legs[legs.count - 1] = RouteLeg(
                        kind: last.kind, name: last.name, difficulty: last.difficulty, color: last.color,
                        coordinates: last.coordinates + way.coordinates.dropFirst(), distance: last.distance + way.length,
                        duration: last.duration + edge.seconds)
                    continue
                }
                legs.append(
                    RouteLeg(
                        kind: way.kind, name: way.name, difficulty: way.difficulty,
                        color: way.kind == .piste ? colors.style(for: way.difficulty).color : nil, coordinates: way.coordinates,
                        distance: way.length, duration: edge.seconds))
                legSource.append(source)
            } else {
                legs.append(walkLeg([legs.last?.coordinates.last ?? nodes[start], nodes[edge.to]]))
                legSource.append(nil)
            }
        }
        if Geodesy.distance(to, nodes[goal]) > 1 { legs.append(walkLeg([nodes[goal], to])) }
        legs = Self.mergingWalks(legs, speeds: speeds)
        var ascent = 0.0
        var descent = 0.0
        for leg in legs {
            for (a, b) in zip(leg.coordinates, leg.coordinates.dropFirst()) {
                guard let altA = a.alt, let altB = b.alt else { continue }
                if altB > altA { ascent += altB - altA } else { descent += altA - altB }
            }
        }
        return Route(
            legs: legs, distance: legs.reduce(0) { $0 + $1.distance }, duration: legs.reduce(0) { $0 + $1.duration },
            ascent: ascent, descent: descent)
    }

    /// Whether a route capped at `maxDifficulty` may take `way`.
    func allows(_ way: SkiWay, maxDifficulty: Difficulty) -> Bool {
        guard way.kind == .piste else { return true }
        guard let difficulty = way.difficulty else { return maxDifficulty == .hardest }
        return difficulty <= maxDifficulty
    }

    private func walkLeg(_ coordinates: [GeoPoint]) -> RouteLeg {
        let way = SkiWay(kind: .walk, name: "walk", difficulty: nil, aerialway: nil, coordinates: coordinates)
        return RouteLeg(
            kind: .walk, name: "walk", difficulty: nil, color: nil, coordinates: coordinates, distance: way.length,
            duration: Self.walkSeconds(from: coordinates.first!, to: coordinates.last!, speeds: speeds))
    }

    private static func mergingWalks(_ legs: [RouteLeg], speeds: SkiSpeeds) -> [RouteLeg] {
        var merged: [RouteLeg] = []
        for leg in legs {
            if leg.kind == .walk, let last = merged.last, last.kind == .walk {
                merged[merged.count - 1] = RouteLeg(
                    kind: .walk, name: "walk", difficulty: nil, color: nil,
                    coordinates: last.coordinates + leg.coordinates.dropFirst(),
                    distance: last.distance + leg.distance, duration: last.duration + leg.duration)
            } else {
                merged.append(leg)
            }
        }
        return merged
    }

    /// A* over the nodes; the heuristic is straight-line distance at the fastest speed.
    func shortestPath(from start: Int, to goal: Int, maxDifficulty: Difficulty) -> [Edge]? {
        if start == goal { return [] }
        let fastest = speeds.fastest
        var best = [Double](repeating: .infinity, count: nodes.count)
        var cameBy = [Edge?](repeating: nil, count: nodes.count)
        var cameFrom = [Int](repeating: -1, count: nodes.count)
        var open = MinHeap()
        best[start] = 0
        open.push(Geodesy.distance(nodes[start], nodes[goal]) / fastest, start)
        while let (_, current) = open.pop() {
            if current == goal { break }
            for edge in edges[current] {
                if edge.walkOut { continue }
                if let way = edge.way, !allows(ways[way], maxDifficulty: maxDifficulty) { continue }
                let cost = best[current] + edge.seconds
                if cost < best[edge.to] {
                    best[edge.to] = cost
                    cameBy[edge.to] = edge
                    cameFrom[edge.to] = current
                    open.push(cost + Geodesy.distance(nodes[edge.to], nodes[goal]) / fastest, edge.to)
                }
            }
        }
        guard best[goal].isFinite else { return nil }
        var path: [Edge] = []
        var node = goal
        while node != start {
            path.append(cameBy[node]!)
            node = cameFrom[node]
        }
        return path.reversed()
    }
}

/// A binary min-heap of (priority, node) for A*.
struct MinHeap {
    private var items: [(Double, Int)] = []

    mutating func push(_ priority: Double, _ node: Int) {
        items.append((priority, node))
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child].0 < items[parent].0 else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> (Double, Int)? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < items.count, items[left].0 < items[smallest].0 { smallest = left }
            if right < items.count, items[right].0 < items[smallest].0 { smallest = right }
            if smallest == parent { break }
            items.swapAt(parent, smallest)
            parent = smallest
        }
        return top
    }
}
