import Foundation
import GondolaGeo
import GondolaHub
import GondolaProtocol

/// A rental car and where it stands.
struct Car: Sendable, Equatable {
    var id: String
    var make: String
    var model: String
    var year: Int
    var seats: Int
    var pricePerDayCents: Int64
    var lat: Double
    var lon: Double
    var imageURL: String?
    var updatedAt: Int64

    var point: GeoPoint { GeoPoint(lat: lat, lon: lon) }
    var cell: CarCell { CarCell(lat: lat, lon: lon) }
}

/// One cell of the live car map: a Web-Mercator tile at zoom 15 (about 1.2 km wide at
/// the equator, 0.8 km at 47° north), the tiling map clients already use. Its channel
/// is `cars:<x>.<y>`.
struct CarCell: Sendable, Hashable {
    static let zoom = 15
    static let namespace = "cars"
    static let tiles = 1 << zoom
    let x: Int
    let y: Int

    init(x: Int, y: Int) {
        self.x = x
        self.y = y
    }

    init(lat: Double, lon: Double) {
        let n = Double(Self.tiles)
        let clampedLat = min(max(lat, -85.05112878), 85.05112878) * .pi / 180
        x = min(Self.tiles - 1, max(0, Int(((lon + 180) / 360 * n).rounded(.down))))
        y = min(Self.tiles - 1, max(0, Int(((1 - log(tan(clampedLat) + 1 / cos(clampedLat)) / .pi) / 2 * n).rounded(.down))))
    }

    var channel: String { "\(Self.namespace):\(x).\(y)" }

    /// The cell of a channel name's part after `cars:`, or nil when it is not one.
    init?(channelSuffix suffix: Substring) {
        let parts = suffix.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let x = Int(parts[0]), let y = Int(parts[1]), (0..<Self.tiles).contains(x), (0..<Self.tiles).contains(y),
            parts.allSatisfy({ $0.allSatisfy(\.isASCII) && !$0.hasPrefix("+") && ($0 == "0" || !$0.hasPrefix("0")) })
        else { return nil }
        self.init(x: x, y: y)
    }

    /// The cell's bounds.
    var bounds: BoundingBox {
        func lat(_ y: Int) -> Double { atan(sinh(.pi * (1 - 2 * Double(y) / Double(Self.tiles)))) * 180 / .pi }
        func lon(_ x: Int) -> Double { Double(x) / Double(Self.tiles) * 360 - 180 }
        return BoundingBox(minLat: lat(y + 1), minLon: lon(x), maxLat: lat(y), maxLon: lon(x + 1))
    }

    /// The cells covering a box, or nil when there are more than `limit`.
    static func covering(_ box: BoundingBox, limit: Int) -> [CarCell]? {
        let corner = CarCell(lat: box.maxLat, lon: box.minLon)
        let opposite = CarCell(lat: box.minLat, lon: box.maxLon)
        let (width, height) = (opposite.x - corner.x + 1, opposite.y - corner.y + 1)
        guard width > 0, height > 0, width * height <= limit else { return nil }
        return (corner.y...opposite.y).flatMap { y in (corner.x...opposite.x).map { CarCell(x: $0, y: y) } }
    }
}

/// Where a rental stands.
enum RentalState: String, Sendable {
    case planned, active, finished, cancelled

    var isOpen: Bool { self == .planned || self == .active }
}

/// A rental of a car by a user: planned with a start, started, then stopped (the end,
/// where the car was left and the amount) or cancelled before it started.
struct Rental: Sendable, Equatable {
    var id: String
    var car: String
    var user: String
    var state: RentalState
    var startsAt: Int64
    var startedAt: Int64?
    var endedAt: Int64?
    /// The price per day when the rental was made, which the amount is computed from.
    var pricePerDayCents: Int64
    var days: Int?
    var amountCents: Int64?
    var endLat: Double?
    var endLon: Double?
    var createdAt: Int64
    var updatedAt: Int64

    static let dayMilliseconds: Int64 = 86_400_000

    /// Whole days from start to end, rounded up, at least one.
    static func days(from start: Int64, to end: Int64) -> Int {
        Int(max(1, (end - start + dayMilliseconds - 1) / dayMilliseconds))
    }
}

extension Car: AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("id") { $0.id }, .string("make") { $0.make }, .string("model") { $0.model }, .integer("year") { Int64($0.year) },
        .integer("seats") { Int64($0.seats) }, .integer("price_per_day_cents") { $0.pricePerDayCents }, .number("lat") { $0.lat },
        .number("lon") { $0.lon }, .string("cell", "its cell's channel, `cars:<x>.<y>`") { $0.cell.channel },
        .string("image_url", ifAny: { $0.imageURL }),
    ]
}

extension Rental: AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("id") { $0.id }, .string("car") { $0.car }, .string("state", "`planned`, `active`, `finished` or `cancelled`") { $0.state.rawValue },
        .integer("starts_at", "Unix ms") { $0.startsAt }, .integer("price_per_day_cents", "when it was made") { $0.pricePerDayCents },
        .integer("created_at", "Unix ms") { $0.createdAt }, .integer("updated_at", "Unix ms") { $0.updatedAt },
        .integer("started_at", "Unix ms, once started", ifAny: { $0.startedAt }),
        .integer("ended_at", "Unix ms, once ended", ifAny: { $0.endedAt }),
        .integer("days", "whole days charged, once finished", ifAny: { $0.days.map(Int64.init) }),
        .integer("amount_cents", "once finished", ifAny: { $0.amountCents }),
        .object(
            "end", "where the car was left",
            ifAny: { rental -> Coordinates? in
                guard let lat = rental.endLat, let lon = rental.endLon else { return nil }
                return Coordinates(lat: lat, lon: lon)
            }),
    ]
}
