import Foundation
import GondolaHub
import GondolaProtocol

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Where connection tokens come from.
public enum TokenSource: Sendable {
    /// Minted here with the hub's HS256 secret.
    case secret(String)
    /// `POST /api/auth/dev` on the hub at this base URL (the hub must enable `dev_login`).
    case devLogin(base: String)

    /// Minted with `secret` when there is one, else the dev login of the hub at `hub`.
    public init(secret: String?, hub: WebSocketURL) {
        self = secret.map { .secret($0) } ?? .devLogin(base: hub.httpBase)
    }

    /// One token per user, in order (dev logins sixteen at a time).
    public func tokens(for users: [String]) async throws -> [String] {
        switch self {
        case let .secret(secret):
            let minter = try await ConnectionTokens(secret: secret)
            var tokens: [String] = []
            tokens.reserveCapacity(users.count)
            for user in users { tokens.append(try await minter.mint(user: user)) }
            return tokens
        case let .devLogin(base):
            return try await withThrowingTaskGroup(of: (Int, String).self) { group in
                var tokens = [String](repeating: "", count: users.count)
                for (index, user) in users.enumerated() {
                    if index >= 16, let (done, token) = try await group.next() { tokens[done] = token }
                    group.addTask { (index, try await Self.devLogin(base: base, user: user)) }
                }
                for try await (done, token) in group { tokens[done] = token }
                return tokens
            }
        }
    }

    static func devLogin(base: String, user: String) async throws -> String {
        var request = URLRequest(url: URL(string: "\(base)/api/auth/dev")!)
        request.httpMethod = "POST"
        request.httpBody = Data(JSON.object([("user", .string(user))]).bytes)
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard status == 200, case let .string(token)? = try JSONParser.parse(Array(data))["token"] else {
            throw LoadError("dev login for \(user) answered \(status): \(String(decoding: data.prefix(200), as: UTF8.self)) (is dev_login on?)")
        }
        return token
    }
}

extension TravellerCast {
    /// Creates `trips` running trips on `resort` through the server API (users
    /// `<prefix>h<t>` host trip t, `<prefix>t<i>` travel in trip i·trips/travellers)
    /// and gets every token.
    public static func prepare(
        travellers: Int, trips: Int, prefix: String, resort: String = "demo", api: ServerAPIClient,
        tokens: TokenSource
    ) async throws -> TravellerCast {
        let hosts = (0..<trips).map { "\(prefix)h\($0)" }
        let travellerIDs = (0..<travellers).map { "\(prefix)t\($0)" }
        let tripOf = (0..<travellers).map { tripIndex(of: $0, travellers: travellers, trips: trips) }
        var members = [[String]](repeating: [], count: trips)
        for (index, trip) in tripOf.enumerated() { members[trip].append(travellerIDs[index]) }
        let frozen = members
        let tripIDs = try await api.createTrips(trips, resort: resort) { (hosts[$0], frozen[$0]) }
        return TravellerCast(
            trips: tripIDs, hosts: hosts, travellers: travellerIDs, tripOf: tripOf,
            tokens: try await tokens.tokens(for: hosts + travellerIDs))
    }
}
