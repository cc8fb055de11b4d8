import Foundation
import GondolaProtocol

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The server API calls the load scenarios need (trips and their members).
public struct ServerAPIClient: Sendable {
    public init(base: String, key: String) {
        self.base = base
        self.key = key
    }

    let base: String
    let key: String

    public func call(_ method: String, _ body: JSON) async throws -> JSON {
        var request = URLRequest(url: URL(string: "\(base)/api/\(method)")!)
        request.httpMethod = "POST"
        request.httpBody = Data(body.bytes)
        request.setValue(key, forHTTPHeaderField: "X-API-Key")
        let (data, _) = try await URLSession.shared.data(for: request)
        let answer = try JSONParser.parse(Array(data))
        guard let result = answer["result"] else { throw LoadError("\(method) failed: \(answer.text)") }
        return result
    }

    /// A trip on `resort` running now with one host and `travellers`; answers its id.
    public func createTrip(host: String, travellers: [String], resort: String) async throws -> String {
        let now = WallClock.milliseconds()
        let result = try await call(
            "trip_create",
            [
                "name": "bench", "resort": .string(resort), "starts_at": .int(now - 3_600_000), "ends_at": .int(now + 86_400_000),
                "hosts": [.string(host)],
            ])
        guard case let .string(id)? = result["trip"]?["id"] else { throw LoadError("trip_create answered \(result.text)") }
        for traveller in travellers {
            _ = try await call("trip_add_member", ["trip": .string(id), "user": .string(traveller), "role": "traveller"])
        }
        return id
    }

    /// Creates `count` trips, eight at a time (the hub writes each membership to SQLite
    /// before answering); `members(i)` names trip `i`'s host and travellers. Answers the ids in order.
    public func createTrips(_ count: Int, resort: String, members: @escaping @Sendable (Int) -> (host: String, travellers: [String])) async throws
        -> [String]
    {
        try await withThrowingTaskGroup(of: (Int, String).self) { group in
            var ids = [String](repeating: "", count: count)
            for trip in 0..<count {
                if trip >= 8, let (done, id) = try await group.next() { ids[done] = id }
                group.addTask {
                    let (host, travellers) = members(trip)
                    return (trip, try await createTrip(host: host, travellers: travellers, resort: resort))
                }
            }
            for try await (done, id) in group { ids[done] = id }
            return ids
        }
    }
}
