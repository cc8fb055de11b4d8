import GondolaDomain
import GondolaGeo
import GondolaHub
import GondolaProtocol

/// The RPC methods of the car map and rentals: `cars.near`, `cars.in_box`, `cars.cells`,
/// `rental.plan`, `rental.start`, `rental.stop`, `rental.cancel`, `rental.list`.
struct RentalRPC: Sendable {
    let rentals: RentalService
    static let maxRadius = 50_000.0
    static let maxNear: Int64 = 200
    static let maxInBox = 1_000
    static let maxCells = 64

    func register(in registrations: inout NodeRegistrations) {
        registrations.register("cars.near") { _, data in
            let fields = try RequestFields(data)
            let center = GeoPoint(lat: try fields.number("lat", in: -90...90), lon: try fields.number("lon", in: -180...180))
            let radius = try fields.optionalNumber("radius", in: 1...Self.maxRadius) ?? 2_000
            let limit = Int(try fields.optionalInteger("limit", in: 1...Self.maxNear) ?? 20)
            let maxPrice = try fields.optionalInteger("max_price", in: 0...Int64.max)
            let found = rentals.near(center, radius: radius, limit: limit, maxPrice: maxPrice)
            return ["cars": .array(found.map { $0.car.json.adding("distance_m", .double(($0.distance * 10).rounded() / 10)) })]
        }
        registrations.register("cars.in_box") { _, data in
            let (cars, truncated) = rentals.inBox(try Self.box(try RequestFields(data)), limit: Self.maxInBox)
            return ["cars": .array(cars.map(\.json)), "truncated": .bool(truncated)]
        }
        registrations.register("cars.cells") { _, data in
            guard let cells = CarCell.covering(try Self.box(try RequestFields(data)), limit: Self.maxCells) else {
                throw HubError.badRequest("bbox: covers more than \(Self.maxCells) cells of zoom \(CarCell.zoom); zoom in")
            }
            return ["channels": .array(cells.map { .string($0.channel) })]
        }
        registrations.register("rental.plan") { context, data in
            let fields = try RequestFields(data)
            let rental = try await rentals.plan(
                car: try fields.string("car", maxLength: 64),
                startsAt: try fields.integer("starts_at", in: 0...Int64(1) << 50), by: context.user)
            return ["rental": rental.json]
        }
        registrations.register("rental.start") { context, data in
            let fields = try RequestFields(data)
            switch (fields.has("rental"), fields.has("car")) {
            case (true, false): return ["rental": try await rentals.start(rental: try fields.string("rental", maxLength: 64), by: context.user).json]
            case (false, true): return ["rental": try await rentals.start(car: try fields.string("car", maxLength: 64), by: context.user).json]
            default: throw HubError.badRequest("rental.start: give rental (a planned one) or car (to start now), not both")
            }
        }
        registrations.register("rental.stop") { context, data in
            let fields = try RequestFields(data)
            let rental = try await rentals.stop(
                rental: try fields.string("rental", maxLength: 64), lat: try fields.number("lat", in: -90...90),
                lon: try fields.number("lon", in: -180...180), by: context.user)
            return ["rental": rental.json]
        }
        registrations.register("rental.cancel") { context, data in
            ["rental": try await rentals.cancel(rental: try RequestFields(data).string("rental", maxLength: 64), by: context.user).json]
        }
        registrations.register("rental.list") { context, _ in
            let all = try await rentals.rentals(of: context.user)
            return [
                "planned": .array(all.filter { $0.state == .planned }.map(\.json)),
                "active": .array(all.filter { $0.state == .active }.map(\.json)),
                "past": .array(all.filter { !$0.state.isOpen }.map(\.json)),
            ]
        }
    }

    /// `bbox: [west, south, east, north]` in degrees (GeoJSON's order), west below east.
    static func box(_ fields: RequestFields) throws(HubError) -> BoundingBox {
        guard case let .array(items)? = fields.value("bbox"), items.count == 4 else {
            throw .badRequest("bbox: expected [west, south, east, north]")
        }
        var numbers: [Double] = []
        for item in items {
            switch item {
            case let .int(value): numbers.append(Double(value))
            case let .double(value) where value.isFinite: numbers.append(value)
            default: throw .badRequest("bbox: expected four numbers, got \(item.kindName)")
            }
        }
        let (west, south, east, north) = (numbers[0], numbers[1], numbers[2], numbers[3])
        guard (-180...180).contains(west), (-180...180).contains(east), (-90...90).contains(south), (-90...90).contains(north),
            west < east, south < north
        else {
            throw .badRequest("bbox: expected west < east in [-180, 180] and south < north in [-90, 90], got [\(west), \(south), \(east), \(north)]")
        }
        return BoundingBox(minLat: south, minLon: west, maxLat: north, maxLon: east)
    }
}
