import Dispatch
import Foundation
import GondolaDomain
import GondolaGeo
import GondolaHub
import GondolaProtocol
import Testing

@testable import GondolaTravel

/// What `location.update` records before the live map takes it: the rate limit, the
/// map choice, the region, one pending position per traveller; and that an update
/// is answered while a frame tick holds the live map.
@Suite struct LocationArrivalsTests {
    static let start = ContinuousClock.now
    static let origin = GeoPoint(lat: 45.3, lon: 6.58)

    static func position(_ north: Double, ts: Int64 = 1_795_000_000_000) -> LivePosition {
        LivePosition(point: origin.offset(north: north, east: 0), ts: ts)
    }

    static func admit(
        _ arrivals: inout LocationArrivals, _ user: String, _ north: Double, after seconds: Double = 0,
        region: String = "r1", choice: MapChoice = .street, previous: ((MapChoice) -> Void)? = nil
    ) -> LocationArrivals.Admission? {
        arrivals.admit(
            user, position(north), receivedAt: Int64(north), now: start + .seconds(seconds),
            bucket: { TokenBucket(rate: 2, burst: 2, now: start) },
            decide: { previousChoice in
                previous?(previousChoice)
                return (choice, region)
            })
    }

    @Test func anEmptyBucketRefusesAndRecordsNothing() {
        var arrivals = LocationArrivals()
        #expect(Self.admit(&arrivals, "ann", 1) != nil)
        #expect(Self.admit(&arrivals, "ann", 2) != nil)
        #expect(Self.admit(&arrivals, "ann", 3, region: "r2", choice: .mountain("demo")) == nil, "the burst of 2 is spent")
        let taken = arrivals.take()
        #expect(taken.map(\.receivedAt) == [2], "the refused position is not recorded")
        #expect(taken.map(\.region) == ["r1"])
        let refill = Self.admit(&arrivals, "ann", 4, after: 0.5, previous: { #expect($0 == .street, "the refused update chose nothing") })
        #expect(refill != nil, "half a second at 2 per second gives a token back")
    }

    @Test func aNewerPositionReplacesThePendingOneAndTakingStartsAfresh() {
        var arrivals = LocationArrivals()
        _ = Self.admit(&arrivals, "ann", 1)
        _ = Self.admit(&arrivals, "bob", 10)
        _ = Self.admit(&arrivals, "ann", 2, after: 1)
        let first = arrivals.take()
        #expect(first.map(\.user) == ["ann", "bob"], "one per traveller, in the order each first sent one")
        #expect(first.map(\.receivedAt) == [2, 10], "the latest of each")
        #expect(arrivals.take().isEmpty)
        _ = Self.admit(&arrivals, "bob", 11, after: 2)
        _ = Self.admit(&arrivals, "ann", 3, after: 2)
        _ = Self.admit(&arrivals, "bob", 12, after: 3)
        #expect(arrivals.take().map(\.receivedAt) == [12, 3], "places from before the take are not reused")
    }

    @Test func theChoiceCarriesOverAndTheRegionChangeIsTold() throws {
        var arrivals = LocationArrivals()
        let first = try #require(Self.admit(&arrivals, "ann", 1, region: "resort:demo", choice: .mountain("demo")))
        #expect(first.previous == .street && first.choice == .mountain("demo") && first.regionChanged)
        let second = try #require(
            Self.admit(
                &arrivals, "ann", 2, after: 1, region: "resort:demo", choice: .mountain("demo"),
                previous: { #expect($0 == .mountain("demo")) }))
        #expect(!second.regionChanged && second.region == "resort:demo")
        arrivals.record(replica: .init(user: "ann", position: Self.position(3), receivedAt: 3, region: "cell:1:2"))
        let back = try #require(Self.admit(&arrivals, "ann", 4, after: 2, region: "resort:demo", choice: .mountain("demo")))
        #expect(back.regionChanged, "another node saw the traveller elsewhere in between")
        #expect(arrivals.take().map(\.receivedAt) == [4], "the replica waited in the same place and was replaced")
    }

    @Test func anUpdateIsAnsweredWhileAFrameHoldsTheLiveMap() async throws {
        let node = Node(configuration: HubConfiguration(), tokens: try await ConnectionTokens(secret: "arrivals-test-secret-of-32-bytes!!"))
        let directory = try await Directory(repository: SQLiteTravelRepository(database: travelDatabase()))
        let service = LocationService(node: node, directory: directory, resorts: ResortCatalog(resorts: []), settings: LocationSettings())
        let answered = DispatchSemaphore(value: 0)
        service.withLive { _ in
            Thread.detachNewThread {
                _ = try? service.update(user: "ann", LocationUpdate.decode(["lat": 45.3, "lon": 6.58, "alt": 1800], now: unixMilliseconds()))
                answered.signal()
            }
            #expect(answered.wait(timeout: .now() + 10) == .success, "the update waited for the live map")
        }
        #expect(service.lastPosition(of: "ann") == GeoPoint(lat: 45.3, lon: 6.58, alt: 1800), "a read takes the arrivals first")
    }
}
