import GondolaDomain
import GondolaGeo
import GondolaHub
import GondolaProtocol

/// What `gondola serve --demo` sets up: a running trip on the demo resort with a
/// host and travellers who ride its lifts and ski its pistes, reporting their
/// positions once a second, so that a new user sees positions move at once.
public struct DemoTrip: Sendable {
    public static let tripID = "demo"
    public static let host = (id: "demo-host", name: "Hana (host)")
    public static let travellers = [("demo-anna", "Anna"), ("demo-ben", "Ben"), ("demo-chloe", "Chloe"), ("demo-dan", "Dan")]

    let travel: TravelService

    public init(travel: TravelService) { self.travel = travel }

    /// Creates the trip and its members unless they exist; the trip runs from a day ago for a week.
    public func seed() async throws {
        guard let resort = travel.resorts.resort("demo") else {
            throw ResortLoadError(description: "--demo needs the demo resort (resorts/demo.geojson) in the resorts folder")
        }
        let directory = travel.directory
        let now = unixMilliseconds()
        if try await directory.trip(Self.tripID) == nil {
            let trip = Trip(id: Self.tripID, name: "Demo ski week", resort: resort.id, startsAt: now - 86_400_000, endsAt: now + 7 * 86_400_000)
            try await directory.createTrip(trip, hosts: [Self.host.id])
        }
        for (id, name) in [Self.host] + Self.travellers {
            if try await directory.role(of: id, in: Self.tripID) == nil {
                try await directory.addMember(trip: Self.tripID, user: id, role: .traveller)
            }
            var profile = try await directory.profile(of: id) ?? Profile(id: id, name: name)
            profile.name = name
            try await directory.save(profile)
        }
        travel.locations.relationsChanged([Self.host.id] + Self.travellers.map(\.0))
    }

    /// Moves the travellers along the resort's ways, one `location.update` per
    /// traveller per second, until cancelled.
    public func run() async {
        guard let resort = travel.resorts.resort("demo"), !resort.ways.isEmpty else { return }
        var walkers = Self.travellers.enumerated().map { index, traveller in
            (user: traveller.0, walker: SkiWalker(graph: resort.graph, node: index * 3, seed: UInt64(index)))
        }
        while !Task.isCancelled {
            for index in walkers.indices {
                let point = walkers[index].walker.advance(in: resort.graph, seconds: 1)
                var data: [(key: String, value: JSON)] = [("lat", .double(point.lat)), ("lon", .double(point.lon))]
                if let alt = point.alt { data.append(("alt", .double(alt))) }
                _ = try? travel.locations.update(user: walkers[index].user, LocationUpdate.decode(.object(data), now: unixMilliseconds()))
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }
}
