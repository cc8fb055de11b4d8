import Foundation
import GondolaDomain
import GondolaGeo
import GondolaHub
import GondolaProtocol

/// Cars as the server API, the import command and fleet files give them:
/// `{id, make, model, year, seats, price_per_day_cents, lat, lon, image_url?}`.
enum CarInput {
    static let maxImportCount = 2_000

    /// A car from its members; every member is read before the id and the URL are checked.
    static func car(_ fields: RequestFields, at time: Int64) throws(HubError) -> Car {
        let id = try fields.noting("letters, digits, - and _").string("id", maxLength: 64)
        let thisYear = Calendar(identifier: .gregorian).component(.year, from: Date())
        let car = Car(
            id: id, make: try fields.text("make", maxLength: 60), model: try fields.text("model", maxLength: 60),
            year: Int(try fields.noting("1900 to next year", replacingLimits: true).integer("year", in: 1900...Int64(thisYear + 1))),
            seats: Int(try fields.integer("seats", in: 1...9)), pricePerDayCents: try fields.integer("price_per_day_cents", in: 1...10_000_000),
            lat: try fields.number("lat", in: -90...90), lon: try fields.number("lon", in: -180...180),
            imageURL: try fields.noting("an http(s) URL").optionalString("image_url", maxLength: 500), updatedAt: time)
        guard id.utf8.allSatisfy({ isalnum(Int32($0)) != 0 || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }) else {
            throw .badRequest("id: letters, digits, - and _ only, got '\(id)'")
        }
        if let imageURL = car.imageURL, !(imageURL.hasPrefix("https://") || imageURL.hasPrefix("http://")) {
            throw .badRequest("image_url: expected an http(s) URL, got '\(imageURL.prefix(80))'")
        }
        return car
    }

    /// The cars of `car_import`'s `cars`, 1 to `maxImportCount` of them, ids unique.
    static func cars(_ fields: RequestFields, at time: Int64) throws(HubError) -> [Car] {
        let items = try fields.noting("ids unique").objectArray("cars", maxCount: maxImportCount)
        guard !items.isEmpty else { throw .badRequest("cars: 1 to \(maxImportCount) per batch, got none") }
        return try unique(try items.map { (item) throws(HubError) in try car(item, at: time) })
    }

    /// A batch file: a JSON array of cars or `{"cars": [...]}`, read as `car_import`'s `cars`
    /// (a server API body is at most 1 MiB).
    static func cars(_ json: JSON, at time: Int64) throws(HubError) -> [Car] {
        switch json {
        case .array: try cars(try RequestFields(.object([("cars", json)])), at: time)
        case .object: try cars(try RequestFields(json), at: time)
        default: throw .badRequest("expected an array of cars or {\"cars\": [...]}, got \(json.kindName)")
        }
    }

    private static func unique(_ cars: [Car]) throws(HubError) -> [Car] {
        var seen = Set<String>()
        for (index, car) in cars.enumerated() where !seen.insert(car.id).inserted {
            throw .badRequest("cars[\(index)]: id '\(car.id)' appears twice")
        }
        return cars
    }
}

/// The areas the rental company serves (polygons from a GeoJSON file). They catch files
/// that give longitude and latitude the wrong way round: a batch whose points mostly fall
/// outside every area, but mostly inside one when swapped, is refused.
struct ServiceAreas: Sendable {
    let areas: [(name: String, polygon: Polygon)]

    static let none = ServiceAreas(areas: [])

    static func load(_ path: String) throws(DomainSetupError) -> ServiceAreas {
        guard let data = FileManager.default.contents(atPath: path) else { throw DomainSetupError("rental_service_areas: cannot read '\(path)'") }
        do {
            let features = try GeoJSON.features(from: data).features
            let areas = features.enumerated().flatMap { index, feature in
                feature.geometry.polygons.map { (feature.properties["name"] ?? "area \(index + 1)", $0) }
            }
            guard !areas.isEmpty else { throw GeoJSONError("no Polygon or MultiPolygon features") }
            return ServiceAreas(areas: areas)
        } catch {
            throw DomainSetupError("rental_service_areas '\(path)': \(error)")
        }
    }

    func contains(lat: Double, lon: Double) -> Bool {
        guard (-90...90).contains(lat), (-180...180).contains(lon) else { return false }
        let point = GeoPoint(lat: lat, lon: lon)
        return areas.contains { $0.polygon.contains(point) }
    }

    /// Refuses `cars` when most fall outside every area but most would fall inside with
    /// lat and lon swapped. Without areas, every batch passes.
    func checkOrientation(_ cars: [Car]) throws(HubError) {
        guard !areas.isEmpty, !cars.isEmpty else { return }
        let inside = cars.count { contains(lat: $0.lat, lon: $0.lon) }
        let swapped = cars.count { contains(lat: $0.lon, lon: $0.lat) }
        if inside * 2 < cars.count, swapped * 2 > cars.count {
            throw .badRequest(
                """
                \(cars.count - inside) of \(cars.count) cars fall outside every service area (\(areas.map(\.name).joined(separator: ", "))) \
                but \(swapped) would fall inside with lat and lon swapped: the data seems to give longitude as lat; swap them and import again
                """)
        }
    }
}
