import Foundation

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
                throw GeoJSONError(
                    "features[\(index)] (\(name)): piste:difficulty '\(raw)' is not one of \(Difficulty.allCases.map(\.rawValue).joined(separator: ", "))"
                )
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
