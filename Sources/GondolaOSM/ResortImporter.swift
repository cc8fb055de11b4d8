import Foundation
import GondolaGeo

/// What an import read, kept, skipped and why: the counts it prints and tests check.
public struct ResortImportReport: Sendable, Equatable {
    public var format = ""
    public var nodes = 0, ways = 0, relations = 0
    /// Lifts kept, by `aerialway`.
    public var lifts: [String: Int] = [:]
    /// Piste lines kept, by difficulty (`unrated` for none).
    public var pistes: [String: Int] = [:]
    /// Piste areas (`area=yes`) kept for the map, by difficulty.
    public var pisteAreas: [String: Int] = [:]
    /// Piste lines that took their piste tags from a route relation they belong to.
    public var pistesFromRelations = 0
    /// What was left out, by reason (`aerialway=pylon node`, `piste:type=nordic`, `proposed:aerialway`…).
    public var skipped: [String: Int] = [:]
    /// Where the boundary came from.
    public var boundary = ""
    /// Lifts whose middle lies outside the boundary.
    public var liftsOutsideBoundary = 0
    /// Positions of lifts and pistes with an altitude, by source (`dem`, `ele`), and without (`none`).
    public var altitudes: [String: Int] = [:]
    /// Names of the ways a skier at the base cannot reach, and of those with no way back to it.
    public var notReachedFromBase: [String] = []
    public var noWayBackToBase: [String] = []

    /// The report as the command prints it.
    public var lines: [String] {
        func counts(_ table: [String: Int], order: [String] = []) -> String {
            let keys = order.filter { table[$0] != nil } + table.keys.filter { !order.contains($0) }.sorted()
            return keys.isEmpty ? "none" : keys.map { "\($0) \(table[$0]!)" }.joined(separator: ", ")
        }
        let difficulties = Difficulty.allCases.map(\.rawValue) + ["unrated"]
        var lines = [
            "read: \(format), \(nodes) nodes, \(ways) ways, \(relations) relations",
            "lifts: \(lifts.values.reduce(0, +)) (\(counts(lifts)))",
            "pistes: \(pistes.values.reduce(0, +)) lines (\(counts(pistes, order: difficulties))), \(pistesFromRelations) of them tagged through route relations",
            "piste areas: \(pisteAreas.values.reduce(0, +)) (\(counts(pisteAreas, order: difficulties))), drawn on the map, not routed",
            "skipped: \(counts(skipped))",
            "boundary: \(boundary)" + (liftsOutsideBoundary > 0 ? "; \(liftsOutsideBoundary) lifts lie outside it" : ""),
            "altitude: "
                + (altitudes["none", default: 0] == altitudes.values.reduce(0, +)
                    ? "none (no --dem and no ele tags): map.elevation answers 108 here, map switching uses the boundary only, routes keep the drawn directions and report no climb"
                    : counts(altitudes, order: ["dem", "ele", "none"]) + " positions"),
        ]
        func names(_ list: [String]) -> String {
            list.isEmpty ? "none" : "\(list.count): " + list.prefix(8).joined(separator: ", ") + (list.count > 8 ? ", …" : "")
        }
        lines.append("not reachable from the base: \(names(notReachedFromBase)); no way back to the base: \(names(noWayBackToBase))")
        return lines
    }
}

/// A resort read from an OpenStreetMap export, ready to be written as the hub's resort file.
public struct ImportedResort: Sendable {
    public let id: String
    public let name: String
    public let boundary: [Polygon]
    public let base: GeoPoint
    public let lifts: [SkiWay]
    public let pistes: [SkiWay]
    public let areas: [PisteArea]
    public let colors: DifficultyColors
    public let report: ResortImportReport

    /// The licence notice every file made from OpenStreetMap data carries.
    public static let attribution = "© OpenStreetMap contributors, ODbL 1.0"

    /// The resort as the GeoJSON the hub loads (`SkiResort(geoJSON:)`).
    public func geoJSON() -> Data {
        ResortFileWriter.document(self)
    }
}

/// Turns an OpenStreetMap export into a resort: lifts (`aerialway=*` but stations,
/// pylons, goods lines and zip lines), downhill pistes (lines and `area=yes` areas,
/// with the tags of the route relations they belong to), the boundary
/// (`landuse=winter_sports` closed ways and multipolygons, else the area around the
/// lifts and pistes), altitudes from `ele` tags or a DEM, and the base.
public enum ResortImporter {
    /// Lifecycle prefixes: a feature that is planned, being built or gone.
    static let lifecyclePrefixes = ["proposed:", "planned:", "construction:", "disused:", "abandoned:", "razed:", "demolished:", "removed:", "was:"]
    /// `aerialway` values that carry no skiers, or are parts of a lift.
    static let notLifts: Set<String> = ["station", "pylon", "goods", "zip_line", "no", "construction", "proposed"]
    /// How far around the lifts and pistes the boundary reaches when the file has none.
    public static let surroundingMargin = 200.0

