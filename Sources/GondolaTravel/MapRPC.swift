import GondolaGeo
import GondolaHub
import GondolaProtocol

/// The `location.*` and `map.*` RPC methods.
struct MapRPC: Sendable {
    let locations: LocationService
    let resorts: ResortCatalog

    /// How far outside a resort's boundary a route may start or end.
    static let routeReach = 2000.0

    func register(in registrations: inout NodeRegistrations) {
        registrations.register("location.update") { context, data in
            try locations.update(user: context.user, data: data)
        }
        registrations.register("location.visibility") { context, data in
            let mode = try RequestFields(data).choice("mode", Visibility.self)
            try await locations.setVisibility(user: context.user, mode)
            return ["mode": .string(mode.rawValue)]
        }
        registrations.register("map.resorts") { _, _ in
            ["resorts": .array(resorts.resorts.map(resorts.summary))]
        }
        registrations.register("map.resort") { _, data in
            let id = try RequestFields(data).string("id", maxLength: 64)
            guard let document = resorts.mapDocument(id) else { throw HubError.badRequest("id: unknown resort '\(id)'") }
            return .raw(document)
        }
        registrations.register("map.elevation") { _, data in
            let point = try Self.point(RequestFields(data))
            guard let elevation = resorts.selector.elevation.lazy.compactMap({ $0.elevation(at: point) }).first else {
                throw HubError.notAvailable("no elevation data at \(point.lat), \(point.lon)")
            }
            return ["lat": .double(point.lat), "lon": .double(point.lon), "elevation": TravelJSON.metres(elevation)]
        }
        registrations.register("map.route") { context, data in
            let fields = try RequestFields(data)
            let to = try located(fields.object("to"))
            let from: GeoPoint
            if let given = try fields.optionalObject("from") {
                from = try located(given)
            } else if let last = locations.lastPosition(of: context.user) {
                from = last
            } else {
                throw HubError.badRequest("from is required until a position was sent with location.update")
            }
            let maxDifficulty: Difficulty = fields.has("max_difficulty") ? try fields.choice("max_difficulty", Difficulty.self) : .hardest
            guard let resort = nearestResort(to: from, and: to) else {
                throw HubError.notAvailable("no resort within \(Int(Self.routeReach)) m of both ends")
            }
            guard let route = resort.graph.route(from: from, to: to, maxDifficulty: maxDifficulty) else {
                throw HubError.notAvailable("no route in \(resort.name) to that point with pistes up to \(maxDifficulty.rawValue)")
            }
            return ResortCatalog.routeJSON(route, colors: resort.graph.colors)
        }
    }

    /// The resort whose boundary is closest to both ends, if both are within reach of it.
    private func nearestResort(to a: GeoPoint, and b: GeoPoint) -> SkiResort? {
        func distance(_ resort: SkiResort, _ point: GeoPoint) -> Double {
            resort.boundary.contains { $0.contains(point) } ? 0 : resort.boundary.map { $0.distanceToBoundary(point) }.min() ?? .infinity
        }
        return resorts.resorts
            .map { (resort: $0, reach: max(distance($0, a), distance($0, b))) }
            .filter { $0.reach <= Self.routeReach }
            .min { $0.reach < $1.reach }?.resort
    }

    /// A point of a route, with its altitude from the elevation grids (walking legs are costed by climb).
    private func located(_ fields: RequestFields) throws(HubError) -> GeoPoint {
        var point = try Self.point(fields)
        point.alt = resorts.selector.altitude(of: point)
        return point
    }

    static func point(_ fields: RequestFields) throws(HubError) -> GeoPoint {
        GeoPoint(lat: try fields.number("lat", in: -90...90), lon: try fields.number("lon", in: -180...180))
    }
}
