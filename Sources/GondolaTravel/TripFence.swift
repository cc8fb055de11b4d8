import GondolaGeo
import GondolaHub
import GondolaProtocol

/// A fence of a trip: a circle, a GeoJSON polygon or multipolygon (holes allowed), or a
/// circle roaming around one member (a guide); the events it reports and the members it
/// concerns. Hosts define it (`fence.create`, or the server API's `fence_create`); the
/// spatial core watches it (`FenceWatch`).
struct TripFence: Sendable, Equatable {
    enum Shape: Sendable, Equatable {
        case circle(center: GeoPoint, radius: Double)
        /// The polygons, with the GeoJSON geometry as it was given (the host page draws it).
        case polygons([Polygon], geometry: JSON)
        /// The circle of `radius` metres around `anchor`'s latest position.
        case roaming(anchor: String, radius: Double)
    }

    let id: String
    let trip: String
    let name: String
    let shape: Shape
    let detects: Set<FenceEventKind>
    /// How long a member stays inside before `inside`, or away before `outside`.
    let dwellMilliseconds: Int64
    /// The members it concerns; nil: every traveller of the trip (not its hosts).
    let users: [String]?
    let createdBy: String
    let createdAt: Int64

    /// The rule the spatial core watches.
    var rule: FenceRule<String, String> {
        let shape: FenceRule<String, String>.Shape =
            switch self.shape {
            case let .circle(center, radius): .fixed(.circle(center: center, radius: radius))
            case let .polygons(polygons, _): .fixed(.polygons(polygons))
            case let .roaming(anchor, radius): .roaming(anchor: anchor, radius: radius)
            }
        return FenceRule(id: id, shape: shape, detects: detects, dwellMilliseconds: dwellMilliseconds, concerns: users.map(Set.init))
    }

    /// The members of its definition, as `fence.create` takes them and the database keeps them.
    var definition: JSON { .object(jsonMembers(Self.definitionMembers)) }
}

extension TripFence: AnswerObject {
    /// A fixed circle.
    struct Circle: AnswerObject {
        static let members: [AnswerMember<Self>] = [
            .number("lat") { $0.center.lat }, .number("lon") { $0.center.lon }, .number("radius", "metres") { $0.radius },
        ]
        let center: GeoPoint
        let radius: Double
    }

    /// A circle around a member.
    struct Roaming: AnswerObject {
        static let members: [AnswerMember<Self>] = [
            .string("user", "the member it follows") { $0.anchor }, .number("radius", "metres") { $0.radius },
        ]
        let anchor: String
        let radius: Double
    }

    /// The members of a definition.
    static let definitionMembers: [AnswerMember<Self>] = [
        .string("name") { $0.name },
        .object(
            "circle", "a fixed circle",
            ifAny: { fence -> Circle? in
                guard case let .circle(center, radius) = fence.shape else { return nil }
                return Circle(center: center, radius: radius)
            }),
        .json(
            "geometry", .object, "a GeoJSON Polygon or MultiPolygon, as given",
            ifAny: { fence -> JSON? in
                guard case let .polygons(_, geometry) = fence.shape else { return nil }
                return geometry
            }),
        .object(
            "roaming", "a circle around a member",
            ifAny: { fence -> Roaming? in
                guard case let .roaming(anchor, radius) = fence.shape else { return nil }
                return Roaming(anchor: anchor, radius: radius)
            }),
        .strings("detect", "of `enter`, `exit`, `inside`, `outside`") { fence in
            FenceEventKind.allCases.filter(fence.detects.contains).map(\.rawValue)
        },
        .integer("dwell_ms", "the stay before `inside`, the absence before `outside`") { $0.dwellMilliseconds },
        .strings("users", "the members it concerns; null: every traveller of the trip", orNull: { $0.users }),
    ]

    static let members: [AnswerMember<Self>] =
        [.string("id") { $0.id }, .string("trip") { $0.trip }] + definitionMembers + [
            .string("created_by") { $0.createdBy }, .integer("created_at", "Unix ms") { $0.createdAt },
        ]
}

/// What a host sends to create a fence (`fence.create`, `fence_create`), checked member by
/// member: exactly one of `circle`, `geometry` and `roaming`; bad geometry is refused
/// naming what is wrong (`FenceGeometry`).
struct FenceDefinition: RequestContract {
    static let maxNameLength = 80
    static let maxCircleRadius = 50_000.0
    static let maxRoamingRadius = 100_000.0
    static let maxDwell: Int64 = 86_400_000
    static let maxUsers = 500

    let trip: String
    let name: String
    let shape: TripFence.Shape
    let detects: Set<FenceEventKind>
    let dwellMilliseconds: Int64
    let users: [String]?

    init(_ fields: RequestFields) throws(HubError) {
        trip = try fields.noting("a trip the caller hosts").string("trip", maxLength: 64)
        name = try fields.text("name", maxLength: Self.maxNameLength)
        shape = try Self.shape(fields)
        let names = try fields.noting("of `enter`, `exit`, `inside`, `outside`; default `[enter, exit]`").optionalStringArray(
            "detect", maxCount: FenceEventKind.allCases.count, maxLength: 16)
        if let names {
            var detects: Set<FenceEventKind> = []
            for name in names {
                guard let kind = FenceEventKind(rawValue: name) else {
                    throw .badRequest("detect: '\(name)' is not one of enter, exit, inside, outside")
                }
                detects.insert(kind)
            }
            guard !detects.isEmpty else { throw .badRequest("detect must name at least one event") }
            self.detects = detects
        } else {
            detects = [.enter, .exit]
        }
        dwellMilliseconds = try fields.noting("the stay before `inside`, the absence before `outside`").integer(
            "dwell_ms", in: 0...Self.maxDwell, default: 0)
        users = try fields.noting("the members it concerns; default every traveller of the trip").optionalStringArray(
            "users", maxCount: Self.maxUsers, maxLength: 64
        ).map { Array(Set($0)).sorted() }
    }

