import GondolaGeo
import GondolaHub
import GondolaProtocol
import Testing

@testable import GondolaTravel

/// The pieces of the location path on their own: reading an update, naming position
/// channels, what a channel's frames carry, and how frames are written.
@Suite struct LocationPiecesTests {
    static let now: Int64 = 1_795_000_000_000
    static let origin = GeoPoint(lat: 45.3, lon: 6.58)

    // MARK: LocationUpdate

    @Test func anUpdateKeepsEveryFieldAndDefaultsTsToNow() throws {
        let full = try LocationUpdate.decode(
            [
                "lat": 45.3, "lon": 6.58, "alt": 1790, "accuracy": 5, "heading": 90, "speed": 3.5,
                "ts": .int(Self.now - 1000),
            ], now: Self.now
        ).position
        #expect(full.point == GeoPoint(lat: 45.3, lon: 6.58, alt: 1790))
        #expect(full.accuracy == 5 && full.heading == 90 && full.speed == 3.5 && full.ts == Self.now - 1000)
        let bare = try LocationUpdate.decode(["lat": -10, "lon": 170], now: Self.now).position
        #expect(bare.ts == Self.now && bare.point.alt == nil && bare.accuracy == nil)
    }

    @Test(arguments: [
        (#"{"lon":6.5}"#, "lat is required"),
        (#"{"lat":45,"lon":6.5,"alt":9001}"#, "alt must be between -500 and 9000, got 9001"),
        (#"{"lat":45,"lon":6.5,"accuracy":-1}"#, "accuracy must be between 0 and 100000, got -1"),
        (#"{"lat":45,"lon":6.5,"heading":361}"#, "heading must be between 0 and 360, got 361"),
        (#"{"lat":45,"lon":6.5,"speed":"fast"}"#, "speed must be a number, got string"),
        (#"{"lat":45,"lon":6.5,"ts":1.5}"#, "ts must be an integer, got number"),
        (#"[45,6.5]"#, "data must be an object, got array"),
        (#"{"lat":45,"lon":6.5,"altitude":1800,"bearing":3}"#, "unknown fields 'altitude', 'bearing'"),
    ])
    func aBadUpdateNamesItsField(data: String, message: String) throws {
        #expect(throws: HubError.badRequest(message)) { try LocationUpdate.decode(try JSONParser.parse(Array(data.utf8)), now: Self.now).position }
    }

    @Test func aTsFarFromTheServerClockIsRefused() {
        let late = Self.now + LocationUpdate.clockTolerance + 1
        #expect(throws: HubError.self) { try LocationUpdate.decode(["lat": 45, "lon": 6, "ts": .int(late)], now: Self.now).position }
        #expect(
            (try? LocationUpdate.decode(["lat": 45, "lon": 6, "ts": .int(Self.now + LocationUpdate.clockTolerance)], now: Self.now).position) != nil)
    }

    // MARK: PositionChannel

    @Test func positionChannelsAreNamedOnceAndReadBack() throws {
        let channels: [PositionChannel] = [.nearby(user: "ann"), .friends(user: "bo.b@x"), .locations(trip: "t1a2")]
        #expect(channels.map(\.name) == ["nearby:#ann", "friends:#bo.b@x", "locations:t1a2"])
        for channel in channels { #expect(PositionChannel(try ChannelName(channel.name)) == channel) }
        #expect(channels.map(\.namespace.name) == ["nearby", "friends", "locations"])
        #expect(PositionChannel(try ChannelName("personal:#ann")) == nil)
        #expect(PositionChannel(try ChannelName("nearby:ann")) == nil, "a nearby channel names its user after #")
        #expect(PositionChannel(try ChannelName("nearby:#ann,bob")) == nil, "a nearby channel has one user")
    }

    // MARK: PositionChannels

    typealias Map = ProximityMap

    static func fix(_ north: Double, ts: Int64 = now) -> LivePosition {
        LivePosition(point: origin.offset(north: north, east: 0), ts: ts)
    }

    @Test func aChannelShowsItsMembersThatMovedAndRemovesThoseItMayNoLongerShow() {
        var map = Map()
        var channels = PositionChannels()
        let trip = PositionChannel.locations(trip: "t")
        map.update(1, Self.fix(0), receivedAt: 0)
        map.update(2, Self.fix(10), receivedAt: 0)
        map.update(9, Self.fix(20), receivedAt: 0)
        var hidden: Set<Int32> = []
        let visible: (PositionChannels.Audience, Int32) -> Bool = { _, slot in !hidden.contains(slot) }
        #expect(channels.open(trip, audience: .trip("t"), members: [1, 2, 3], map: map, visible: visible) == [1, 2])
        #expect(channels.frames(map: map, visible: visible).isEmpty, "nothing changed since the snapshot")

        map.update(2, Self.fix(15), receivedAt: 1)
        map.update(9, Self.fix(25), receivedAt: 1)
        var frames = channels.frames(map: map, visible: visible)
        #expect(frames.map(\.positions) == [[2]], "only members are carried")

        map.update(3, Self.fix(30), receivedAt: 2)
        hidden.insert(1)
        map.reconsider(1)
        frames = channels.frames(map: map, visible: visible)
        #expect(frames.map(\.positions) == [[3]])
        #expect(frames.map(\.removed) == [[1]])

        channels.setMembers(trip, [3])
        frames = channels.frames(map: map, visible: visible)
        #expect(frames.map(\.removed) == [[2]], "a member who left the trip is removed")
        #expect(frames.map(\.positions) == [[]])

        map.remove(3)
        frames = channels.frames(map: map, visible: visible)
        #expect(frames.map(\.removed) == [[3]], "a position that expired is removed")
        channels.close(trip)
        #expect(channels.isEmpty)
    }

    @Test func channelsTakeTurnsOverThePhases() {
        var map = Map(phases: 3)
        var channels = PositionChannels(phases: 3)
        let names = (0..<3).map { PositionChannel.friends(user: "u\($0)") }
        for (slot, name) in names.enumerated() {
            _ = channels.open(name, audience: .friendsOf(Int32(slot)), members: [7], map: map, visible: { _, _ in true })
        }
        map.update(7, Self.fix(0), receivedAt: 0)
        var seen: [PositionChannel] = []
        for phase in 0..<3 {
            let frames = channels.frames(phase: phase, map: map, visible: { _, _ in true })
            #expect(frames.count == 1, "phase \(phase) carries one channel")
            seen += frames.map(\.channel)
        }
        #expect(Set(seen) == Set(names))
    }

    // MARK: TravelJSON

    @Test func framesAreWrittenAsTheContractSays() throws {
        var full = Self.fix(0, ts: 42)
        full.point.alt = 1790.04
        full.accuracy = 5
        full.heading = 90.5
        full.speed = 3
        let positions = TravelJSON.positions([("ann", full), ("bob", LivePosition(point: GeoPoint(lat: 1.5, lon: -2.25), ts: 7))], removed: ["cy"])
        #expect(
            positions.description == #"{"positions":[{"user":"ann","lat":45.3,"lon":6.58,"alt":1790,"accuracy":5,"heading":90.5,"speed":3,"ts":42},"#
                + #"{"user":"bob","lat":1.5,"lon":-2.25,"ts":7}],"removed":["cy"]}"#)
        #expect(TravelJSON.positions([]).description == #"{"positions":[]}"#)

        let enter = ProximityEvent(kind: .enter, subject: 1, point: GeoPoint(lat: 45, lon: 6, alt: 1000.26), distance: 12.345)
        let leave = ProximityEvent(kind: .leave, subject: 2, point: nil, distance: 530)
        let frame = TravelJSON.nearbyFrame([
            .init(subject: .init(user: "ann", point: enter.point), kind: .enter, distance: enter.distance, ts: 9),
            .init(subject: .init(user: "bo\"b", point: leave.point), kind: .leave, distance: leave.distance, ts: nil),
        ])
        #expect(
            frame.description == #"{"events":[{"type":"enter","user":"ann","lat":45,"lon":6,"alt":1000.3,"distance":12.3,"ts":9},"#
                + #"{"type":"leave","user":"bo\"b","distance":530}]}"#)
        // Every frame is valid JSON.
        for raw in [positions, frame] { _ = try JSONParser.parse(raw.bytes) }
    }

    /// Distances and altitudes are written from their whole tenths; the bytes must be
    /// those of the rounded number written as any other number.
    @Test(arguments: [UInt64(1), 2, 3])
    func metresAreWrittenAsTheirRoundedNumber(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        let edges: [Double] = [
            0, -0.0, 0.04, -0.04, 0.05, -0.05, 0.95, -0.95, 1, -1, 530, 12.345, -499.96, 8848.86, 999_999_999_999.9,
            1e13, -1e13, 4e15, .infinity, -.infinity, .nan,
        ]
        let scales: [Double] = [1, 10, 1_000, 100_000, 1e9]
        let values = edges + (0..<3_000).map { _ in Double.random(in: -1...1, using: &random) * scales.randomElement(using: &random)! }
        for value in values {
            var fast = JSONWriter()
            var plain = JSONWriter()
            TravelJSON.writeMetres(value, to: &fast)
            plain.writeNumber(TravelJSON.roundedMetres(value))
            #expect(fast.bytes == plain.bytes, "\(value) (seed \(seed))")
        }
    }

    /// A nearby event shows the position it was computed for, even when the bytes kept
    /// for the subject's latest position are of another one.
    @Test func aNearbyEventShowsItsOwnPosition() async throws {
        let directory = try await Directory(repository: SQLiteTravelRepository(database: travelDatabase()))
        var live = LocationService.Live(map: Map(), channels: PositionChannels(phases: 1))
        let ann = live.slot(for: "ann", directory: directory)
        let latest = GeoPoint(lat: 45.5, lon: 6.5, alt: 2000)
        live.subjects[Int(ann)] = TravelJSON.NeighbourSubject(user: "ann", point: latest)
        let earlier = GeoPoint(lat: 45.25, lon: 6.75, alt: 1500)
        let events = [
            ProximityEvent(kind: .move, subject: ann, point: latest, distance: 10),
            ProximityEvent(kind: .leave, subject: ann, point: earlier, distance: 20),
            ProximityEvent(kind: .leave, subject: ann, point: nil, distance: 30),
        ]
        let frame = LocationService.StagedFrame(nearby: .nearby(user: "bob"), events, live: live)
        #expect(
            frame.data.description == #"{"events":[{"type":"move","user":"ann","lat":45.5,"lon":6.5,"alt":2000,"distance":10},"#
                + #"{"type":"leave","user":"ann","lat":45.25,"lon":6.75,"alt":1500,"distance":20},{"type":"leave","user":"ann","distance":30}]}"#)
    }

    @Test func aNearbySnapshotListsUsersNearestFirstWithTheirTs() {
        let neighbours = [
            Neighbour(id: Int32(0), point: GeoPoint(lat: 45, lon: 6), distance: 3.04),
            Neighbour(id: Int32(1), point: GeoPoint(lat: 45.001, lon: 6), distance: 111.2),
        ]
        var slots = UserSlots()
        _ = slots.slot(for: "ann")
        _ = slots.slot(for: "bob")
        let snapshot = TravelJSON.nearbySnapshot(neighbours, slots: slots) { $0 == 0 ? 5 : nil }
        #expect(
            snapshot.description
                == #"{"users":[{"user":"ann","lat":45,"lon":6,"alt":null,"distance":3,"ts":5},{"user":"bob","lat":45.001,"lon":6,"alt":null,"distance":111.2}]}"#
        )
    }
}
