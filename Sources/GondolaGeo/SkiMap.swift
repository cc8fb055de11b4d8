import Foundation

/// Piste difficulty as OpenStreetMap tags it (`piste:difficulty`), easiest first.
/// `freeride` is off-piste terrain, `extreme` terrain that needs climbing gear.
public enum Difficulty: String, Sendable, CaseIterable, Comparable {
    case novice, easy, intermediate, advanced, expert, freeride, extreme

    /// The hardest difficulty: a route capped at it may take every piste, unrated ones included.
    public static let hardest = Difficulty.extreme

    public static func < (lhs: Difficulty, rhs: Difficulty) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// How a line is drawn over its colour, so that two difficulties sharing a colour
/// (North America's green circle for novice and easy, black for advanced and expert)
/// still look different.
public enum LinePattern: String, Sendable {
    case solid, dashed, dotted
}

/// How the map draws one difficulty.
public struct DifficultyStyle: Sendable, Equatable {
    /// CSS hex colour.
    public let color: String
    public let pattern: LinePattern

    public init(_ color: String, _ pattern: LinePattern = .solid) {
        self.color = color
        self.pattern = pattern
    }
}

/// The styles of the difficulties on a map: a named scheme, each difficulty drawn
/// distinctly by colour or, where the scheme shares a colour, by pattern.
public struct DifficultyColors: Sendable, Equatable {
    /// The scheme's name as resort files give it (`european`, `north_american`).
    public let scheme: String
    public let styles: [Difficulty: DifficultyStyle]

    public init(scheme: String, _ styles: [Difficulty: DifficultyStyle]) {
        self.scheme = scheme
        self.styles = styles
    }

    /// How a piste without a difficulty is drawn.
    public static let unrated = DifficultyStyle("#808080", .dotted)

    public func style(for difficulty: Difficulty?) -> DifficultyStyle { difficulty.flatMap { styles[$0] } ?? Self.unrated }
    public func color(for difficulty: Difficulty) -> String { style(for: difficulty).color }

    /// Europe: green, blue, red, black; expert black dashed; freeride orange dashed; extreme purple dotted.
    public static let european = DifficultyColors(scheme: "european", [
        .novice: DifficultyStyle("#2e9e44"), .easy: DifficultyStyle("#1f6fd1"), .intermediate: DifficultyStyle("#d42a2a"),
        .advanced: DifficultyStyle("#111111"), .expert: DifficultyStyle("#111111", .dashed),
        .freeride: DifficultyStyle("#f08a24", .dashed), .extreme: DifficultyStyle("#8e24aa", .dotted),
    ])
    /// North America: green circle (novice dotted), blue square, black diamond, double
    /// black dashed; freeride orange dashed; extreme purple dotted.
    public static let northAmerican = DifficultyColors(scheme: "north_american", [
        .novice: DifficultyStyle("#2e9e44", .dotted), .easy: DifficultyStyle("#2e9e44"), .intermediate: DifficultyStyle("#1f6fd1"),
        .advanced: DifficultyStyle("#111111"), .expert: DifficultyStyle("#111111", .dashed),
        .freeride: DifficultyStyle("#f08a24", .dashed), .extreme: DifficultyStyle("#8e24aa", .dotted),
    ])

    /// The known schemes by name.
    public static let schemes = [european, northAmerican]

    /// The scheme a resort at `point` uses: North America's in the Americas, Europe's elsewhere.
    public static func customary(at point: GeoPoint) -> DifficultyColors { point.lon < -30 ? northAmerican : european }
}

/// A lift or piste of a resort, oriented the way it is travelled (pistes down, lifts up).
public struct SkiWay: Sendable, Equatable {
    public enum Kind: String, Sendable { case lift, piste, walk }
    public let kind: Kind
    public let name: String
    public let difficulty: Difficulty?
    /// OSM `aerialway` value of a lift (gondola, chair_lift, drag_lift, ...).
    public let aerialway: String?
    /// Positions with altitude where known.
    public let coordinates: [GeoPoint]

    public init(kind: Kind, name: String, difficulty: Difficulty?, aerialway: String?, coordinates: [GeoPoint]) {
        precondition(coordinates.count >= 2, "a way needs two positions")
        self.kind = kind
        self.name = name
        self.difficulty = difficulty
        self.aerialway = aerialway
        self.coordinates = coordinates
    }

    /// The same way between two of its vertices.
    func piece(_ range: ClosedRange<Int>) -> SkiWay {
        SkiWay(kind: kind, name: name, difficulty: difficulty, aerialway: aerialway, coordinates: Array(coordinates[range]))
    }

