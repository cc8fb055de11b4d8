import Foundation
import GondolaGeo
import GondolaProtocol
import GondolaTestSupport
import Testing

/// The travel domain through the real server over real sockets.
@Suite struct TravelEndToEndTests {
    static let origin = GeoPoint(lat: 45.30, lon: 6.58)

    static func update(_ point: GeoPoint) -> JSON { ["lat": .double(point.lat), "lon": .double(point.lon)] }

    /// 200 travellers walk at random; each watches 250 m around itself. After every
    /// round the set each watcher was told (snapshot plus enter/leave) must match
    /// a brute-force recomputation: everyone within the radius, nobody beyond the
    /// radius plus the 20 m hysteresis margin.
    @Test func nearbyStreamsMatchBruteForceForRandomWalks() async throws {
        let server = try await startTravelServer()
        let count = 200
        let radius = 250.0
        let margin = 20.0
        let seed: UInt64 = 20_261_125
        var random = SeededRandom(seed: seed)
        var clients: [LiveClient] = []
        var positions: [GeoPoint] = []
        for index in 0..<count {
            let client = try await server.client("w\(index)")
            let snapshot = try await client.subscribe("nearby:#w\(index)", data: ["radius": .double(radius), "limit": 200])
            #expect(snapshot?["users"]?.arrayValue.isEmpty == true)
            clients.append(client)
            positions.append(Self.origin.offset(north: .random(in: -600...600, using: &random), east: .random(in: -600...600, using: &random)))
        }
        for round in 0..<8 {
            if round > 0 {
                positions = positions.map { $0.offset(north: .random(in: -80...80, using: &random), east: .random(in: -80...80, using: &random)) }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (client, position) in zip(clients, positions) {
                    group.addTask { _ = try await client.rpc("location.update", Self.update(position)) }
                }
                try await group.waitForAll()
            }
            for (index, client) in clients.enumerated() {
                // What each watcher must end up told: everyone within the radius, nobody beyond
                // the radius plus the margin. Frames follow the updates within a few ticks.
                var within: Set<String> = []
                var beyond: Set<String> = []
                for (other, point) in positions.enumerated() where other != index {
                    let distance = Geodesy.distance(positions[index], point)
                    if distance <= radius { within.insert("w\(other)") }
                    if distance > radius + margin + 0.5 { beyond.insert("w\(other)") }
                }
                var told: Set<String> = []
                // The expectations below name the seed when the wait ends without the condition.
                try? await eventually {
                    told = Self.told(client.publications("nearby:#w\(index)"), watcher: index)
                    return within.isSubset(of: told) && told.isDisjoint(with: beyond)
                }
                #expect(told.isDisjoint(with: beyond), "seed \(seed), round \(round): w\(index) still has \(told.intersection(beyond))")
                #expect(within.isSubset(of: told), "seed \(seed), round \(round): w\(index) misses \(within.subtracting(told))")
            }
        }
        for client in clients { await client.close() }
        try await server.stop()
    }

    /// Who a watcher's nearby frames leave it seeing (snapshot plus enter and leave events),
    /// checking that the events are consistent on the way.
    static func told(_ frames: [JSON], watcher index: Int) -> Set<String> {
        var told: Set<String> = []
        for frame in frames {
            for event in frame["events"]?.arrayValue ?? [] {
                let user = event["user"]?.stringValue ?? ""
                switch event["type"]?.stringValue {
                case "enter": #expect(told.insert(user).inserted, "w\(index) entered \(user) twice")
                case "leave": #expect(told.remove(user) != nil, "w\(index) left \(user) never entered")
                default: #expect(told.contains(user), "w\(index) moved \(user) never entered")
                }
            }
        }
        return told
    }

    struct BadInput: Sendable, CustomTestStringConvertible {
        let method: String
        let data: String
        let message: String
        var testDescription: String { "\(method) \(data)" }
    }

