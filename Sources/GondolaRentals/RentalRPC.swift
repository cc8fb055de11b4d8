import GondolaDomain
import GondolaGeo
import GondolaHub
import GondolaProtocol

/// The RPC methods of the car map and rentals: `cars.near`, `cars.in_box`, `cars.cells`,
/// `rental.plan`, `rental.start`, `rental.stop`, `rental.cancel`, `rental.list`.
extension RentalService {
    static let maxRadius = 50_000.0
    static let maxNear: Int64 = 200
    static let maxInBox = 1_000
    static let maxCells = 64

    func registerRPC(in registrations: inout NodeRegistrations) {
        registrations.register(
            "cars.near", NearbyCars.self, NearbyCarsAnswer.self,
            rules:
                "available cars only (no planned or active rental), from the in-memory spatial index (GondolaGeo's `MovingPointIndex`, not a table scan)",
            carsNear)
        registrations.register("cars.in_box", CarBox.self, CarsInBoxAnswer.self, rules: "at most 1,000 cars; west < east, south < north", carsInBox)
        registrations.register(
            "cars.cells", CarBox.self, CarCellsAnswer.self,
            rules:
                "Cells are Web-Mercator tiles at zoom 15 (about 1.2 km at the equator, 0.8 km in the Alps), numbered as map clients number them; a subscribe reply carries at most 2,000 cars of its cell. Any signed-in user may subscribe; the channels keep no history — after a reconnect, subscribing again answers the cell as it is",
            carsCells)
        registrations.register(
            "rental.plan", RentalPlan.self, RentalAnswer.self,
            rules:
                "the car must be free: a car has at most one planned or active rental (108 naming its state) — a unique index on open rentals per car decides between simultaneous requests, so exactly one wins (tested with 24 clients in Swift and 16 SDK clients); a user has at most 3 open rentals (106)",
            rentalPlan)
        registrations.register(
            "rental.start", RentalStart.self, RentalAnswer.self,
            rules: "a planned rental of yours from `starts_at` on (108 before), or a free car now; not both (107)", rentalStart)
        registrations.register(
            "rental.stop", RentalStop.self, RentalAnswer.self,
            rules:
                "an active rental of yours: the end is now, the days are whole days rounded up (at least one), the amount is days × the price per day recorded when the rental was made (paid in advance: recorded, no payment provider); the car is free again at `lat`, `lon`",
            rentalStop)
        registrations.register(
            "rental.cancel", RentalReference.self, RentalAnswer.self,
            rules:
                "a planned rental of yours; the car is free again. A planned rental not started within a day of its `starts_at` is cancelled by the hub (checked every minute) and its user told as for any cancellation, so a no-show does not hold the car",
            rentalCancel)
        registrations.register("rental.list", NoFields.self, RentalList.self, rules: "", rentalList)
    }

    /// Answers `cars.near`.
    func carsNear(_: RPCContext, _ request: NearbyCars) async throws -> NearbyCarsAnswer {
        NearbyCarsAnswer(found: near(request.center, radius: request.radius, limit: request.limit, maxPrice: request.maxPrice))
    }

    /// Answers `cars.in_box`.
    func carsInBox(_: RPCContext, _ request: CarBox) async throws -> CarsInBoxAnswer {
        let (cars, truncated) = inBox(request.box, limit: Self.maxInBox)
        return CarsInBoxAnswer(cars: cars, truncated: truncated)
    }

    /// Answers `cars.cells`.
    func carsCells(_: RPCContext, _ request: CarBox) async throws -> CarCellsAnswer {
        guard let cells = CarCell.covering(request.box, limit: Self.maxCells) else {
            throw HubError.badRequest("bbox: covers more than \(Self.maxCells) cells of zoom \(CarCell.zoom); zoom in")
        }
        return CarCellsAnswer(cells: cells)
    }

    /// Answers `rental.plan`.
    func rentalPlan(_ context: RPCContext, _ request: RentalPlan) async throws -> RentalAnswer {
        RentalAnswer(rental: try await plan(car: request.car, startsAt: request.startsAt, by: context.user))
    }

    /// Answers `rental.start`.
    func rentalStart(_ context: RPCContext, _ request: RentalStart) async throws -> RentalAnswer {
        switch request.target {
        case let .planned(rental): RentalAnswer(rental: try await start(rental: rental, by: context.user))
        case let .car(car): RentalAnswer(rental: try await start(car: car, by: context.user))
        }
    }

    /// Answers `rental.stop`.
    func rentalStop(_ context: RPCContext, _ request: RentalStop) async throws -> RentalAnswer {
        RentalAnswer(rental: try await stop(rental: request.rental, lat: request.lat, lon: request.lon, by: context.user))
    }

    /// Answers `rental.cancel`.
    func rentalCancel(_ context: RPCContext, _ request: RentalReference) async throws -> RentalAnswer {
        RentalAnswer(rental: try await cancel(rental: request.rental, by: context.user))
    }

    /// Answers `rental.list`.
    func rentalList(_ context: RPCContext, _: NoFields) async throws -> RentalList {
        RentalList(rentals: try await rentals(of: context.user))
    }
}

