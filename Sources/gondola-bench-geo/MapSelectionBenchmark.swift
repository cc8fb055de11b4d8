import GondolaGeo

/// The cost of choosing a traveller's map (`MapSelector.choose`) on every position update,
/// with `resorts` resorts of 400-vertex boundaries (3 to 8 km across) spread over 200 × 200 km
/// of the Alps: travellers everywhere on that area, a fifth of them inside a resort, each
/// update passing the traveller's previous choice (the hysteresis path). Seeded.
struct MapSelectionBenchmark {
    let resorts: Int
    let updates: Int

    struct Result {
        let updates: Int
        let mountain: Int
        let microsPerUpdate: Double
    }

    func run() -> Result {
        var random = SeededRandom(seed: 5)
        let center = GeoPoint(lat: 46, lon: 8)
        var middles: [GeoPoint] = []
        let areas = (0..<resorts).map { id in
            let middle = random.point(near: center, metres: 100_000)
            middles.append(middle)
            let radius = Double.random(in: 1500...4000, using: &random)
            var ring = (0..<400).map { step in
                Geodesy.destination(from: middle, bearing: Double(step) * 360 / 400, metres: radius * .random(in: 0.85...1, using: &random))
            }
            ring.append(ring[0])
            return ResortArea(id: "resort-\(id)", boundary: [Polygon(outline: ring)], baseElevation: 1200)
        }
        let selector = MapSelector(resorts: areas)
        let points = (0..<updates).map { n in
            let anywhere = random.point(near: center, metres: 100_000)
            let inResort = random.point(near: middles[n % middles.count], metres: 1000)
            let point = n % 5 == 0 ? inResort : anywhere
            return GeoPoint(lat: point.lat, lon: point.lon, alt: .random(in: 600...2500, using: &random))
        }
        var choice = MapChoice.street
        var mountain = 0
        let start = ContinuousClock.now
        for point in points {
            choice = selector.choose(for: point, previous: choice)
            if choice.mode == .mountain { mountain += 1 }
        }
        let seconds = (ContinuousClock.now - start).seconds
        return Result(updates: updates, mountain: mountain, microsPerUpdate: seconds * 1e6 / Double(updates))
    }
}
