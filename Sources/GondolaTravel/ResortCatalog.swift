import Foundation
import GondolaGeo
import GondolaHub
import GondolaProtocol

/// Why the resorts folder could not be loaded, naming the file.
public struct ResortLoadError: Error, Sendable, CustomStringConvertible {
    public let description: String
}

/// The resorts a server knows, loaded at start from a folder: `<name>.geojson`
/// (boundary, base, lifts, pistes) with an optional `<name>.asc` elevation grid
/// beside it. Answers map selection, the ski map as GeoJSON, elevations and routes.
public struct ResortCatalog: Sendable {
    /// Colour of lifts on the map (pistes take their difficulty's colour).
    public static let liftColor = "#4a4a4a"

    public let resorts: [SkiResort]
    public let selector: MapSelector
    private let mapDocuments: [String: RawJSON]

    /// Loads every resort in `folder`; a missing folder gives an empty catalog.
    public init(folder: String) throws(ResortLoadError) {
        let url = URL(fileURLWithPath: folder, isDirectory: true)
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: url.path).filter { $0.hasSuffix(".geojson") }.sorted()
        } catch {
            names = []
        }
        var resorts: [SkiResort] = []
        var grids: [ElevationGrid] = []
        for name in names {
            let file = url.appendingPathComponent(name)
            let gridFile = file.deletingPathExtension().appendingPathExtension("asc")
            var grid: ElevationGrid?
            if FileManager.default.fileExists(atPath: gridFile.path) {
                do {
                    grid = try ElevationGrid(contentsOf: gridFile)
                } catch {
                    throw ResortLoadError(description: "resort elevation \(gridFile.path): \(error)")
                }
            }
            do {
                let resort = try SkiResort(geoJSON: try Data(contentsOf: file), elevation: grid)
                guard !resorts.contains(where: { $0.id == resort.id }) else {
                    throw ResortLoadError(description: "resort \(file.path): id '\(resort.id)' is used twice")
                }
                resorts.append(resort)
                if let grid { grids.append(grid) }
            } catch let error as ResortLoadError {
                throw error
            } catch {
                throw ResortLoadError(description: "resort \(file.path): \(error)")
            }
        }
        self.init(resorts: resorts, elevation: grids)
    }

    public init(resorts: [SkiResort], elevation: [ElevationGrid] = []) {
        self.resorts = resorts
        self.selector = MapSelector(
            resorts: resorts.map { ResortArea(id: $0.id, boundary: $0.boundary, baseElevation: $0.baseElevation) },
            elevation: elevation)
        var documents: [String: RawJSON] = [:]
        for resort in resorts { documents[resort.id] = RawJSON(Self.featureCollection(resort)) }
        self.mapDocuments = documents
    }

    public func resort(_ id: String) -> SkiResort? { resorts.first { $0.id == id } }

    /// `{"id","name","center":{"lat","lon"},"bbox":[minLon,minLat,maxLon,maxLat]}`.
    /// The ski map of a resort, encoded once at load.
    func mapDocument(_ id: String) -> RawJSON? { mapDocuments[id] }

    static func coordinates(_ points: [GeoPoint]) -> JSON {
        .array(
            points.map { point in
                var position: [JSON] = [.double(point.lon), .double(point.lat)]
                if let alt = point.alt { position.append(TravelJSON.metres(alt)) }
                return .array(position)
            })
    }

    /// Difficulty, colour and pattern of a way as the map shows them.
    static func style(kind: SkiWay.Kind, difficulty: Difficulty?, colors: DifficultyColors) -> WayStyle {
        switch kind {
        case .lift: return WayStyle(difficulty: "lift", color: liftColor, pattern: .solid)
        case .piste:
            let style = colors.style(for: difficulty)
            return WayStyle(difficulty: difficulty?.rawValue, color: style.color, pattern: style.pattern)
        case .walk: return WayStyle(difficulty: nil, color: nil, pattern: nil)
        }
    }

    /// A FeatureCollection: the boundary, the base, every lift and piste with `kind`,
    /// `name`, `difficulty`, `color`, `pattern` and `length` (and `aerialway` for
    /// lifts), then the piste areas (`kind: piste_area`). The `resort` member names
    /// the resort, its bounding box and, when the data has one, its attribution.
    static func featureCollection(_ resort: SkiResort) -> JSON {
        var features: [JSON] = []
        for polygon in resort.boundary {
            features.append([
                "type": "Feature", "properties": ["kind": "boundary", "name": .string(resort.name)],
                "geometry": polygonGeometry(polygon),
            ])
        }
        features.append([
            "type": "Feature", "properties": ["kind": "base", "name": .string(resort.name)],
            "geometry": ["type": "Point", "coordinates": coordinates([resort.base]).arrayFirst],
        ])
        for way in resort.ways {
            var properties: [(key: String, value: JSON)] = [("kind", .string(way.kind.rawValue)), ("name", .string(way.name))]
            properties += style(kind: way.kind, difficulty: way.difficulty, colors: resort.graph.colors).jsonMembers
            properties.append(("length", TravelJSON.metres(way.length)))
            if let aerialway = way.aerialway { properties.append(("aerialway", .string(aerialway))) }
            features.append([
                "type": "Feature", "properties": .object(properties),
                "geometry": ["type": "LineString", "coordinates": coordinates(way.coordinates)],
            ])
        }
        for area in resort.areas {
            let properties: [(key: String, value: JSON)] =
                [("kind", "piste_area"), ("name", .string(area.name))]
                + style(kind: .piste, difficulty: area.difficulty, colors: resort.graph.colors).jsonMembers
            features.append(["type": "Feature", "properties": .object(properties), "geometry": polygonGeometry(area.polygon)])
        }
        var member: [(key: String, value: JSON)] = [("id", .string(resort.id)), ("name", .string(resort.name))]
        let box = BoundingBox(covering: resort.boundary)
        member.append(("bbox", [.double(box.minLon), .double(box.minLat), .double(box.maxLon), .double(box.maxLat)]))
        member.append(("difficulty_colors", .string(resort.graph.colors.scheme)))
        if let attribution = resort.attribution { member.append(("attribution", .string(attribution))) }
        return ["type": "FeatureCollection", "resort": .object(member), "features": .array(features)]
    }

    static func polygonGeometry(_ polygon: Polygon) -> JSON {
        ["type": "Polygon", "coordinates": .array(polygon.rings.map(coordinates))]
    }
}

extension JSON {
    fileprivate var arrayFirst: JSON {
        if case let .array(items) = self, let first = items.first { return first }
        return .null
    }
}

/// How a way is drawn: pistes by difficulty (`null` and the unrated style when the data
/// gives none), lifts as `lift`, walks undrawn.
struct WayStyle: AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("difficulty", "`novice` … `extreme`, `lift`, or null (unrated, or a walk)", orNull: { $0.difficulty }),
        .string("color", "null for a walk", orNull: { $0.color }),
        .string("pattern", "`solid`, `dashed` or `dotted`; null for a walk", orNull: { $0.pattern?.rawValue }),
    ]
    let difficulty: String?
    let color: String?
    let pattern: LinePattern?
}
