import Foundation
import GondolaDomain
import GondolaGeo
import GondolaHub
import GondolaProtocol
import Logging
import Synchronization

/// Cars on a live map and their rentals, on the push-repository pattern: each change is
/// written to the database, applied to the fleet in memory, then published — the car's
/// availability on its map cell's channel `cars:<x>.<y>` (both cells when it moves
/// between them) and a rental's change on its user's `personal:#<user>`. One lock
/// orders the three steps, so the cells see changes in the order they were stored; the
/// database decides between two requests for one car (the unique index on open rentals
/// per car: exactly one is stored, the other answers 108) and between two changes of one
/// rental (a change applies only to the state it was read in). In a cluster each node
/// keeps the whole fleet: a node that changes cars names them on the bus, and the others
/// read those cars again (and the whole fleet after a resynchronisation).
public final class RentalService: Sendable {
    /// How far ahead a rental may be planned.
    static let maxPlanAhead: Int64 = 90 * 86_400_000
    /// Open (planned or active) rentals one user may have.
    static let maxOpenRentalsPerUser = 3
    /// Closed rentals `rental.list` answers.
    static let pastListed = 50
    /// How long after its start a planned rental waits to be started before it is
    /// cancelled (a no-show), so that the car is offered again.
    static let noShowGrace: Int64 = 86_400_000
    /// How long before its start the user of a planned rental is reminded.
    static let reminderLead: Int64 = 30 * 60_000

    let node: Node
    let repository: any RentalRepository
    let areas: ServiceAreas
    /// The folder of fleet files (`demo.json`).
    public let fleetsFolder: String
    let logger: Logger
    /// Where reminders of rentals about to start are posted for the users' phones.
    let notices: NoticeBoard
    private let fleet = Mutex(Fleet())
    private let fleetChanges = TaskKeyedLocks()
    /// Reads of the cars other nodes changed, in the order the bus brought them.
    private let replicaReads: SerialJobs
    static let fleetTopic = "rentals.fleet"

    init(
        node: Node, repository: any RentalRepository, areas: ServiceAreas, fleetsFolder: String, notices: NoticeBoard = NoticeBoard(),
        logger: Logger
    ) async throws {
        self.node = node
        self.notices = notices
        self.repository = repository
        self.areas = areas
        self.fleetsFolder = fleetsFolder
        self.logger = logger
        replicaReads = SerialJobs(name: "rentals.fleet replicas", logger: logger)
        try await reloadFleet()
    }

