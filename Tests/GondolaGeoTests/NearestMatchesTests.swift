import Testing

@testable import GondolaGeo

/// What a limited query keeps: the `limit` nearest of everything offered, by distance and
/// then by slot, whatever order they come in, with many exact ties.
@Suite struct NearestMatchesTests {
    @Test(arguments: [UInt64(1), 2, 3, 4])
    func theKeptAreTheFirstOfTheWholeSortedList(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        for _ in 0..<200 {
            let count = Int.random(in: 0...120, using: &random)
            // Few distinct distances, so ties between slots are common.
            let offered = (0..<count).map { slot in
                GridMatch(distance: Double(Int.random(in: 0...15, using: &random)) * 2.5, lat: 0, lon: 0, slot: Int32(slot))
            }.shuffled(using: &random)
            let limit = Int.random(in: 1...60, using: &random)
            var nearest = NearestMatches(limit: limit)
            for match in offered where nearest.wants(match.distance, match.slot) { nearest.keep(match) }
            if let reach = nearest.reach { #expect(offered.count >= limit && reach == nearest.matches.map(\.distance).max(), "seed \(seed)") }
            let whole = offered.sorted { ($0.distance, $0.slot) < ($1.distance, $1.slot) }
            let kept = nearest.sorted()
            #expect(kept.map(\.slot) == whole.prefix(limit).map(\.slot), "seed \(seed), limit \(limit)")
        }
    }
}