    public static func importResort(
        _ extract: OSMExtract, id: String, name: String?, elevation: ElevationGrid?,
        file: String
    ) throws(OSMImportError) -> ImportedResort {
        var report = ResortImportReport()
        report.format = extract.format
        report.nodes = extract.nodeCount
        report.ways = extract.ways.count + extract.areas.count
        report.relations = extract.relations.count
        let waysByID = extract.waysByID()

        func located(_ way: OSMWay, _ what: String) throws(OSMImportError) -> [GeoPoint] {
            if way.points.count >= 2 { return way.points }
            if let missing = extract.incompleteWays[way.id.id] {
                throw OSMImportError("\(way.id) (\(what)): its node \(missing) is not in the file; export the way with all of its nodes")
            }
            throw OSMImportError("\(way.id) (\(what)) has fewer than two positions")
        }
        func isClosedArea(_ way: OSMWay) -> Bool { way.isClosed && way.tags["area"] == "yes" }

        // Route relations lend their piste tags to their member ways.
        var routeTags: [Int64: [String: String]] = [:]
        var boundaryRelations: [OSMRelation] = []
        for relation in extract.relations {
            if relation.tags["landuse"] == "winter_sports", ["multipolygon", "boundary"].contains(relation.tags["type"] ?? "") {
                boundaryRelations.append(relation)
                continue
            }
            guard let type = relation.tags["piste:type"] else { continue }
            guard type == "downhill" else {
                report.skipped["relation piste:type=\(type)", default: 0] += 1
                continue
            }
            for member in relation.members where member.reference.kind == .way {
                guard waysByID[member.reference.id] != nil else {
                    throw OSMImportError(
                        "relation \(relation.id) (\(label(relation.tags))): member \(member.reference) is not in the file; export the relation with its members"
                    )
                }
                if routeTags[member.reference.id] == nil { routeTags[member.reference.id] = relation.tags }
            }
        }

        var lifts: [SkiWay] = []
        var pistes: [SkiWay] = []
        var areas: [PisteArea] = []
        var boundary: [Polygon] = []
        var boundarySources: [String] = []
        for way in extract.ways {
            let tags = way.tags
            if let lifecycle = lifecycleKey(tags) {
                report.skipped[lifecycle, default: 0] += 1
                continue
            }
            if tags["landuse"] == "winter_sports", way.isClosed {
                boundary.append(Polygon(outline: try located(way, label(tags))))
                boundarySources.append("\(way.id) \"\(label(tags))\"" + (tags["boundary"].map { " (also boundary=\($0))" } ?? ""))
            }
            if let aerialway = tags["aerialway"] {
                guard !notLifts.contains(aerialway) else {
                    report.skipped["aerialway=\(aerialway) way", default: 0] += 1
                    continue
                }
                let points = try located(way, label(tags))
                lifts.append(
                    SkiWay(
                        kind: .lift, name: tags["name"] ?? "unnamed \(aerialway.replacingOccurrences(of: "_", with: " "))",
                        difficulty: nil, aerialway: aerialway, coordinates: points))
                report.lifts[aerialway, default: 0] += 1
                continue
            }
            let relationTags = routeTags[way.id.id]
            let ownType = tags["piste:type"]
            guard ownType != nil || relationTags != nil else { continue }
            if let ownType, ownType != "downhill" {
                report.skipped["piste:type=\(ownType)", default: 0] += 1
                continue
            }
            let inherited = ownType == nil
            if inherited { report.pistesFromRelations += 1 }
            let name =
                (inherited ? nil : tags["piste:name"] ?? tags["name"])
                ?? relationTags?["piste:name"] ?? relationTags?["name"] ?? tags["piste:name"] ?? tags["name"] ?? "unnamed"
            let rawDifficulty = tags["piste:difficulty"] ?? relationTags?["piste:difficulty"]
            let difficulty = rawDifficulty.flatMap(Difficulty.init(rawValue:))
            if let rawDifficulty, difficulty == nil { report.skipped["piste:difficulty=\(rawDifficulty) (kept unrated)", default: 0] += 1 }
            let key = difficulty?.rawValue ?? "unrated"
            let points = try located(way, name)
            if isClosedArea(way) {
                areas.append(PisteArea(name: name, difficulty: difficulty, polygon: Polygon(outline: points)))
                report.pisteAreas[key, default: 0] += 1
            } else {
                pistes.append(SkiWay(kind: .piste, name: name, difficulty: difficulty, aerialway: nil, coordinates: points))
                report.pistes[key, default: 0] += 1
            }
        }
        for node in extract.taggedNodes {
            if let aerialway = node.tags["aerialway"] { report.skipped["aerialway=\(aerialway) node", default: 0] += 1 }
        }
        for area in extract.areas where area.tags["landuse"] == "winter_sports" {
            boundary += area.polygons
            boundarySources.append("\(area.id) \"\(label(area.tags))\"")
        }
        for relation in boundaryRelations {
            var outer: [OSMWay] = []
            var inner: [OSMWay] = []
            for member in relation.members where member.reference.kind == .way {
                guard let way = waysByID[member.reference.id] else {
                    throw OSMImportError(
                        "relation \(relation.id) (\(label(relation.tags))): member \(member.reference) is not in the file; export the relation with its members"
                    )
                }
                _ = try located(way, "member of relation \(relation.id)")
                if member.role == "inner" { inner.append(way) } else { outer.append(way) }
            }
            let name = "relation \(relation.id) (\(label(relation.tags)))"
            let polygons = RingAssembly.polygons(
                outer: try RingAssembly.rings(of: outer, relation: name),
                inner: try RingAssembly.rings(of: inner, relation: name))
            boundary += polygons
            boundarySources.append("multipolygon \(name), \(outer.count) outer ways joined into \(polygons.count) ring(s)")
        }

        guard !lifts.isEmpty || !pistes.isEmpty else {
            throw OSMImportError("\(file) has no lift (aerialway=*) and no downhill piste (piste:type=downhill): not a ski resort export")
        }

        // Altitudes: the node's ele tag, else the DEM.
        func withAltitude(_ points: [GeoPoint]) -> [GeoPoint] {
            points.map { point in
                if point.alt != nil {
                    report.altitudes["ele", default: 0] += 1
                    return point
                }
                if let value = elevation?.elevation(at: point) {
                    report.altitudes["dem", default: 0] += 1
                    return GeoPoint(lat: point.lat, lon: point.lon, alt: value)
                }
                report.altitudes["none", default: 0] += 1
                return point
            }
        }
        lifts = lifts.map {
            SkiWay(kind: $0.kind, name: $0.name, difficulty: nil, aerialway: $0.aerialway, coordinates: withAltitude($0.coordinates))
        }
        pistes = pistes.map {
            SkiWay(kind: $0.kind, name: $0.name, difficulty: $0.difficulty, aerialway: nil, coordinates: withAltitude($0.coordinates))
        }

        let allPoints = (lifts + pistes).flatMap(\.coordinates)
        if boundary.isEmpty {
            guard let area = SurroundingArea.polygon(around: allPoints, margin: surroundingMargin) else {
                throw OSMImportError("\(file): the lifts and pistes span no area to make a boundary from")
            }
            boundary = [area]
            report.boundary = "none in the file (no landuse=winter_sports); using the area within \(Int(surroundingMargin)) m of the lifts and pistes"
        } else {
            report.boundary = boundarySources.joined(separator: "; ")
        }
        report.liftsOutsideBoundary =
            lifts.filter { lift in
                let middle = lift.point(atDistance: lift.length / 2)
                return !boundary.contains { $0.contains(middle) }
            }.count

        let base = chooseBase(lifts: lifts, pistes: pistes)
        let colors = DifficultyColors.customary(at: base)
        let graph = SkiGraph(ways: lifts + pistes, colors: colors)
        let (notReached, noWayBack) = graph.unreachable(from: base)
        let ways = lifts + pistes
        report.notReachedFromBase = notReached.map { ways[$0].name }
        report.noWayBackToBase = noWayBack.map { ways[$0].name }

        let resortName = name ?? boundaryName(extract) ?? id
        return ImportedResort(
            id: id, name: resortName, boundary: boundary, base: base, lifts: lifts, pistes: pistes, areas: areas,
            colors: colors, report: report)
    }

