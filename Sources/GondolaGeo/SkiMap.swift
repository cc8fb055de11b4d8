import Foundation

/// Piste difficulty as OpenStreetMap tags it (`piste:difficulty`), easiest first.
public enum Difficulty: String, Sendable, CaseIterable, Comparable {
    case novice, easy, intermediate, advanced, expert, freeride

    public static func < (lhs: Difficulty, rhs: Difficulty) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// Colours of the difficulties on the map (CSS hex).
public struct DifficultyColors: Sendable, Equatable {
    public var colors: [Difficulty: String]

    public init(_ colors: [Difficulty: String]) { self.colors = colors }

    public func color(for difficulty: Difficulty) -> String { colors[difficulty] ?? "#808080" }

    /// Europe: green, blue, red, black; freeride orange.
    public static let european = DifficultyColors([
        .novice: "#2e9e44", .easy: "#1f6fd1", .intermediate: "#d42a2a", .advanced: "#111111",
        .expert: "#111111", .freeride: "#f08a24",
    ])
    /// North America: green circle, blue square, black diamond; freeride orange.
    public static let northAmerican = DifficultyColors([
        .novice: "#2e9e44", .easy: "#2e9e44", .intermediate: "#1f6fd1", .advanced: "#111111",
        .expert: "#111111", .freeride: "#f08a24",
    ])
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
    public var skiing: [Difficulty: Double] = [.novice: 3.5, .easy: 5, .intermediate: 7, .advanced: 8, .expert: 7, .freeride: 5]
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
/// Lines are joined into nodes where their endpoints lie within `snapMetres`;
/// pistes run downhill only, lifts uphill only; nodes within `walkMetres` of each
/// other are linked by walks both ways. Cost is time (see `SkiSpeeds`).
public struct SkiGraph: Sendable {
    struct Edge: Sendable {
        let to: Int
        /// Index into `ways`, or nil for a walk.
        let way: Int?
        let seconds: Double
    }

    public let ways: [SkiWay]
    public let nodes: [GeoPoint]
    public let speeds: SkiSpeeds
    public let colors: DifficultyColors
    private let edges: [[Edge]]