    /// The point `distance` metres along the way from its start (its end when beyond).
    public func point(atDistance distance: Double) -> GeoPoint {
        var left = distance
        for (a, b) in zip(coordinates, coordinates.dropFirst()) {
            let length = Geodesy.distance(a, b)
            if left <= length, length > 0 {
                let t = left / length
                let alt = a.alt.flatMap { altA in b.alt.map { altA + ($0 - altA) * t } }
                return GeoPoint(lat: a.lat + (b.lat - a.lat) * t, lon: a.lon + (b.lon - a.lon) * t, alt: alt)
            }
            left -= length
        }
        return coordinates.last!
    }

    public var length: Double {
        zip(coordinates, coordinates.dropFirst()).reduce(0) { $0 + Geodesy.distance($1.0, $1.1) }
    }
}

/// Travel speeds used to turn distances into time.
public struct SkiSpeeds: Sendable {
    /// Skiing speed by difficulty, metres per second.
    public var skiing: [Difficulty: Double] = [.novice: 3.5, .easy: 5, .intermediate: 7, .advanced: 8, .expert: 7, .freeride: 5, .extreme: 3]
    /// Lift speed by `aerialway`, metres per second; others use `defaultLift`.
    public var lifts: [String: Double] = ["gondola": 5, "cable_car": 8, "chair_lift": 2.5, "drag_lift": 3, "t-bar": 3, "platter": 3, "j-bar": 3, "rope_tow": 2, "magic_carpet": 1]
    public var defaultLift: Double = 3
    /// Waiting and boarding time added to every lift ride, seconds.
    public var liftBoarding: Double = 60
    public var walking: Double = 1.2
    /// Extra seconds per metre climbed on foot.
    public var walkingClimbPenalty: Double = 6

    /// Travel speed along `way` (riding, skiing or walking), in metres per second.
    public func metresPerSecond(on way: SkiWay) -> Double {
        switch way.kind {
        case .lift: way.aerialway.flatMap { lifts[$0] } ?? defaultLift
        case .piste: skiing[way.difficulty ?? .intermediate] ?? 5
        case .walk: walking
        }
    }

    public init() {}

    /// The fastest speed of any edge: A*'s heuristic divides straight distance by it.
    var fastest: Double { max(skiing.values.max() ?? 0, lifts.values.max() ?? 0, defaultLift, walking) }
}

/// One part of a route: a lift ride, a piste or a walk.
public struct RouteLeg: Sendable, Equatable {
    public let kind: SkiWay.Kind
    public let name: String
    public let difficulty: Difficulty?
    public let color: String?
    public let coordinates: [GeoPoint]
    public let distance: Double
    /// Seconds.
    public let duration: Double
}

/// A route from one place to another across a resort.
public struct Route: Sendable, Equatable {
    public let legs: [RouteLeg]
    public let distance: Double
    public let duration: Double
    public let ascent: Double
    public let descent: Double
}

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