    private static func shape(_ fields: RequestFields) throws(HubError) -> TripFence.Shape {
        let choices = "give one of circle, geometry or roaming"
        let circle: RequestFields.Reader<TripFence.Shape> = { fields throws(HubError) in
            let circle = try fields.noting("`{lat, lon, radius}`: radius in m").object("circle")
            let center = GeoPoint(lat: try circle.number("lat", in: -90...90), lon: try circle.number("lon", in: -180...180))
            return TripFence.Shape.circle(center: center, radius: try circle.number("radius", in: 1...maxCircleRadius))
        }
        let geometry: RequestFields.Reader<TripFence.Shape> = { fields throws(HubError) in
            let geometry = try fields.noting(
                "a GeoJSON `Polygon` or `MultiPolygon` (holes allowed): rings closed, counterclockwise outlines, clockwise holes, no self-crossing, at most 1,000 positions"
            ).anyValue("geometry", kind: .object)
            return TripFence.Shape.polygons(try FenceGeoJSON.polygons(geometry), geometry: geometry)
        }
        let roaming: RequestFields.Reader<TripFence.Shape> = { fields throws(HubError) in
            let roaming = try fields.noting("`{user, radius}`: the circle around a member (a guide), radius in m").object("roaming")
            return TripFence.Shape.roaming(
                anchor: try roaming.string("user", maxLength: 64), radius: try roaming.number("radius", in: 1...maxRoamingRadius))
        }
        return try fields.oneOf(
            ["circle": circle, "geometry": geometry, "roaming": roaming], ifNone: choices,
            ifSeveral: { "\(choices), not \($0.joined(separator: " and "))" })
    }
}

/// Reads a fence's GeoJSON geometry from the request's JSON and checks it.
enum FenceGeoJSON {
    /// The polygons of a `Polygon` or `MultiPolygon` geometry; a precise 107 when the JSON is
    /// not one, or when a ring fails `FenceGeometry`'s checks.
    static func polygons(_ geometry: JSON) throws(HubError) -> [Polygon] {
        guard case let .object(members) = plain(geometry) else { throw .badRequest("geometry must be a GeoJSON object") }
        let type = members.first { $0.key == "type" }.map { plain($0.value) }
        let coordinates = members.first { $0.key == "coordinates" }.map { plain($0.value) }
        let polygons: [[[GeoPoint]]]
        switch type {
        case .string("Polygon")?: polygons = [try rings(coordinates, path: "geometry.coordinates")]
        case .string("MultiPolygon")?:
            guard case let .array(items)? = coordinates, !items.isEmpty else {
                throw .badRequest("geometry.coordinates must be a non-empty array of polygons")
            }
            var list: [[[GeoPoint]]] = []
            for (index, item) in items.enumerated() { list.append(try rings(plain(item), path: "geometry.coordinates[\(index)]")) }
            polygons = list
        default: throw .badRequest("geometry.type must be Polygon or MultiPolygon, got \(type.map { "\($0.text)" } ?? "nothing")")
        }
        let total = polygons.reduce(0) { $0 + $1.reduce(0) { $0 + $1.count } }
        guard total <= FenceGeometry.maxVertices else {
            throw .badRequest("geometry has \(total) positions, more than \(FenceGeometry.maxVertices)")
        }
        for (index, rings) in polygons.enumerated() {
            if let problem = FenceGeometry.problem(of: rings) {
                throw .badRequest(polygons.count == 1 ? "geometry: \(problem)" : "geometry, polygon \(index): \(problem)")
            }
        }
        return polygons.map { Polygon(rings: $0) }
    }

    private static func rings(_ value: JSON?, path: String) throws(HubError) -> [[GeoPoint]] {
        guard case let .array(rings)? = value, !rings.isEmpty else { throw .badRequest("\(path) must be a non-empty array of rings") }
        var result: [[GeoPoint]] = []
        for (index, ring) in rings.enumerated() {
            guard case let .array(positions) = plain(ring) else { throw .badRequest("\(path)[\(index)] must be an array of positions") }
            guard positions.count <= FenceGeometry.maxVertices else {
                throw .badRequest("\(path)[\(index)] has \(positions.count) positions, more than \(FenceGeometry.maxVertices)")
            }
            var points: [GeoPoint] = []
            for (offset, position) in positions.enumerated() {
                guard case let .array(values) = plain(position), values.count == 2 || values.count == 3, let lon = number(values[0]),
                    let lat = number(values[1])
                else { throw .badRequest("\(path)[\(index)][\(offset)] must be [longitude, latitude]") }
                points.append(GeoPoint(lat: lat, lon: lon))
            }
            result.append(points)
        }
        return result
    }

    /// `value` with a kept raw text read.
    private static func plain(_ value: JSON) -> JSON {
        if case let .raw(raw) = value { return raw.value }
        return value
    }

    private static func number(_ value: JSON) -> Double? {
        switch plain(value) {
        case let .int(int): Double(int)
        case let .double(double): double
        default: nil
        }
    }
}
