import GondolaGeo
import GondolaHub
import GondolaProtocol

/// The `map.*` RPC methods: the resorts, their maps, elevation and routes.
struct MapService: Sendable {
    let locations: LocationService
    let resorts: ResortCatalog

    /// How far outside a resort's boundary a route may start or end.
    static let routeReach = 2000.0

    func registerRPC(in registrations: inout NodeRegistrations) {
        registrations.register(
            "map.resorts", NoFields.self, ResortList.self,
            rules: "every resort the hub loaded", mapResorts)
        registrations.register(
            "map.resort", ResortReference.self, ResortMap.self,
            rules: "107 for an unknown resort", mapResort)
        registrations.register(
            "map.elevation", MapPoint.self, ElevationAnswer.self, rules: "108 outside every grid", mapElevation)
        registrations.register(
            "map.route", RouteRequest.self, RouteAnswer.self,
            rules:
                "`from` defaults to the caller's last position; `max_difficulty` is one of `novice` … `extreme` (unrated pistes only without it); 108 with a reason when there is no route",
            mapRoute)
    }

    /// Answers `map.resorts`.
    func mapResorts(_: RPCContext, _: NoFields) async throws -> ResortList {
        ResortList(resorts: resorts.resorts)
    }

    /// Answers `map.resort`.
    func mapResort(_: RPCContext, _ request: ResortReference) async throws -> JSON {
        guard let document = resorts.mapDocument(request.id) else { throw HubError.badRequest("id: unknown resort '\(request.id)'") }
        return .raw(document)
    }

    /// Answers `map.elevation`.
    func mapElevation(_: RPCContext, _ request: MapPoint) async throws -> ElevationAnswer {
        let point = request.point
        guard let elevation = resorts.selector.elevation.lazy.compactMap({ $0.elevation(at: point) }).first else {
            throw HubError.notAvailable("no elevation data at \(point.lat), \(point.lon)")
        }
        return ElevationAnswer(point: point, elevation: elevation)
    }

    /// Answers `map.route`.
    func mapRoute(_ context: RPCContext, _ request: RouteRequest) async throws -> RouteAnswer {
        let to = located(request.to)
        let from: GeoPoint
        if let given = request.from {
            from = located(given)
        } else if let last = locations.lastPosition(of: context.user) {
            from = last
        } else {
            throw HubError.badRequest("from is required until a position was sent with location.update")
        }
        guard let resort = nearestResort(to: from, and: to) else {
            throw HubError.notAvailable("no resort within \(Int(Self.routeReach)) m of both ends")
        }
        guard let route = resort.graph.route(from: from, to: to, maxDifficulty: request.maxDifficulty) else {
            throw HubError.notAvailable("no route in \(resort.name) to that point with pistes up to \(request.maxDifficulty.rawValue)")
        }
        return RouteAnswer(route: route, colors: resort.graph.colors)
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
    private func located(_ point: GeoPoint) -> GeoPoint {
        var point = point
        point.alt = resorts.selector.altitude(of: point)
        return point
    }
}

/// `location.visibility`: `{mode}`.
struct VisibilityChange: RequestContract {
    let mode: Visibility
    init(_ fields: RequestFields) throws(HubError) { mode = try fields.choice("mode", Visibility.self) }
}

/// `map.resort`: `{id}`.
struct ResortReference: RequestContract {
    let id: String
    init(_ fields: RequestFields) throws(HubError) { id = try fields.string("id", maxLength: 64) }
}

/// `{lat, lon}`: a point (`map.elevation`, and the ends of `map.route`).
struct MapPoint: RequestContract {
    let point: GeoPoint
    init(_ fields: RequestFields) throws(HubError) {
        point = GeoPoint(lat: try fields.number("lat", in: -90...90), lon: try fields.number("lon", in: -180...180))
    }
}

/// `map.route`: `{to, from?, max_difficulty?}`.
struct RouteRequest: RequestContract {
    let to: GeoPoint
    let from: GeoPoint?
    let maxDifficulty: Difficulty

    init(_ fields: RequestFields) throws(HubError) {
        to = try MapPoint(fields.noting("`{lat, lon}`").object("to")).point
        from = try fields.noting("`{lat, lon}`; the caller's last position when absent").optionalObject("from").map { (from) throws(HubError) in
            try MapPoint(from).point
        }
        maxDifficulty =
            try fields.noting("the hardest piste taken; unrated pistes only without it").optionalChoice("max_difficulty", Difficulty.self) ?? .hardest
    }
}

/// The `location.*` RPC methods.
extension LocationService {
    func registerRPC(in registrations: inout NodeRegistrations) {
        registrations.register(
            "location.update", LocationUpdate.self, MapChoiceAnswer.self,
            rules:
                "each field checked (107 naming it), `ts` within 5 minutes of `server.time`, at most `location_rate` per second (111)", locationUpdate
        )
        registrations.register(
            "location.visibility", VisibilityChange.self, VisibilityAnswer.self, rules: "applies from the next frame", locationVisibility)
    }

    /// Answers `location.update`.
    func locationUpdate(_ context: RPCContext, _ update: LocationUpdate) async throws -> MapChoiceAnswer {
        MapChoiceAnswer(map: try self.update(user: context.user, update))
    }

    /// Answers `location.visibility`.
    func locationVisibility(_ context: RPCContext, _ request: VisibilityChange) async throws -> VisibilityAnswer {
        try await setVisibility(user: context.user, request.mode)
        return VisibilityAnswer(mode: request.mode)
    }
}
