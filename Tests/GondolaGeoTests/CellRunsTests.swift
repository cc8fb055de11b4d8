import Testing

@testable import GondolaGeo

/// The pool of cell runs behind `PointGrid`: after any sequence of puts and removes,
/// every slot's entry is where its place says, every occupied cell's run holds exactly
/// its slots, and emptied cells, runs and tiles are given back and reused.
@Suite struct CellRunsTests {
    /// A grid of 1,000 × 1,000 cells (8,000 × 8,000 tiles would be far more than the test touches).
    static let columns: Int64 = 1000

    /// Checks `runs` against `model` (slot → cell) and returns the first disagreement.
    func disagreement(_ runs: CellRuns, _ model: [Int32: Int64]) -> String? {
        if runs.count != model.count { return "count \(runs.count), model \(model.count)" }
        var seen: [Int32: Int64] = [:]
        var cells = 0
        var problem: String?
        runs.forEachOccupiedCell { cell, run in
            cells += 1
            for index in run {
                let entry = runs.pool[index]
                seen[entry.slot] = cell
                if runs.places[Int(entry.slot)].index != Int32(index) {
                    problem = problem ?? "slot \(entry.slot) is at \(index), its place says \(runs.places[Int(entry.slot)].index)"
                }
            }
            if runs.run(of: cell) != run { problem = problem ?? "cell \(cell): lookup \(runs.run(of: cell)), enumeration \(run)" }
        }
        if let problem { return problem }
        if seen != model { return "the runs hold \(seen.count) slots that differ from the model's \(model.count)" }
        if cells != runs.occupiedCells { return "\(cells) occupied cells enumerated, \(runs.occupiedCells) counted" }
        if cells != Set(model.values).count { return "\(cells) occupied cells, the model has \(Set(model.values).count)" }
        for (slot, cell) in model {
            guard let (held, entry) = runs.entry(of: slot), held == cell, entry.slot == slot else {
                return "slot \(slot) is not found in cell \(cell)"
            }
        }
        return nil
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func putsAndRemovesKeepEveryRunConsistent(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        var runs = CellRuns(columns: Self.columns)
        var model: [Int32: Int64] = [:]
        // Crowded cells (runs that grow past 4, 8, 16 and shrink) and scattered ones (many tiles).
        let crowded = (0..<6).map { _ in Int64.random(in: 0..<Self.columns * Self.columns, using: &random) }
        for step in 0..<20_000 {
            let slot = Int32.random(in: 0..<400, using: &random)
            if Int.random(in: 0..<5, using: &random) == 0 {
                let removed = runs.remove(slot)
                #expect(removed == (model.removeValue(forKey: slot) != nil), "seed \(seed), step \(step)")
            } else {
                let cell =
                    Bool.random(using: &random)
                    ? crowded.randomElement(using: &random)! : Int64.random(in: 0..<Self.columns * Self.columns, using: &random)
                runs.put(GridEntry(latOffset: Float(step), lonOffset: 0, alt: .nan, slot: slot), in: cell)
                model[slot] = cell
            }
            if step % 500 == 0, let problem = disagreement(runs, model) {
                Issue.record("seed \(seed), step \(step): \(problem)")
                return
            }
        }
        #expect(disagreement(runs, model) == nil, "seed \(seed)")
        // Empty it: every cell, run and tile goes back.
        for slot in model.keys {
            let removed = runs.remove(slot)
            #expect(removed, "seed \(seed)")
        }
        #expect(runs.count == 0 && runs.occupiedCells == 0 && runs.liveTiles == 0, "seed \(seed)")
        #expect(runs.table.allSatisfy { $0.key == CellRuns.emptyKey }, "seed \(seed)")
    }

    @Test func emptiedRunsAndTilesAreReusedBeforeThePoolGrows() {
        var runs = CellRuns(columns: Self.columns)
        func fill() {
            for slot in Int32(0)..<300 {
                // 30 cells of 10 slots, in 30 different tiles.
                runs.put(GridEntry(latOffset: 0, lonOffset: 0, alt: .nan, slot: slot), in: Int64(slot / 10) * 8 * (Self.columns + 1))
            }
        }
        fill()
        let pool = runs.pool.count
        let tiles = runs.tileKeys.count
        for slot in Int32(0)..<300 { _ = runs.remove(slot) }
        fill()
        #expect(runs.pool.count == pool)
        #expect(runs.tileKeys.count == tiles)
        #expect(disagreement(runs, Dictionary(uniqueKeysWithValues: (Int32(0)..<300).map { ($0, Int64($0 / 10) * 8 * (Self.columns + 1)) })) == nil)
    }

    @Test func altitudeIsKeptWithThePoint() {
        var index = MovingPointIndex<String>(cellMetres: 100)
        index.upsert("high", at: GeoPoint(lat: 45.3, lon: 6.6, alt: 2750.5), timestamp: 1)
        index.upsert("flat", at: GeoPoint(lat: 45.3001, lon: 6.6), timestamp: 1)
        #expect(index.point(of: "high")?.alt == 2750.5)
        #expect(index.point(of: "flat")?.alt == nil)
        let found = index.nearby(GeoPoint(lat: 45.3, lon: 6.6), radius: 50)
        #expect(found.map(\.id) == ["high", "flat"])
        #expect(found.map(\.point.alt) == [2750.5, nil])
    }
}
