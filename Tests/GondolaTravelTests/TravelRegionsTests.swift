import GondolaGeo
import Testing

@testable import GondolaTravel

/// `TravelRegions`: which region a position travels in, and which regions a watcher follows.
@Suite struct TravelRegionsTests {
    /// A resort whose boundary is the square from (45.00, 6.00) to (45.02, 6.03).
    static let regions: TravelRegions = {
        let corners = [
            GeoPoint(lat: 45.00, lon: 6.00), GeoPoint(lat: 45.00, lon: 6.03), GeoPoint(lat: 45.02, lon: 6.03), GeoPoint(lat: 45.02, lon: 6.00),
        ]
        let resort = ResortArea(id: "summit", boundary: [Polygon(outline: corners + [corners[0]])], baseElevation: 1_500)
        return TravelRegions(selector: MapSelector(resorts: [resort]))
    }()

    @Test func aPositionOnAResortsMapIsInTheResortElseInItsCell() {
        let inside = GeoPoint(lat: 45.01, lon: 6.01)
        #expect(Self.regions.region(of: inside, choice: .mountain("summit")) == "resort:summit")
        #expect(Self.regions.region(of: inside, choice: .street) == "cell:90:12")
        #expect(Self.regions.region(of: GeoPoint(lat: -33.9, lon: 151.2), choice: .street) == "cell:-68:302")
        #expect(Self.regions.region(of: GeoPoint(lat: 10, lon: 190), choice: .street) == "cell:20:-340", "longitude normalised")
    }

    @Test func aWatcherFollowsTheCellsItsCircleTouchesAndTheResortsNearIt() {
        // Far from cell edges and from the resort: its own cell only.
        #expect(Self.regions.regions(near: GeoPoint(lat: 45.25, lon: 6.75), radius: 1_000) == ["cell:90:13"])
        // 550 m south of the resort, 1 km radius: the resort is within reach (radius + twice the margin),
        // and so is the cell to the south.
        let below = GeoPoint(lat: 44.995, lon: 6.025)
        #expect(Self.regions.regions(near: below, radius: 1_000) == ["cell:89:12", "cell:90:12", "resort:summit"])
        // A cell corner: the four cells around it.
        #expect(Self.regions.regions(near: GeoPoint(lat: 45.5, lon: 6.5), radius: 500) == ["cell:90:12", "cell:90:13", "cell:91:12", "cell:91:13"])
        // A huge radius is capped.
        #expect(Self.regions.regions(near: GeoPoint(lat: 45, lon: 6), radius: 2_000_000).count == TravelRegions.maxCellsPerWatcher)
    }
}
