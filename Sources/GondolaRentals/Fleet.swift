import GondolaGeo
import GondolaProtocol

/// The cars in memory: every car by id, the spatial index of the available ones (no
/// planned or active rental), and the open rental of each busy car. Pure state; the
/// rental service holds it under its lock and publishes the events its changes return.
struct Fleet: Sendable {
    private(set) var cars: [String: Car] = [:]
    /// The open rental of each busy car.
    private(set) var openRentals: [String: (id: String, state: RentalState)] = [:]
    private var index = MovingPointIndex<String>(cellMetres: 500)
    /// Cars answered per cell in a subscribe reply.
    static let maxCellSnapshot = 2_000

    func isAvailable(_ car: String) -> Bool { cars[car] != nil && openRentals[car] == nil }

    /// A change to a cell's channel: a car to show (new, returned, moved in, changed) or to
    /// take away (rented, reserved, removed, moved out).
    struct CellEvent: Sendable, Equatable {
        let cell: CarCell
        let data: JSON
    }

    /// Adds or replaces a car; answers the cell events.
    mutating func upsert(_ car: Car) -> [CellEvent] {
        let before = visible(car.id)
        cars[car.id] = car
        reindex(car.id)
        return Self.events(before: before, after: visible(car.id), reason: "moved")
    }

    mutating func remove(_ id: String) -> [CellEvent] {
        let before = visible(id)
        cars[id] = nil
        openRentals[id] = nil
        reindex(id)
        return Self.events(before: before, after: nil, reason: "removed")
    }

    /// Marks a car busy with an open rental, or free when `rental` is nil.
    mutating func setOpenRental(_ car: String, _ rental: (id: String, state: RentalState)?) -> [CellEvent] {
        let before = visible(car)
        openRentals[car] = rental
        reindex(car)
        return Self.events(before: before, after: visible(car), reason: rental?.state == .planned ? "reserved" : "rented")
    }

    /// Moves a car (a rental stopped elsewhere); answers the events.
    mutating func move(_ car: String, lat: Double, lon: Double, at time: Int64) -> [CellEvent] {
        guard var moved = cars[car] else { return [] }
        moved.lat = lat
        moved.lon = lon
        moved.updatedAt = time
        return upsert(moved)
    }

    /// Available cars within `radius` metres of `center`, nearest first.
    func near(_ center: GeoPoint, radius: Double, limit: Int, maxPrice: Int64?) -> [(car: Car, distance: Double)] {
        index.nearby(center, radius: radius, limit: limit) { id, _ in
            maxPrice.map { (cars[id]?.pricePerDayCents ?? .max) <= $0 } ?? true
        }.compactMap { neighbour in cars[neighbour.id].map { ($0, neighbour.distance) } }
    }

    /// Available cars in a box, at most `limit`, and whether there were more.
    func inBox(_ box: BoundingBox, limit: Int) -> (cars: [Car], truncated: Bool) {
        let ids = index.within(box)
        return (ids.prefix(limit).compactMap { cars[$0] }.sorted { $0.id < $1.id }, ids.count > limit)
    }

    /// The available cars of a cell, for a subscribe reply.
    func cars(in cell: CarCell) -> (cars: [Car], truncated: Bool) {
        let box = cell.bounds
        let ids = index.within(box).filter { cars[$0]?.cell == cell }
        return (ids.prefix(Self.maxCellSnapshot).compactMap { cars[$0] }.sorted { $0.id < $1.id }, ids.count > Self.maxCellSnapshot)
    }

    private func visible(_ id: String) -> Car? { isAvailable(id) ? cars[id] : nil }

    private mutating func reindex(_ id: String) {
        if let car = visible(id) {
            index.upsert(id, at: car.point, timestamp: car.updatedAt)
        } else {
            _ = index.remove(id)
        }
    }

    /// What the cells see of a change from `before` to `after` (each the car when it is
    /// shown on the map, nil when not).
    static func events(before: Car?, after: Car?, reason: String) -> [CellEvent] {
        var events: [CellEvent] = []
        if let before, before != after {
            if after == nil || after?.cell != before.cell {
                events.append(
                    CellEvent(
                        cell: before.cell, data: ["type": "car_gone", "id": .string(before.id), "reason": .string(after == nil ? reason : "moved")]))
            }
        }
        if let after, after != before {
            events.append(CellEvent(cell: after.cell, data: ["type": "car", "car": after.json]))
        }
        return events
    }
}