    static let badInputs: [BadInput] = [
        BadInput(method: "location.update", data: #"{"lon":6.5}"#, message: "lat is required"),
        BadInput(method: "location.update", data: #"{"lat":"45","lon":6.5}"#, message: "lat must be a number, got string"),
        BadInput(method: "location.update", data: #"{"lat":"NaN","lon":6.5}"#, message: "lat must be a number, got string"),
        BadInput(method: "location.update", data: #"{"lat":45,"lon":"Infinity"}"#, message: "lon must be a number, got string"),
        BadInput(method: "location.update", data: #"{"lat":91,"lon":6.5}"#, message: "lat must be between -90 and 90, got 91"),
        BadInput(method: "location.update", data: #"{"lat":45,"lon":-181}"#, message: "lon must be between -180 and 180"),
        BadInput(method: "location.update", data: #"{"lat":45,"lon":6,"alt":"-Infinity"}"#, message: "alt must be a number"),
        BadInput(method: "location.update", data: #"{"lat":45,"lon":6,"accuracy":-1}"#, message: "accuracy must be between 0 and"),
        BadInput(method: "location.update", data: #"{"lat":45,"lon":6,"heading":400}"#, message: "heading must be between 0 and 360"),
        BadInput(method: "location.update", data: #"{"lat":45,"lon":6,"speed":-2}"#, message: "speed must be between 0 and"),
        BadInput(method: "location.update", data: #"{"lat":45,"lon":6,"ts":1000}"#, message: "ts must be within 5 minutes of the server time"),
        BadInput(method: "location.update", data: #"{"lat":45,"lon":6,"ts":"soon"}"#, message: "ts must be an integer"),
        BadInput(method: "location.update", data: #"[45,6]"#, message: "data must be an object, got array"),
        BadInput(method: "location.visibility", data: #"{"mode":"some"}"#, message: "mode must be one of everyone, friends, nobody"),
        BadInput(method: "location.visibility", data: #"{}"#, message: "mode is required"),
        BadInput(method: "profile.update", data: #"{"name":""}"#, message: "name must not be empty"),
        BadInput(
            method: "profile.update", data: #"{"name":"\#(String(repeating: "n", count: 65))"}"#, message: "name is 65 characters, more than 64"),
        BadInput(
            method: "profile.update", data: #"{"bio":"\#(String(repeating: "b", count: 501))"}"#, message: "bio is 501 characters, more than 500"),
        BadInput(method: "profile.update", data: #"{"avatar_url":"javascript:alert(1)"}"#, message: "avatar_url must be an http(s) URL"),
        BadInput(method: "profile.update", data: #"{"links":{"insta":"ftp://x"}}"#, message: "links.insta must be an http(s) URL"),
        BadInput(method: "profile.update", data: #"{"links":["https://x"]}"#, message: "links must be an object, got array"),
        BadInput(
            method: "profile.update", data: #"{"links":{\#((0..<11).map { "\"l\($0)\":\"https://x.org\"" }.joined(separator: ","))}}"#,
            message: "links has 11 entries, more than 10"),
        BadInput(method: "profile.get", data: #"{"user":"nobody-here"}"#, message: "unknown user"),
        BadInput(method: "friend.add", data: #"{"user":5}"#, message: "user must be a string, got number"),
        BadInput(method: "friend.add", data: #"{"user":"ghost"}"#, message: "unknown user 'ghost'"),
        BadInput(method: "friend.remove", data: #"{}"#, message: "user is required"),
        BadInput(method: "trip.members", data: #"{}"#, message: "trip is required"),
        BadInput(method: "map.resort", data: #"{"id":3}"#, message: "id must be a string, got number"),
        BadInput(method: "map.resort", data: #"{"id":"atlantis"}"#, message: "unknown resort 'atlantis'"),
        BadInput(method: "map.elevation", data: #"{"lat":"x","lon":6}"#, message: "lat must be a number"),
        BadInput(method: "map.route", data: #"{}"#, message: "to is required"),
        BadInput(method: "map.route", data: #"{"to":{"lat":100,"lon":6}}"#, message: "to.lat must be between -90 and 90"),
        BadInput(method: "map.route", data: #"{"to":{"lat":45.3,"lon":6.58}}"#, message: "from is required until a position was sent"),
        BadInput(
            method: "map.route", data: #"{"to":{"lat":45.3,"lon":6.58},"from":{"lat":45.29,"lon":6.57},"max_difficulty":"double-black"}"#,
            message: "max_difficulty must be one of novice, easy, intermediate, advanced, expert, freeride, extreme"),
    ]

    /// Every bad field answers 107 naming the field; the connection stays usable and
    /// another client is still served.
    @Test(arguments: badInputs)
    func badInputIsRefusedWithTheFieldNamed(_ input: BadInput) async throws {
        let server = try await startTravelServer()
        _ = try await server.api("user_set_staff", ["user": "someone", "staff": false])
        let client = try await server.client("someone")
        let bystander = try await server.client("bystander")
        do {
            _ = try await client.rpc(input.method, try JSONParser.parse(input.data))
            Issue.record("\(input.method) accepted \(input.data)")
        } catch let failure as RPCFailure {
            #expect(failure.code == 107)
            #expect(failure.message.contains(input.message), "\(failure.message)")
        }
        #expect(try await client.rpc("server.time")["ts"] != nil)
        #expect(try await bystander.rpc("location.update", Self.update(Self.origin))["map"] != nil)
        await client.close()
        await bystander.close()
        try await server.stop()
    }

    @Test func nearbySubscribeDataIsChecked() async throws {
        let server = try await startTravelServer()
        let client = try await server.client("nina")
        for (data, message) in [
            (JSON.object([("radius", 6000)]), "radius must be between 1 and 5000"), (["limit": 500], "limit must be between 1 and 200"),
            (["radius": "big"], "radius must be a number, got string"), (["limit": 2.5], "limit must be an integer"),
        ] {
            await #expect(throws: RPCFailure.self) { try await client.subscribe("nearby:#nina", data: data) }
            do {
                try await client.subscribe("nearby:#nina", data: data)
            } catch let failure as RPCFailure {
                #expect(failure.code == 107 && failure.message.contains(message), "\(failure)")
            }
        }
        #expect(try await client.subscribe("nearby:#nina", data: ["radius": 5000, "limit": 200])?["users"] != nil)
        await client.close()
        try await server.stop()
    }

    @Test func locationRateLimitAnswers111AndTheConnectionStaysUsable() async throws {
        let server = try await startTravelServer { $0.domainSettings.values["location_rate"] = .int(1) }
        let client = try await server.client("rita")
        var codes: [UInt32] = []
        for _ in 0..<8 {
            do {
                _ = try await client.rpc("location.update", Self.update(Self.origin))
            } catch let failure as RPCFailure {
                codes.append(failure.code)
            }
        }
        // One update per second with a burst of one: eight calls in a row cannot all pass.
        #expect(!codes.isEmpty && codes.allSatisfy { $0 == 111 }, "\(codes)")
        #expect(try await client.rpc("server.time")["ts"] != nil)
        #expect(!client.isClosed)
        await client.close()
        try await server.stop()
    }

    @Test(arguments: ProtocolEncoding.allCases)
    func mapModeSwitchesWithHysteresisAndIsPushedOnPersonal(_ encoding: ProtocolEncoding) async throws {
        let server = try await startTravelServer()
        let client = try await server.client("mia", encoding: encoding)
        try await client.subscribe("personal:#mia")
        let town = GeoPoint(lat: 45.20, lon: 6.50)
        #expect(try await client.rpc("location.update", Self.update(town))["map"]?["mode"]?.stringValue == "street")
        let inside = try await client.rpc("location.update", Self.update(Self.origin))
        #expect(inside["map"]?["mode"]?.stringValue == "mountain")
        #expect(inside["map"]?["resort"]?.stringValue == "demo")
        // Just outside the boundary (within twice the 300 m margin) the mountain map stays.
        let edge = GeoPoint(lat: 45.281349 - 200 / Geodesy.metresPerDegree, lon: 6.58)
        #expect(try await client.rpc("location.update", Self.update(edge))["map"]?["mode"]?.stringValue == "mountain")
        #expect(try await client.rpc("location.update", Self.update(town))["map"]?["mode"]?.stringValue == "street")
        let pushes = try await client.awaitPublications("personal:#mia", count: 2)
        #expect(pushes.map { $0["mode"]?.stringValue } == ["mountain", "street"])
        #expect(pushes.first?["type"]?.stringValue == "map")
        #expect(pushes.first?["resort"]?.stringValue == "demo")
        await client.close()
        try await server.stop()
    }

    @Test(arguments: ProtocolEncoding.allCases)
    func routingOnTheDemoResort(_ encoding: ProtocolEncoding) async throws {
        let server = try await startTravelServer()
        let client = try await server.client("rob", encoding: encoding)
        let resorts = try await client.rpc("map.resorts")["resorts"]?.arrayValue ?? []
        #expect(resorts.first?["id"]?.stringValue == "demo")
        #expect(resorts.first?["bbox"]?.arrayValue.count == 4)
        let map = try await client.rpc("map.resort", ["id": "demo"])
        let ways = (map["features"]?.arrayValue ?? []).filter { ["piste", "lift"].contains($0["properties"]?["kind"]?.stringValue) }
        #expect(!ways.isEmpty)
        for way in ways {
            #expect(way["properties"]?["difficulty"]?.stringValue != nil)
            #expect(way["properties"]?["color"]?.stringValue?.hasPrefix("#") == true)
        }
        let elevation = try await client.rpc("map.elevation", ["lat": 45.30, "lon": 6.58])["elevation"]?.doubleValue ?? 0
        #expect(elevation > 1000 && elevation < 4000)
        _ = try await client.rpc("location.update", Self.update(GeoPoint(lat: 45.285, lon: 6.575)))
        let route = try await client.rpc("map.route", ["to": ["lat": 45.315, "lon": 6.60]])
        let legs = route["legs"]?.arrayValue ?? []
        #expect(!legs.isEmpty)
        #expect((route["duration"]?.doubleValue ?? 0) > 0)
        #expect(legs.contains { $0["kind"]?.stringValue == "lift" })
        do {
            _ = try await client.rpc("map.route", ["to": ["lat": 40.0, "lon": 2.0]])
            Issue.record("a route far outside every resort was answered")
        } catch let failure as RPCFailure {
            #expect(failure.code == 108 && failure.message.contains("no resort within"))
        }
        await client.close()
        try await server.stop()
    }

    @Test(arguments: ProtocolEncoding.allCases)
    func friendsRequestsChannelAndVisibility(_ encoding: ProtocolEncoding) async throws {
        let server = try await startTravelServer()
        _ = try await server.api("user_set_staff", ["user": "tom", "staff": false])
        _ = try await server.api("user_set_staff", ["user": "otto", "staff": false])
        let tom = try await server.client("tom", encoding: encoding)
        let otto = try await server.client("otto", encoding: encoding)
        try await tom.subscribe("personal:#tom")
        try await otto.subscribe("personal:#otto")
        #expect(try await otto.rpc("friend.add", ["user": "tom"])["friends"] == false)
        #expect(try await tom.awaitPublications("personal:#tom", count: 1).first?["type"]?.stringValue == "friend_request")
        #expect(try await tom.rpc("friend.list")["requests"]?.arrayValue.first?["user"]?.stringValue == "otto")
        #expect(try await tom.rpc("friend.add", ["user": "otto"])["friends"] == true)
        #expect(try await otto.awaitPublications("personal:#otto", count: 1).first?["friends"] == true)
        #expect(try await tom.rpc("friend.list")["friends"]?.arrayValue.first?["source"]?.stringValue == "mutual")

        _ = try await otto.rpc("location.update", Self.update(Self.origin))
        let snapshot = try await tom.subscribe("friends:#tom")
        #expect(snapshot?["positions"]?.arrayValue.first?["user"]?.stringValue == "otto")
        _ = try await otto.rpc("location.update", Self.update(Self.origin.offset(north: 50, east: 0)))
        #expect(try await tom.awaitPublications("friends:#tom", count: 1).first?["positions"]?.arrayValue.first?["user"]?.stringValue == "otto")
        _ = try await otto.rpc("location.visibility", ["mode": "nobody"])
        let frames = try await tom.awaitPublications("friends:#tom", count: 2)
        #expect(frames.last?["removed"]?.arrayValue.first?.stringValue == "otto")
        _ = try await tom.rpc("friend.remove", ["user": "otto"])
        #expect(try await tom.rpc("friend.list")["friends"]?.arrayValue.isEmpty == true)
        await tom.close()
        await otto.close()
        try await server.stop()
    }

    @Test(arguments: ProtocolEncoding.allCases)
    func hostsSeeTheirTravellersEvenWhenHidden(_ encoding: ProtocolEncoding) async throws {
        let server = try await startTravelServer()
        let trip = try await server.createTrip(hosts: ["hana"], travellers: ["tom", "tia"])
        let hana = try await server.client("hana", encoding: encoding)
        let tom = try await server.client("tom", encoding: encoding)
        _ = try await tom.rpc("location.update", Self.update(Self.origin))
        let snapshot = try await hana.subscribe("locations:\(trip)")
        #expect(snapshot?["positions"]?.arrayValue.map { $0["user"]?.stringValue } == ["tom"])
        #expect(try await tom.rpc("trip.members", ["trip": .string(trip)])["members"]?.arrayValue.count == 3)
        _ = try await tom.rpc("location.visibility", ["mode": "nobody"])
        _ = try await tom.rpc("location.update", Self.update(Self.origin.offset(north: 30, east: 0)))
        let frames = try await hana.awaitPublications("locations:\(trip)", count: 1)
        #expect(frames.last?["positions"]?.arrayValue.first?["user"]?.stringValue == "tom")
        #expect(frames.allSatisfy { $0["removed"] == nil })
        await hana.close()
        await tom.close()
        try await server.stop()
    }
}