    public init(ways: [SkiWay], speeds: SkiSpeeds = SkiSpeeds(), colors: DifficultyColors = .european,
                snapMetres: Double = 30, walkMetres: Double = 150) {
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
            guard let nearest = departing.filter({ $0 != node }).min(by: {
                Geodesy.distance(nodes[node], nodes[$0]) < Geodesy.distance(nodes[node], nodes[$1])
            }) else { continue }
            edges[node].append(Edge(to: nearest, way: nil, seconds: Self.walkSeconds(from: nodes[node], to: nodes[nearest], speeds: speeds),
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
                let atJunction = !junctions.nearby(point, radius: snapMetres, limit: 1, accepting: { slot, _ in
                    junctionOwner[Int(slot)] != index
                }).isEmpty
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
        var notReached = Set<Int>(), noWayBack = Set<Int>()
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
                legs.append(RouteLeg(
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
        var ascent = 0.0, descent = 0.0
        for leg in legs {
            for (a, b) in zip(leg.coordinates, leg.coordinates.dropFirst()) {
                guard let altA = a.alt, let altB = b.alt else { continue }
                if altB > altA { ascent += altB - altA } else { descent += altA - altB }
            }
        }
        return Route(legs: legs, distance: legs.reduce(0) { $0 + $1.distance }, duration: legs.reduce(0) { $0 + $1.duration },
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
        return RouteLeg(kind: .walk, name: "walk", difficulty: nil, color: nil, coordinates: coordinates, distance: way.length,
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
            let left = 2 * parent + 1, right = left + 1
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

/// A piste drawn as an area (`area=yes`): shown on the map, not routed.
public struct PisteArea: Sendable, Equatable {
    public let name: String
    public let difficulty: Difficulty?
    public let polygon: Polygon

    public init(name: String, difficulty: Difficulty?, polygon: Polygon) {
        self.name = name
        self.difficulty = difficulty
        self.polygon = polygon
    }
}

/// A resort loaded from GeoJSON: boundary, base, lifts and pistes, and its routing graph.
///
/// The collection carries a foreign member `"resort": {"id", "name"}`, optionally
/// with `"difficulty_colors"` (`european`, the default, or `north_american`) and
/// `"attribution"` (the data's licence notice, shown with the map). Features are
/// pistes (`LineString` with `piste:type` and, when rated, `piste:difficulty`; a
/// `Polygon` with `piste:type` is a piste area), lifts (`LineString` with
/// `aerialway`), the boundary (`Polygon`/`MultiPolygon` with
/// `landuse=winter_sports`) and the base (`Point` with `gondola:base=yes`). Pistes
/// are oriented downhill and lifts uphill by the altitude of their ends (from the
/// geometry, else the DEM); lines without altitude keep their drawn direction, as
/// OpenStreetMap draws pistes downhill and lifts uphill.
public struct SkiResort: Sendable {
    public let id: String
    public let name: String
    public let boundary: [Polygon]
    public let base: GeoPoint
    /// The lifts and pistes as the file has them (the graph cuts pistes into pieces).
    public let ways: [SkiWay]
    public let areas: [PisteArea]
    /// The data's licence notice, when the file gives one.
    public let attribution: String?
    public let graph: SkiGraph

    public init(geoJSON data: Data, elevation: ElevationGrid? = nil) throws(GeoJSONError) {
        let (features, members) = try GeoJSON.features(from: data)
        guard let resort = members["resort"] as? [String: Any], let id = resort["id"] as? String, !id.isEmpty else {
            throw GeoJSONError("the FeatureCollection needs a \"resort\" member with an \"id\"")
        }
        self.id = id
        self.name = resort["name"] as? String ?? id
        self.attribution = resort["attribution"] as? String
        var colors = DifficultyColors.european
        if let scheme = resort["difficulty_colors"] {
            guard let known = DifficultyColors.schemes.first(where: { $0.scheme == scheme as? String }) else {
                throw GeoJSONError("resort.difficulty_colors must be one of \(DifficultyColors.schemes.map(\.scheme).joined(separator: ", "))")
            }
            colors = known
        }
        var boundary: [Polygon] = []
        var base: GeoPoint?
        var ways: [SkiWay] = []
        var areas: [PisteArea] = []
        func withAltitude(_ point: GeoPoint) -> GeoPoint {
            guard point.alt == nil, let altitude = elevation?.elevation(at: point) else { return point }
            return GeoPoint(lat: point.lat, lon: point.lon, alt: altitude)
        }
        func difficulty(_ properties: [String: String], _ index: Int, _ name: String) throws(GeoJSONError) -> Difficulty? {
            guard let raw = properties["piste:difficulty"] else { return nil }
            guard let difficulty = Difficulty(rawValue: raw) else {
                throw GeoJSONError("features[\(index)] (\(name)): piste:difficulty '\(raw)' is not one of \(Difficulty.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return difficulty
        }
        for (index, feature) in features.enumerated() {
            let properties = feature.properties
            let name = properties["name"] ?? "unnamed"
            switch feature.geometry {
            case .polygon, .multiPolygon:
                if properties["landuse"] == "winter_sports" {
                    boundary += feature.geometry.polygons
                } else if properties["piste:type"] != nil {
                    let rating = try difficulty(properties, index, name)
                    areas += feature.geometry.polygons.map { PisteArea(name: name, difficulty: rating, polygon: $0) }
                }
            case let .point(point) where properties["gondola:base"] == "yes":
                base = withAltitude(point)
            case let .lineString(line):
                var coordinates = line.map(withAltitude)
                if let aerialway = properties["aerialway"] {
                    if let first = coordinates.first?.alt, let last = coordinates.last?.alt, first > last { coordinates.reverse() }
                    ways.append(SkiWay(kind: .lift, name: name, difficulty: nil, aerialway: aerialway, coordinates: coordinates))
                } else if properties["piste:type"] != nil {
                    let rating = try difficulty(properties, index, name)
                    if let first = coordinates.first?.alt, let last = coordinates.last?.alt, first < last { coordinates.reverse() }
                    ways.append(SkiWay(kind: .piste, name: name, difficulty: rating, aerialway: nil, coordinates: coordinates))
                }
            default:
                continue
            }
        }
        guard !boundary.isEmpty else { throw GeoJSONError("resort \(id) has no landuse=winter_sports boundary") }
        guard let base else { throw GeoJSONError("resort \(id) has no gondola:base=yes point") }
        self.boundary = boundary
        self.base = base
        self.ways = ways
        self.areas = areas
        self.graph = SkiGraph(ways: ways, colors: colors)
    }

    /// Elevation of the base.
    public var baseElevation: Double { base.alt ?? 0 }
}