    public init(ways: [SkiWay], speeds: SkiSpeeds = SkiSpeeds(), colors: DifficultyColors = .european,
                snapMetres: Double = 30, walkMetres: Double = 150) {
        self.ways = ways
        self.speeds = speeds
        self.colors = colors
        var nodes: [GeoPoint] = []
        func node(for point: GeoPoint) -> Int {
            if let existing = nodes.firstIndex(where: { Geodesy.distance($0, point) <= snapMetres }) { return existing }
            nodes.append(point)
            return nodes.count - 1
        }
        var edges: [[Edge]] = []
        func addEdge(from: Int, _ edge: Edge) {
            while edges.count <= max(from, edge.to) { edges.append([]) }
            edges[from].append(edge)
        }
        for (index, way) in ways.enumerated() {
            let from = node(for: way.coordinates.first!)
            let to = node(for: way.coordinates.last!)
            guard from != to else { continue }
            addEdge(from: from, Edge(to: to, way: index, seconds: Self.seconds(for: way, speeds: speeds)))
        }
        for a in nodes.indices {
            for b in nodes.indices where a != b {
                let distance = Geodesy.distance(nodes[a], nodes[b])
                guard distance <= walkMetres else { continue }
                addEdge(from: a, Edge(to: b, way: nil, seconds: Self.walkSeconds(from: nodes[a], to: nodes[b], speeds: speeds)))
            }
        }
        while edges.count < nodes.count { edges.append([]) }
        self.nodes = nodes
        self.edges = edges
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

    /// The quickest route from `from` to `to` using pistes no harder than
    /// `maxDifficulty`; each end walks to its nearest node. Nil when there is none.
    public func route(from: GeoPoint, to: GeoPoint, maxDifficulty: Difficulty = .freeride) -> Route? {
        guard let start = nearestNode(to: from), let goal = nearestNode(to: to) else { return nil }
        guard let path = shortestPath(from: start, to: goal, maxDifficulty: maxDifficulty) else { return nil }
        var legs: [RouteLeg] = []
        if Geodesy.distance(from, nodes[start]) > 1 { legs.append(walkLeg([from, nodes[start]])) }
        for edge in path {
            if let way = edge.way {
                let way = ways[way]
                legs.append(RouteLeg(
                    kind: way.kind, name: way.name, difficulty: way.difficulty,
                    color: way.difficulty.map(colors.color(for:)), coordinates: way.coordinates,
                    distance: way.length, duration: edge.seconds))
            } else {
                legs.append(walkLeg([legs.last?.coordinates.last ?? nodes[start], nodes[edge.to]]))
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
                if let way = edge.way, let difficulty = ways[way].difficulty, difficulty > maxDifficulty { continue }
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

/// A resort loaded from GeoJSON: boundary, base, lifts and pistes, and its routing graph.
///
/// The collection carries a foreign member `"resort": {"id", "name"}`; features are
/// pistes (`LineString` with `piste:type` and `piste:difficulty`), lifts (`LineString`
/// with `aerialway`), the boundary (`Polygon`/`MultiPolygon` with
/// `landuse=winter_sports`) and the base (`Point` with `gondola:base=yes`). Pistes
/// are oriented downhill and lifts uphill by the altitude of their ends (from the
/// geometry, else the DEM); lines without altitude keep their drawn direction, as
/// OpenStreetMap draws pistes downhill and lifts uphill.
public struct SkiResort: Sendable {
    public let id: String
    public let name: String
    public let boundary: [Polygon]
    public let base: GeoPoint
    public let graph: SkiGraph

    public var ways: [SkiWay] { graph.ways }

    public init(geoJSON data: Data, elevation: ElevationGrid? = nil, colors: DifficultyColors = .european) throws(GeoJSONError) {
        let (features, members) = try GeoJSON.features(from: data)
        guard let resort = members["resort"] as? [String: Any], let id = resort["id"] as? String, !id.isEmpty else {
            throw GeoJSONError("the FeatureCollection needs a \"resort\" member with an \"id\"")
        }
        self.id = id
        self.name = resort["name"] as? String ?? id
        var boundary: [Polygon] = []
        var base: GeoPoint?
        var ways: [SkiWay] = []
        func withAltitude(_ point: GeoPoint) -> GeoPoint {
            guard point.alt == nil, let altitude = elevation?.elevation(at: point) else { return point }
            return GeoPoint(lat: point.lat, lon: point.lon, alt: altitude)
        }
        for (index, feature) in features.enumerated() {
            let properties = feature.properties
            switch feature.geometry {
            case .polygon, .multiPolygon:
                if properties["landuse"] == "winter_sports" { boundary += feature.geometry.polygons }
            case let .point(point) where properties["gondola:base"] == "yes":
                base = withAltitude(point)
            case let .lineString(line):
                let name = properties["name"] ?? "unnamed"
                var coordinates = line.map(withAltitude)
                if let aerialway = properties["aerialway"] {
                    if let first = coordinates.first?.alt, let last = coordinates.last?.alt, first > last { coordinates.reverse() }
                    ways.append(SkiWay(kind: .lift, name: name, difficulty: nil, aerialway: aerialway, coordinates: coordinates))
                } else if properties["piste:type"] != nil {
                    guard let raw = properties["piste:difficulty"], let difficulty = Difficulty(rawValue: raw) else {
                        throw GeoJSONError("features[\(index)] (\(name)): piste:difficulty must be one of \(Difficulty.allCases.map(\.rawValue).joined(separator: ", "))")
                    }
                    if let first = coordinates.first?.alt, let last = coordinates.last?.alt, first < last { coordinates.reverse() }
                    ways.append(SkiWay(kind: .piste, name: name, difficulty: difficulty, aerialway: nil, coordinates: coordinates))
                }
            default:
                continue
            }
        }
        guard !boundary.isEmpty else { throw GeoJSONError("resort \(id) has no landuse=winter_sports boundary") }
        guard let base else { throw GeoJSONError("resort \(id) has no gondola:base=yes point") }
        self.boundary = boundary
        self.base = base
        self.graph = SkiGraph(ways: ways, colors: colors)
    }

    /// Elevation of the base.
    public var baseElevation: Double { base.alt ?? 0 }
}