    /// The base: with altitudes, the lowest bottom station; without, the bottom
    /// station where most pistes end (runs come back to the village).
    static func chooseBase(lifts: [SkiWay], pistes: [SkiWay]) -> GeoPoint {
        let starts = lifts.map { $0.coordinates.first! }
        guard !starts.isEmpty else { return pistes.map { $0.coordinates.last! }.min { ($0.alt ?? 0) < ($1.alt ?? 0) }! }
        if starts.allSatisfy({ $0.alt != nil }) { return starts.min { $0.alt! < $1.alt! }! }
        let ends = pistes.map { $0.coordinates.last! }
        func arrivals(_ point: GeoPoint) -> Int { ends.filter { Geodesy.distance($0, point) <= 200 }.count }
        return starts.max { arrivals($0) < arrivals($1) }!
    }

    static func lifecycleKey(_ tags: [String: String]) -> String? {
        for key in tags.keys {
            for prefix in lifecyclePrefixes where key.hasPrefix(prefix) {
                let rest = key.dropFirst(prefix.count)
                if rest == "aerialway" || rest == "piste:type" { return key }
            }
        }
        return nil
    }

    static func label(_ tags: [String: String]) -> String { tags["piste:name"] ?? tags["name"] ?? "unnamed" }

    static func boundaryName(_ extract: OSMExtract) -> String? {
        extract.ways.first { $0.tags["landuse"] == "winter_sports" && $0.tags["name"] != nil }?.tags["name"]
            ?? extract.relations.first { $0.tags["landuse"] == "winter_sports" && $0.tags["name"] != nil }?.tags["name"]
            ?? extract.areas.first { $0.tags["landuse"] == "winter_sports" && $0.tags["name"] != nil }?.tags["name"]
    }
}
