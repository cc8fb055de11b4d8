import GondolaProtocol
import Testing

/// Who may subscribe to each travel channel and call each travel RPC: a trip's
/// host (`hana`), one of its travellers (`tom`) and an outsider (`otto`).
/// `{trip}` stands for the trip's id.
@Suite struct TravelAuthorizationTests {
    struct Cell: Sendable, CustomTestStringConvertible {
        let user: String
        let target: String
        let data: JSON
        /// Nil when allowed, else the error code.
        let refusal: UInt32?

        init(_ user: String, _ target: String, _ data: JSON = [:], refused refusal: UInt32? = nil) {
            self.user = user
            self.target = target
            self.data = data
            self.refusal = refusal
        }

        var testDescription: String { "\(user) → \(target) \(refusal.map { "refused \($0)" } ?? "allowed")" }
    }

    static func withTrip(_ body: (RunningServer, String) async throws -> Void) async throws {
        let server = try await startTravelServer()
        let trip = try await server.createTrip(hosts: ["hana"], travellers: ["tom"])
        _ = try await server.api("user_set_staff", ["user": "otto", "staff": false])
        try await body(server, trip)
        try await server.stop()
    }

    static let subscriptions: [Cell] = [
        Cell("hana", "locations:{trip}"),
        Cell("tom", "locations:{trip}", refused: 103),
        Cell("otto", "locations:{trip}", refused: 103),
        Cell("otto", "locations:unknown-trip", refused: 103),
        Cell("hana", "nearby:#hana"),
        Cell("tom", "nearby:#hana", refused: 103),
        Cell("otto", "nearby:#otto"),
        Cell("hana", "nearby:#hana,tom", refused: 103),
        Cell("tom", "friends:#tom"),
        Cell("hana", "friends:#tom", refused: 103),
        Cell("otto", "friends:#otto"),
        Cell("tom", "personal:#tom"),
        Cell("otto", "personal:#tom", refused: 103),
        Cell("tom", "personal:#tom,otto", refused: 103),
        Cell("hana", "personal:#hana"),
    ]

    @Test(arguments: subscriptions)
    func subscribe(_ cell: Cell) async throws {
        try await Self.withTrip { server, trip in
            let client = try await server.client(cell.user)
            let channel = cell.target.replacingOccurrences(of: "{trip}", with: trip)
            do {
                _ = try await client.subscribe(channel)
                #expect(cell.refusal == nil, "subscribe to \(channel) should have been refused")
            } catch let failure as RPCFailure {
                #expect(failure.code == cell.refusal, "\(failure)")
            }
            #expect(!client.isClosed)
            await client.close()
        }
    }

    static let calls: [Cell] = [
        Cell("hana", "trip.members", ["trip": "{trip}"]),
        Cell("tom", "trip.members", ["trip": "{trip}"]),
        Cell("otto", "trip.members", ["trip": "{trip}"], refused: 103),
        Cell("hana", "trip.list"),
        Cell("otto", "trip.list"),
        Cell("otto", "profile.get", ["user": "tom"]),
        Cell("tom", "profile.update", ["name": "Tom"]),
        Cell("otto", "friend.add", ["user": "tom"]),
        Cell("tom", "friend.add", ["user": "tom"], refused: 107),
        Cell("tom", "friend.list"),
        Cell("otto", "location.update", ["lat": 45.3, "lon": 6.58]),
        Cell("otto", "location.visibility", ["mode": "friends"]),
        Cell("otto", "map.resorts"),
        Cell("otto", "map.resort", ["id": "demo"]),
    ]

    @Test(arguments: calls)
    func rpc(_ cell: Cell) async throws {
        try await Self.withTrip { server, trip in
            let client = try await server.client(cell.user)
            let data = try JSONParser.parse(cell.data.text.replacingOccurrences(of: "{trip}", with: trip))
            do {
                _ = try await client.rpc(cell.target, data)
                #expect(cell.refusal == nil, "\(cell.target) should have been refused")
            } catch let failure as RPCFailure {
                #expect(failure.code == cell.refusal, "\(failure)")
            }
            await client.close()
        }
    }

    @Test func adminMethodsNeedTheAPIKeyAndValidInput() async throws {
        let server = try await startTravelServer()
        let (status, _) = try await server.post("/api/trip_create", body: "{}", apiKey: nil)
        #expect(status == 401)
        let bad: [(JSON, String)] = [
            (["resort": "demo", "starts_at": 1, "ends_at": 2, "hosts": ["a"]], "name is required"),
            (["name": "x", "resort": "nowhere", "starts_at": 1, "ends_at": 2, "hosts": ["a"]], "resort: unknown resort"),
            (["name": "x", "starts_at": 5, "ends_at": 2, "hosts": ["a"]], "ends_at must not be before starts_at"),
            (["name": "x", "starts_at": 1, "ends_at": 2, "hosts": .array([])], "hosts must name at least one user"),
            (["name": "x", "starts_at": 1, "ends_at": 2, "hosts": ["bad user"]], "hosts[0] is not a valid user id"),
            (["name": "x", "starts_at": "1", "ends_at": 2, "hosts": ["a"]], "starts_at must be an integer"),
        ]
        for (body, message) in bad {
            await #expect(throws: RPCFailure.self) { _ = try await server.api("trip_create", body) }
            let (_, answer) = try await server.post("/api/trip_create", body: body.text)
            #expect(answer["error"]?["code"]?.doubleValue == 107)
            #expect(answer["error"]?["message"]?.stringValue?.contains(message) == true, "\(answer.text)")
        }
        let (_, answer) = try await server.post("/api/trip_add_member", body: #"{"trip":"nope","user":"a","role":"host"}"#)
        #expect(answer["error"]?["message"]?.stringValue?.contains("unknown trip") == true)
        let trip = try await server.createTrip(hosts: ["h"], travellers: [])
        let (_, wrongRole) = try await server.post("/api/trip_add_member", body: #"{"trip":"\#(trip)","user":"a","role":"captain"}"#)
        #expect(wrongRole["error"]?["message"]?.stringValue?.contains("role must be one of host, traveller") == true)
        try await server.stop()
    }
}
