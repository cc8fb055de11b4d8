/// Which map a traveller's app shows.
public struct MapChoice: Sendable, Equatable {
    public enum Mode: String, Sendable { case mountain, street }
    public let mode: Mode
    /// The resort of a mountain choice.
    public let resort: String?

    public static let street = MapChoice(mode: .street, resort: nil)
    public static func mountain(_ resort: String) -> MapChoice { MapChoice(mode: .mountain, resort: resort) }
}

/// A resort for map selection: its boundary and the elevation of its base.
public struct ResortArea: Sendable {
    public let id: String
    public let boundary: Geofence<String>
    public let baseElevation: Double

    public init(id: String, boundary: [Polygon], baseElevation: Double) {
        self.id = id
        self.boundary = Geofence(id: id, polygons: boundary)
        self.baseElevation = baseElevation
    }
}

/// Decides between the mountain map and the street map.
///
/// Mountain when the position is inside a resort's boundary, or within `margin`
/// metres of it and at least `elevationMargin` above the resort's base (altitude
/// from the position, else from the DEM). Hysteresis: a traveller on a resort's
/// mountain map keeps it until they are more than twice `margin` outside the
/// boundary or more than `elevationMargin` below the base.
///
/// The boundaries sit in a `GeofenceIndex` that reaches twice `margin`: a position
/// finds the resorts whose widened bounding box holds it in one cell lookup (none, for
/// a traveller in a town), and only those are tested against their polygons.
public struct MapSelector: Sendable {
    public let resorts: [ResortArea]
    public let elevation: [ElevationGrid]
    public let margin: Double
    public let elevationMargin: Double
    /// The boundaries by their position in `resorts`, reaching `2 * margin`.
    private let index: GeofenceIndex<Int>

    public init(resorts: [ResortArea], elevation: [ElevationGrid] = [], margin: Double = 300, elevationMargin: Double = 50) {
        self.resorts = resorts
        self.elevation = elevation
        self.margin = margin
        self.elevationMargin = elevationMargin
        var index = GeofenceIndex<Int>(cellDegrees: 0.05, reach: 2 * margin)
        for (number, resort) in resorts.enumerated() { index.insert(Geofence(id: number, polygons: resort.boundary.polygons)) }
        self.index = index
    }

    /// The altitude of `point`: its own, else the first DEM that covers it.
    public func altitude(of point: GeoPoint) -> Double? {
        point.alt ?? elevation.lazy.compactMap { $0.elevation(at: point) }.first
    }

    public func choose(for point: GeoPoint, previous: MapChoice = .street) -> MapChoice {
        let nearby = index.candidates(near: point)
        guard !nearby.isEmpty else { return .street }
        let altitude = altitude(of: point)
        if let current = previous.resort, let fence = nearby.first(where: { resorts[$0.id].id == current }) {
            if fence.bounds.contains(point), fence.contains(point) { return previous }
            let stillHigh = altitude.map { $0 >= resorts[fence.id].baseElevation - elevationMargin } ?? true
            if stillHigh, fence.distanceToBoundary(point) <= 2 * margin { return previous }
        }
        for fence in nearby where fence.bounds.contains(point) && fence.contains(point) { return .mountain(resorts[fence.id].id) }
        for fence in nearby {
            guard let altitude, altitude >= resorts[fence.id].baseElevation + elevationMargin else { continue }
            if fence.distanceToBoundary(point) <= margin { return .mountain(resorts[fence.id].id) }
        }
        return .street
    }
}
