import Testing

@testable import GondolaGeo

/// `ChangeGrid` answers whether anything changed near a point, also across the
/// antimeridian and near the poles, and forgets old stamps.
@Suite struct ChangeGridTests {
    @Test(arguments: [
        GeoPoint(lat: 45.3, lon: 6.58),
        GeoPoint(lat: -16.5, lon: 179.999),
        GeoPoint(lat: 10, lon: -180),
        GeoPoint(lat: 89.999, lon: 40),
        GeoPoint(lat: -90, lon: 0),
    ])
    func seesChangesWithinReachOnly(center: GeoPoint) {
        var grid = ChangeGrid(cellMetres: 250)
        let box = BoundingBox(around: center, radius: 520)
        #expect(!grid.changed(in: box, after: 0))
        grid.mark(GeoPoint(lat: -center.lat / 2, lon: center.lon > 0 ? center.lon - 90 : center.lon + 90), version: 1)
        #expect(!grid.changed(in: box, after: 0), "a change far away")
        // Just east and north of the centre, wrapping at ±180 and clamped at the poles.
        let near = center.offset(north: center.lat > 89 ? -300 : 300, east: 300)
        grid.mark(GeoPoint(lat: max(-90, min(90, near.lat)), lon: Geodesy.normalizedLongitude(near.lon)), version: 2)
        #expect(grid.changed(in: box, after: 1))
        #expect(!grid.changed(in: box, after: 2), "only changes after the version asked")
        grid.forget(notAfter: 2)
        #expect(grid.stamps.isEmpty)
    }
}
