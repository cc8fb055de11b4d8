import GondolaGeo
import Testing

/// The nearby frames of `ProximityMap` against a brute-force recomputation.
@Suite struct ProximityMapTests {
    static let origin = GeoPoint(lat: 45.3, lon: 6.58)

    /// Each round is one tick: travellers move, then the watchers of the tick's phase
    /// get their frames and must then agree with a brute-force answer.
    @Test(arguments: [
        (radius: 300.0, limit: 200, phases: 1, seed: UInt64(1)), (radius: 400.0, limit: 5, phases: 1, seed: UInt64(2)),
        (radius: 300.0, limit: 20, phases: 4, seed: UInt64(3)),
    ])
    func framesMatchBruteForce(radius: Double, limit: Int, phases: Int, seed: UInt64) {
        var random = SeededRandom(seed: seed)
        var map = ProximityMap(margin: 20, phases: phases)
        let count: Int32 = 150
        var points: [Int32: GeoPoint] = [:]
        var hidden: Set<Int32> = []
        var told: [Int32: Set<Int32>] = [:]
        let canSee: (Int32, Int32) -> Bool = { _, subject in !hidden.contains(subject) }
        for slot in 0..<count {
            points[slot] = Self.origin.offset(north: .random(in: -800...800, using: &random), east: .random(in: -800...800, using: &random))
            map.update(slot, LivePosition(point: points[slot]!, ts: 0), receivedAt: 0)
        }
        for watcher in stride(from: Int32(0), to: count, by: 3) {
            let snapshot = map.watch(watcher, radius: radius, limit: limit, canSee: canSee).snapshot
            told[watcher] = Set(snapshot.map(\.id))
        }
        map.endFrame()
        for round in 0..<40 * phases {
            for slot in 0..<count where Bool.random(using: &random) {
                if round % 10 == 9, slot % 17 == 0 {
                    map.remove(slot)
                    points[slot] = nil
                    continue
                }
                let base = points[slot] ?? Self.origin
                points[slot] = base.offset(north: .random(in: -60...60, using: &random), east: .random(in: -60...60, using: &random))
                map.update(slot, LivePosition(point: points[slot]!, ts: 0), receivedAt: 0)
            }
            if round % 7 == 3 {
                let flipped = Int32.random(in: 0..<count, using: &random)
                if hidden.remove(flipped) == nil { hidden.insert(flipped) }
                map.reconsider(flipped)
            }
            let phase = map.tick % phases
            for (watcher, events) in map.nearbyFrame(phase: phase, canSee: canSee) {
                for event in events {
                    switch event.kind {
                    case .enter: #expect(told[watcher, default: []].insert(event.subject).inserted, "double enter")
                    case .move: #expect(told[watcher]?.contains(event.subject) == true, "move before enter")
                    case .leave: #expect(told[watcher]?.remove(event.subject) != nil, "leave before enter")
                    }
                }
            }
            map.endFrame()
            for (watcher, set) in told where map.phase(of: watcher) == phase {
                guard let center = points[watcher] else {
                    #expect(set.isEmpty, "a watcher without a position is told nobody")
                    continue
                }
                let distances = points.filter { $0.key != watcher && !hidden.contains($0.key) }
                    .mapValues { Geodesy.distance(center, $0) }
                for subject in set {
                    let distance = distances[subject]
                    #expect(distance != nil && distance! <= radius + 20 + 0.01, "told \(subject) at \(distance ?? -1) m")
                }
                let within = distances.filter { $0.value <= radius }
                if within.count <= limit {
                    #expect(Set(within.keys).isSubset(of: set), "round \(round): missing \(Set(within.keys).subtracting(set))")
                } else {
                    #expect(set.count == limit)
                }
            }
        }
    }

    @Test func watchersWithoutPositionSeeNobodyAndLeavesCarryTheLastPoint() {
        var map = ProximityMap(margin: 20)
        map.update(1, LivePosition(point: Self.origin, ts: 0), receivedAt: 0)
        #expect(map.watch(0, radius: 500, limit: 50, canSee: { _, _ in true }).snapshot.isEmpty)
        map.update(0, LivePosition(point: Self.origin.offset(north: 100, east: 0), ts: 0), receivedAt: 10)
        let enter = map.nearbyFrame(canSee: { _, _ in true })
        #expect(enter.first?.events.map(\.kind) == [.enter])
        #expect(abs((enter.first?.events.first?.distance ?? 0) - 100) < 0.5)
        map.endFrame()
        #expect(map.expire(receivedBefore: 5) == [1])
        #expect(map.fix(of: 0) != nil)
        let leave = map.nearbyFrame(canSee: { _, _ in true })
        #expect(leave.first?.events.first?.kind == .leave)
        #expect(leave.first?.events.first?.point == Self.origin)
    }
}
