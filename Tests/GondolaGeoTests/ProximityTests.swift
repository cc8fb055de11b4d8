import GondolaGeo
import Testing

/// Roaming proximity events equal a brute-force model applying the same rules to every pair.
@Suite struct ProximityTests {
    struct Model {
        let margin: Double
        var points: [Int: GeoPoint] = [:]
        var radii: [Int: Double] = [:]
        var sets: [Int: Set<Int>] = [:]

        mutating func update(_ id: Int, _ point: GeoPoint) -> Set<String> {
            points[id] = point
            var events: Set<String> = []
            for (watcher, radius) in radii where watcher != id {
                guard let watcherPoint = points[watcher] else { continue }
                let distance = Geodesy.distance(watcherPoint, point)
                if sets[watcher, default: []].contains(id) {
                    if distance > radius + margin {
                        sets[watcher]!.remove(id)
                        events.insert("leave \(watcher) \(id)")
                    } else {
                        events.insert("move \(watcher) \(id)")
                    }
                } else if distance <= radius {
                    sets[watcher, default: []].insert(id)
                    events.insert("enter \(watcher) \(id)")
                }
            }
            if let radius = radii[id] {
                for (other, otherPoint) in points where other != id {
                    let distance = Geodesy.distance(point, otherPoint)
                    if sets[id, default: []].contains(other) {
                        if distance > radius + margin {
                            sets[id]!.remove(other)
                            events.insert("leave \(id) \(other)")
                        }
                    } else if distance <= radius {
                        sets[id, default: []].insert(other)
                        events.insert("enter \(id) \(other)")
                    }
                }
            }
            return events
        }
    }

    static func describe(_ events: [ProximityEvent<Int>]) -> Set<String> {
        Set(events.map { "\($0.kind.rawValue) \($0.watcher) \($0.subject)" })
    }

    @Test(arguments: [0, 2, 3])
    func randomWalksMatchBruteForce(_ place: Int) {
        var random = SeededRandom(seed: UInt64(100 + place))
        let centre = testCentres[place]
        var tracker = ProximityTracker<Int>(cellMetres: 150, margin: 20)
        var model = Model(margin: 20)
        for id in 0..<80 {
            let point = random.point(near: centre, metres: 800)
            #expect(Self.describe(tracker.update(id, to: point, timestamp: 0)) == model.update(id, point))
        }
        for id in 0..<25 {
            let radius = Double.random(in: 50...400, using: &random)
            model.radii[id] = radius
            let events = tracker.watch(id, radius: radius)
            var expected: Set<String> = []
            for (other, point) in model.points where other != id && Geodesy.distance(model.points[id]!, point) <= radius {
                model.sets[id, default: []].insert(other)
                expected.insert("enter \(id) \(other)")
            }
            #expect(Self.describe(events) == expected)
        }
        for step in 1...3000 {
            let id = Int.random(in: 0..<80, using: &random)
            let point = random.point(near: model.points[id]!, metres: 60)
            let got = Self.describe(tracker.update(id, to: point, timestamp: Int64(step)))
            let expected = model.update(id, point)
            #expect(got == expected, "step \(step)")
            if got != expected { return }
        }
        for id in 0..<25 { #expect(tracker.neighbours(of: id) == model.sets[id, default: []]) }
    }

    @Test func standingOnTheBoundaryDoesNotFlap() {
        var tracker = ProximityTracker<String>(cellMetres: 100, margin: 20)
        let origin = GeoPoint(lat: 46, lon: 7)
        _ = tracker.update("watcher", to: origin, timestamp: 0)
        _ = tracker.watch("watcher", radius: 100)
        var kinds: [ProximityEvent<String>.Kind] = []
        for step in 0..<50 {
            let jitter = step % 2 == 0 ? 95.0 : 110.0
            let point = Geodesy.destination(from: origin, bearing: 90, metres: jitter)
            kinds += tracker.update("walker", to: point, timestamp: Int64(step)).map(\.kind)
        }
        #expect(kinds.first == .enter)
        #expect(!kinds.contains(.leave))
        #expect(kinds.filter { $0 == .enter }.count == 1)
        let far = Geodesy.destination(from: origin, bearing: 90, metres: 125)
        #expect(tracker.update("walker", to: far, timestamp: 99).map(\.kind) == [.leave])
    }

    @Test func removalAndExpiryGiveLeaves() {
        var tracker = ProximityTracker<String>(cellMetres: 100, margin: 10)
        _ = tracker.update("w", to: GeoPoint(lat: 0, lon: 0), timestamp: 100)
        _ = tracker.watch("w", radius: 500)
        _ = tracker.update("a", to: GeoPoint(lat: 0, lon: 0.001), timestamp: 1)
        _ = tracker.update("b", to: GeoPoint(lat: 0, lon: 0.002), timestamp: 100)
        #expect(tracker.neighbours(of: "w") == ["a", "b"])
        let expired = tracker.expire(olderThan: 50)
        #expect(expired.map(\.subject) == ["a"] && expired.map(\.kind) == [.leave])
        #expect(tracker.remove("b").map(\.kind) == [.leave])
        #expect(tracker.neighbours(of: "w").isEmpty)
    }
}