/// `cars.near`: `{lat, lon, radius?, limit?, max_price?}`.
struct NearbyCars: RequestContract {
    let center: GeoPoint
    let radius: Double
    let limit: Int
    let maxPrice: Int64?

    init(_ fields: RequestFields) throws(HubError) {
        center = GeoPoint(lat: try fields.number("lat", in: -90...90), lon: try fields.number("lon", in: -180...180))
        radius = try fields.noting("metres, default 2,000").optionalNumber("radius", in: 1...RentalService.maxRadius) ?? 2_000
        limit = Int(try fields.integer("limit", in: 1...RentalService.maxNear, default: 20))
        maxPrice = try fields.noting("cents per day").optionalInteger("max_price", in: 0...Int64.max)
    }
}

/// `cars.in_box` and `cars.cells`: `{bbox: [west, south, east, north]}` in degrees
/// (GeoJSON's order), west below east.
struct CarBox: RequestContract {
    let box: BoundingBox

    init(_ fields: RequestFields) throws(HubError) {
        let numbers = try fields.noting("[west, south, east, north] in degrees").numberArray("bbox", count: 4)
        let (west, south, east, north) = (numbers[0], numbers[1], numbers[2], numbers[3])
        guard (-180...180).contains(west), (-180...180).contains(east), (-90...90).contains(south), (-90...90).contains(north),
            west < east, south < north
        else {
            throw .badRequest("bbox: expected west < east in [-180, 180] and south < north in [-90, 90], got [\(west), \(south), \(east), \(north)]")
        }
        box = BoundingBox(minLat: south, minLon: west, maxLat: north, maxLon: east)
    }
}

/// `rental.plan`: `{car, starts_at}`.
struct RentalPlan: RequestContract {
    let car: String
    let startsAt: Int64
    init(_ fields: RequestFields) throws(HubError) {
        car = try fields.string("car", maxLength: 64)
        startsAt = try fields.noting("Unix ms, after now, within 90 days", replacingLimits: true).integer("starts_at", in: 0...Int64(1) << 50)
    }
}

/// `rental.start`: `{rental}` (a planned one) or `{car}` (to start now).
struct RentalStart: RequestContract {
    enum Target {
        case planned(String)
        case car(String)
    }
    let target: Target
    init(_ fields: RequestFields) throws(HubError) {
        let refusal = "rental.start: give rental (a planned one) or car (to start now), not both"
        let rental: RequestFields.Reader<Target> = { fields throws(HubError) in
            Target.planned(try fields.noting("a planned rental").string("rental", maxLength: 64))
        }
        let car: RequestFields.Reader<Target> = { fields throws(HubError) in
            Target.car(try fields.noting("a free car, to start now").string("car", maxLength: 64))
        }
        target = try fields.oneOf(["rental": rental, "car": car], ifNone: refusal, ifSeveral: refusal)
    }
}

/// `rental.stop`: `{rental, lat, lon}`, where the car is left.
struct RentalStop: RequestContract {
    let rental: String
    let lat: Double
    let lon: Double
    init(_ fields: RequestFields) throws(HubError) {
        rental = try fields.string("rental", maxLength: 64)
        lat = try fields.number("lat", in: -90...90)
        lon = try fields.number("lon", in: -180...180)
    }
}

/// `{rental}`.
struct RentalReference: RequestContract {
    let rental: String
    init(_ fields: RequestFields) throws(HubError) { rental = try fields.string("rental", maxLength: 64) }
}

/// A car found near a point, with how far it is.
struct NearbyCar: AnswerObject {
    static let members: [AnswerMember<Self>] =
        Car.members(in: { $0.car }) + [.number("distance_m", "metres, to 0.1") { ($0.distance * 10).rounded() / 10 }]
    let car: Car
    let distance: Double
}

/// `cars.near`'s answer: the nearest available cars with their distance.
struct NearbyCarsAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [.objects("cars", "nearest first") { $0.found.map(NearbyCar.init) }]
    let found: [(car: Car, distance: Double)]
}

/// `cars.in_box`'s answer.
struct CarsInBoxAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .objects("cars") { $0.cars }, .boolean("truncated", "there were more than 1,000") { $0.truncated },
    ]
    let cars: [Car]
    let truncated: Bool
}

/// `cars.cells`' answer: the channels of the cells covering the box.
struct CarCellsAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [.strings("channels", "`cars:<x>.<y>`, at most 64") { $0.cells.map(\.channel) }]
    let cells: [CarCell]
}

/// One rental: what `rental.plan`, `start`, `stop` and `cancel` answer.
struct RentalAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [.object("rental") { $0.rental }]
    let rental: Rental
}

/// `rental.list`'s answer.
struct RentalList: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .objects("planned") { $0.rentals.filter { $0.state == .planned } }, .objects("active") { $0.rentals.filter { $0.state == .active } },
        .objects("past", "the last 50") { $0.rentals.filter { !$0.state.isOpen } },
    ]
    let rentals: [Rental]
}
