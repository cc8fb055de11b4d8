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
        registrations.register(
            "location.update", LocationUpdate.self, MapChoiceAnswer.self,
            rules:
                "`{\"map\":{\"mode\":\"mountain\"|\"street\",\"resort\"}}`; each field checked (107 naming it), `ts` within 5 minutes of `server.time`, at most `location_rate` per second (111)"
        ) { context, update in
            try locations.update(user: context.user, update)
        }
        registrations.register(
            "location.visibility", VisibilityChange.self, VisibilityAnswer.self, rules: "`{\"mode\"}`; applies from the next frame"
        ) {
            context, request in
            try await locations.setVisibility(user: context.user, request.mode)
            return ["mode": .string(request.mode.rawValue)]
        }
        registrations.register(
            "map.resorts", NoFields.self, ResortList.self,
            rules: "`{\"resorts\":[{\"id\",\"name\",\"center\":{\"lat\",\"lon\"},\"bbox\":[minLon,minLat,maxLon,maxLat]}]}`"
        ) { _, _ in
            ["resorts": .array(resorts.resorts.map(resorts.summary))]
        }
        registrations.register(
            "map.resort", ResortReference.self, ResortMap.self,
            rules:
                "GeoJSON FeatureCollection: boundary, base, lifts and pistes with `kind`, `name`, `difficulty` (lifts: `lift`; `null` for an unrated piste), `color`, `pattern` (`solid`, `dashed`, `dotted`), `length`; piste areas as `Polygon`s with `kind: \"piste_area\"`; the `resort` member has `id`, `name`, `bbox`, `difficulty_colors` and, for imported resorts, `attribution`"
        ) { _, request in
            guard let document = resorts.mapDocument(request.id) else { throw HubError.badRequest("id: unknown resort '\(request.id)'") }
            return .raw(document)
        }
        registrations.register(
            "map.elevation", MapPoint.self, ElevationAnswer.self, rules: "`{\"lat\",\"lon\",\"elevation\"}`; 108 outside every grid"
        ) { _, request in
            let point = request.point
            guard let elevation = resorts.selector.elevation.lazy.compactMap({ $0.elevation(at: point) }).first else {
                throw HubError.notAvailable("no elevation data at \(point.lat), \(point.lon)")
            }
            return ["lat": .double(point.lat), "lon": .double(point.lon), "elevation": TravelJSON.metres(elevation)]
        }
        registrations.register(
            "map.route", RouteRequest.self, RouteAnswer.self,
            rules:
                "`{\"legs\":[{\"kind\",\"name\",\"difficulty\",\"color\",\"pattern\",\"coordinates\",\"distance\",\"duration\"}],\"distance\",\"duration\",\"ascent\",\"descent\"}`; `from` defaults to the caller's last position; `max_difficulty` is one of `novice` … `extreme` (unrated pistes only without it); 108 with a reason when there is no route"
        ) { context, request in
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
    private func located(_ point: GeoPoint) -> GeoPoint {
        var point = point
        point.alt = resorts.selector.altitude(of: point)
        return point
    }
}

/// `location.visibility`: `{mode}`.
struct VisibilityChange: RequestContract {
    static let fields: [FieldContract] = [.required("mode", .string, "`everyone`, `friends` or `nobody`")]
    let mode: Visibility
    init(_ fields: RequestFields) throws(HubError) { mode = try fields.choice("mode", Visibility.self) }
}

/// `map.resort`: `{id}`.
struct ResortReference: RequestContract {
    static let fields: [FieldContract] = [.required("id", .string)]
    let id: String
    init(_ fields: RequestFields) throws(HubError) { id = try fields.string("id", maxLength: 64) }
}

/// `{lat, lon}`: a point (`map.elevation`, and the ends of `map.route`).
struct MapPoint: RequestContract {
    static let fields: [FieldContract] = [.required("lat", .number, "-90 to 90"), .required("lon", .number, "-180 to 180")]
    let point: GeoPoint
    init(_ fields: RequestFields) throws(HubError) {
        point = GeoPoint(lat: try fields.number("lat", in: -90...90), lon: try fields.number("lon", in: -180...180))
    }
}

/// `map.route`: `{to, from?, max_difficulty?}`.
struct RouteRequest: RequestContract {
    static let fields: [FieldContract] = [
        .required("to", .object, "`{lat, lon}`", members: MapPoint.fields),
        .optional("from", .object, "`{lat, lon}`; the caller's last position when absent", members: MapPoint.fields),
        .optional("max_difficulty", .string, "`novice` … `extreme`; unrated pistes only without it"),
    ]
    let to: GeoPoint
    let from: GeoPoint?
    let maxDifficulty: Difficulty

    init(_ fields: RequestFields) throws(HubError) {
        to = try MapPoint(fields.object("to")).point
        from = try fields.optionalObject("from").map { (from) throws(HubError) in try MapPoint(from).point }
        maxDifficulty = fields.has("max_difficulty") ? try fields.choice("max_difficulty", Difficulty.self) : .hardest
    }
}