    /// Follows the other nodes of a cluster: their fleet changes are read again here,
    /// and the whole fleet when the node (re)gains the bus.
    func follow(in registrations: inout NodeRegistrations) {
        registrations.onReplica(
            topic: Self.fleetTopic, FleetChange.self, effect: "reads those cars and their open rentals again from the shared database"
        ) { [weak self] change in
            guard let service = self else { return }
            service.replicaReads.submit { [weak service] in await service?.applyReplica(change.cars) }
        }
        registrations.onResynchronize { [weak self] in
            do {
                try await self?.reloadFleet()
            } catch {
                self?.logger.error("rentals: reading the fleet again failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Replaces the fleet in memory with the stored one.
    private func reloadFleet() async throws {
        let (cars, open) = (try await repository.allCars(), try await repository.openRentals())
        var loaded = Fleet()
        for car in cars { _ = loaded.upsert(car) }
        for rental in open { _ = loaded.setOpenRental(rental.car, (rental.id, rental.state)) }
        fleet.withLock { $0 = loaded }
    }

    /// Another node changed the cars it names: read them again (their cells were told by it).
    private func applyReplica(_ ids: [String]) async {
        do {
            let (cars, open) = try await repository.fleetState(of: ids)
            fleet.withLock { Self.replace(ids, with: cars, open, in: &$0) }
        } catch {
            logger.error("rentals: reading changed cars failed", metadata: ["cars": "\(ids.count)", "error": "\(error)"])
        }
    }

    /// Sets the cars `ids` in `fleet` to what the database holds (the cells were told by
    /// the node that changed them).
    private static func replace(_ ids: [String], with cars: [Car], _ open: [Rental], in fleet: inout Fleet) {
        let stored = Dictionary(cars.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
        let rentals = Dictionary(open.map { ($0.car, ($0.id, $0.state)) }, uniquingKeysWith: { $1 })
        for id in ids {
            if let car = stored[id] {
                _ = fleet.upsert(car)
                _ = fleet.setOpenRental(id, rentals[id])
            } else {
                _ = fleet.remove(id)
            }
        }
    }

    /// Reads the car `id` from the database into the fleet before a refusal: memory that
    /// has not yet heard of another node's change (a new car, a rental ended) never refuses.
    /// Answers the car and its open rental as they are then.
    private func confirm(_ id: String) async throws(HubError) -> (car: Car?, open: (id: String, state: RentalState)?) {
        let (cars, open) = try await databaseRead { try await repository.fleetState(of: [id]) }
        return fleet.withLock { fleet in
            Self.replace([id], with: cars, open, in: &fleet)
            return (fleet.cars[id], fleet.openRentals[id])
        }
    }

    /// The car `id` and its open rental, confirmed from the database when memory has no
    /// car or an open rental (either would refuse).
    private func current(_ id: String) async throws(HubError) -> (car: Car?, open: (id: String, state: RentalState)?) {
        let known = fleet.withLock { ($0.cars[id], $0.openRentals[id]) }
        if known.0 == nil || known.1 != nil { return try await confirm(id) }
        return known
    }

    /// Runs a change of the fleet — a database write, then the change in memory and its
    /// pushes — after every change asked before it has ended. The fleet's memory lock is
    /// never held across the database call; changes wait for each other as tasks.
    private func changingFleet<T: Sendable>(_ body: () async throws(HubError) -> T) async throws(HubError) -> T {
        try await fleetChanges.withLock("fleet", body)
    }

    /// Names changed cars to the other nodes of a cluster.
    private func replicate(_ ids: [String]) {
        node.replicate(topic: Self.fleetTopic, FleetChange(cars: ids))
    }

    // MARK: Cars

    /// Adds or updates cars (checked against the service areas as one batch).
    @discardableResult
    func upsert(_ cars: [Car]) async throws(HubError) -> Int {
        try areas.checkOrientation(cars)
        try await changingFleet { () throws(HubError) in
            try await databaseWrite { try await repository.upsert(cars) }
            fleet.withLock { fleet in publish(cars.flatMap { fleet.upsert($0) }) }
            replicate(cars.map(\.id))
        }
        return cars.count
    }

    /// Takes a car off the map; refused while it has an open rental.
    func remove(_ id: String) async throws(HubError) {
        try await changingFleet { () throws(HubError) in
            let (car, open) = try await current(id)
            guard car != nil else { throw .badRequest("car '\(id)' does not exist") }
            if let open { throw .notAvailable("car '\(id)' has a \(open.state.rawValue) rental (\(open.id))") }
            try await databaseWrite { try await repository.removeCar(id) }
            fleet.withLock { fleet in publish(fleet.remove(id)) }
            replicate([id])
        }
    }

    /// Adds the cars of `<fleets>/demo.json` that are not on the map yet (cars moved by
    /// rentals keep their place); answers how many were added, or nil when there is no
    /// such file. A file that is not a valid fleet throws.
    public func seedDemoFleet() async throws -> Int? {
        let path = fleetsFolder + "/demo.json"
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        do {
            let known = fleet.withLock { Set($0.cars.keys) }
            let missing = try CarInput.cars(try JSONParser.parse(Array(data)), at: unixMilliseconds()).filter { !known.contains($0.id) }
            return await missing.isEmpty ? 0 : try upsert(missing)
        } catch {
            throw DomainSetupError("demo fleet '\(path)': \(error)")
        }
    }

    /// The cars on the map, rented or not.
    public var carCount: Int { fleet.withLock { $0.cars.count } }

    func near(_ center: GeoPoint, radius: Double, limit: Int, maxPrice: Int64?) -> [(car: Car, distance: Double)] {
        fleet.withLock { $0.near(center, radius: radius, limit: limit, maxPrice: maxPrice) }
    }

    func inBox(_ box: BoundingBox, limit: Int) -> (cars: [Car], truncated: Bool) {
        fleet.withLock { $0.inBox(box, limit: limit) }
    }

    /// Subscribes to a cell: the reply carries the cell's available cars, and what is
    /// published after it follows them (the fleet's lock is held through both).
    func subscribe(to cell: CarCell, attach: (RawJSON?) throws(HubError) -> Void) throws(HubError) {
        try fleet.withLock { (fleet) throws(HubError) in
            let (cars, truncated) = fleet.cars(in: cell)
            try attach(RawJSON(["cell": .string(cell.channel), "cars": .array(cars.map(\.json)), "truncated": .bool(truncated)]))
        }
    }

    // MARK: Rentals

    /// Plans a rental of `car` from `startsAt` (in the future, within 90 days).
    func plan(car: String, startsAt: Int64, by user: String, now: Int64 = unixMilliseconds()) async throws(HubError) -> Rental {
        guard startsAt > now, startsAt <= now + Self.maxPlanAhead else {
            throw .badRequest("starts_at: must be after now and within 90 days, got \(Self.time(startsAt))")
        }
        return try await open(car: car, state: .planned, startsAt: startsAt, by: user, now: now)
    }

    /// Starts a rental of `car` now.
    func start(car: String, by user: String, now: Int64 = unixMilliseconds()) async throws(HubError) -> Rental {
        try await open(car: car, state: .active, startsAt: now, by: user, now: now)
    }

    private func open(car id: String, state: RentalState, startsAt: Int64, by user: String, now: Int64) async throws(HubError) -> Rental {
        try await changingFleet { () throws(HubError) -> Rental in
            let (known, open) = try await current(id)
            guard let car = known else { throw .badRequest("car '\(id)' does not exist") }
            if let open { throw Self.conflict(id, open.state) }
            let mine = try await databaseRead { try await repository.rentals(of: user, pastLimit: 0) }.count
            guard mine < Self.maxOpenRentalsPerUser else {
                throw .limitExceeded("a user may have \(Self.maxOpenRentalsPerUser) planned or active rentals at once")
            }
            let rental = Rental(
                id: RandomID.make("rental-"), car: id, user: user, state: state, startsAt: startsAt,
                startedAt: state == .active ? now : nil, endedAt: nil, pricePerDayCents: car.pricePerDayCents, days: nil,
                amountCents: nil, endLat: nil, endLon: nil, createdAt: now, updatedAt: now)
            guard try await databaseWrite({ try await repository.insertOpen(rental) }) else {
                throw Self.conflict(id, try await databaseRead { try await repository.openRentals() }.first { $0.car == id }?.state ?? .planned)
            }
            fleet.withLock { fleet in publish(fleet.setOpenRental(id, (rental.id, state))) }
            replicate([id])
            tell(rental)
            return rental
        }
    }

    /// Starts a planned rental, from its start time on.
    func start(rental id: String, by user: String, now: Int64 = unixMilliseconds()) async throws(HubError) -> Rental {
        try await change(id, by: user, from: .planned) { (rental) throws(HubError) in
            guard now >= rental.startsAt else { throw .notAvailable("rental \(id) starts at \(Self.time(rental.startsAt))") }
            rental.state = .active
            rental.startedAt = now
            rental.updatedAt = now
            try Self.written(try await databaseWrite { [rental] in try await repository.update(rental, from: .planned) }, rental)
            return { [rental] fleet in fleet.setOpenRental(rental.car, (rental.id, .active)) }
        }
    }

    /// Stops an active rental where the car was left: the end, the whole days rounded
    /// up and the amount at the rental's price per day; the car is free again there.
    func stop(rental id: String, lat: Double, lon: Double, by user: String, now: Int64 = unixMilliseconds()) async throws(HubError) -> Rental {
        try await change(id, by: user, from: .active) { (rental) throws(HubError) in
            let days = Rental.days(from: rental.startedAt ?? rental.startsAt, to: now)
            rental.state = .finished
            rental.endedAt = now
            rental.days = days
            rental.amountCents = Int64(days) * rental.pricePerDayCents
            rental.endLat = lat
            rental.endLon = lon
            rental.updatedAt = now
            try Self.written(
                try await databaseWrite { [rental] in try await repository.update(rental, from: .active, carPosition: (lat, lon, now)) }, rental)
            return { [rental] fleet in fleet.move(rental.car, lat: lat, lon: lon, at: now) + fleet.setOpenRental(rental.car, nil) }
        }
    }

    /// Cancels a planned rental; the car is free again.
    func cancel(rental id: String, by user: String, now: Int64 = unixMilliseconds()) async throws(HubError) -> Rental {
        try await change(id, by: user, from: .planned) { (rental) throws(HubError) in
            rental.state = .cancelled
            rental.updatedAt = now
            try Self.written(try await databaseWrite { [rental] in try await repository.update(rental, from: .planned) }, rental)
            return { [rental] fleet in fleet.setOpenRental(rental.car, nil) }
        }
    }

    /// Cancels the planned rentals not started within a day of their start (their users
    /// are told as for any cancellation); answers how many.
    @discardableResult
    func cancelNoShows(now: Int64 = unixMilliseconds()) async -> Int {
        let due: [Rental]
        do {
            due = try await repository.planned(startingBefore: now - Self.noShowGrace, limit: 1_000)
        } catch {
            logger.error("rentals: cannot read planned rentals", metadata: ["error": "\(error)"])
            return 0
        }
        var cancelled = 0
        for rental in due {
            do {
                _ = try await cancel(rental: rental.id, by: rental.user, now: now)
                cancelled += 1
                logger.info("planned rental not started: cancelled", metadata: ["rental": "\(rental.id)", "car": "\(rental.car)"])
            } catch {
                logger.warning("planned rental not cancelled", metadata: ["rental": "\(rental.id)", "error": "\(error)"])
            }
        }
        return cancelled
    }

    /// Reminds the users of planned rentals starting within `reminderLead` (once per rental,
    /// on `personal:#<uid>` and as a notice for their phones); answers how many.
    @discardableResult
    func remindStarting(now: Int64 = unixMilliseconds()) async -> Int {
        let due: [Rental]
        do {
            due = try await repository.claimReminders(startingBefore: now + Self.reminderLead, now: now, limit: 1_000)
        } catch {
            logger.error("rentals: cannot read rentals starting soon", metadata: ["error": "\(error)"])
            return 0
        }
        for rental in due {
            let car = fleet.withLock { $0.cars[rental.car] }.map { "\($0.make) \($0.model)" } ?? rental.car
            let start = Self.clock(rental.startsAt)
            node.tell(rental.user, ["type": "rental.starting", "rental": rental.json, "car_name": .string(car)])
            notices.post(
                Notice(
                    audience: .users([rental.user]), channel: PersonalChannel.name(of: rental.user), category: .update, text: "rental.starting",
                    values: ["car": car, "start": start], link: ["screen": "rental", "rental": rental.id], at: now))
        }
        return due.count
    }

    /// "HH:MM UTC" of a moment.
    private static func clock(_ milliseconds: Int64) -> String {
        let minutes = (milliseconds / 60_000) % 1440
        return String(format: "%02d:%02d UTC", minutes / 60, minutes % 60)
    }

    /// Runs `remindStarting` and `cancelNoShows` every minute until cancelled.
    func sweepEveryMinute() async {
        while !Task.isCancelled {
            await remindStarting()
            await cancelNoShows()
            try? await Task.sleep(for: .seconds(60))
        }
    }

    /// The user's rentals: planned, active, and the last 50 past ones.
    func rentals(of user: String) async throws(HubError) -> [Rental] {
        try await databaseRead { try await repository.rentals(of: user, pastLimit: Self.pastListed) }
    }

    /// Applies `body` to the user's rental in state `from` (it writes the rental and
    /// answers the change of the fleet in memory), after the fleet's earlier changes; then
    /// publishes the cell events of that change and tells the user.
    private func change(
        _ id: String, by user: String, from state: RentalState,
        _ body: (inout Rental) async throws(HubError) -> @Sendable (inout Fleet) -> [Fleet.CellEvent]
    ) async throws(HubError) -> Rental {
        try await changingFleet { () throws(HubError) -> Rental in
            guard var rental = try await databaseRead({ try await repository.rental(id) }), rental.user == user else {
                throw .permissionDenied("rental \(id) is not yours")
            }
            guard rental.state == state else { throw .notAvailable("rental \(id) is \(rental.state.rawValue), not \(state.rawValue)") }
            let applying = try await body(&rental)
            fleet.withLock { fleet in publish(applying(&fleet)) }
            replicate([rental.car])
            tell(rental)
            return rental
        }
    }

    /// Refuses a change that found its rental changed meanwhile (through another node).
    private static func written(_ written: Bool, _ rental: Rental) throws(HubError) {
        guard written else { throw .notAvailable("rental \(rental.id) was changed meanwhile; read it again (rental.list)") }
    }

    private static func conflict(_ car: String, _ state: RentalState) -> HubError {
        .notAvailable("car '\(car)' already has a \(state.rawValue) rental")
    }

    static func time(_ milliseconds: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    // MARK: Pushes

    private func publish(_ events: [Fleet.CellEvent]) {
        for event in events {
            node.publishInBackground(channel: event.cell.channel, data: Payload(event.data))
        }
    }

    private func tell(_ rental: Rental) {
        node.tell(rental.user, ["type": "rental", "rental": rental.json])
    }
}

/// `rentals.fleet`: the cars one node changed; the others read them again.
struct FleetChange: ReplicaPayload {
    let cars: [String]
    init(cars: [String]) { self.cars = cars }
    init(_ fields: RequestFields) throws(HubError) {
        cars = try fields.noting("ids of the cars that changed").stringArray("cars", maxCount: .max, maxLength: .max)
    }
    var json: JSON { ["cars": .array(cars.map(JSON.string))] }
}
