import GondolaPostgres
import PostgresNIO

/// The event tables in PostgreSQL (cluster mode).
struct PostgresEventRepository: EventRepository {
    let pool: PostgresPool

    private static let columns =
        "id, creator, title, description, starts_at_ms, ends_at_ms, place_name, place_lat, place_lon, trip_id, audience, created_at_ms"

    func create(_ event: TravelEvent, invitees: [String]) async throws {
        try await pool.transaction { connection in
            try await pool.run(
                """
                INSERT INTO event (\(unescaped: Self.columns))
                VALUES (\(event.id), \(event.creator), \(event.title), \(event.description), \(event.startsAt), \(event.endsAt), \(event.place?.name),
                        \(event.place?.lat), \(event.place?.lon), \(event.trip), \(event.audience), \(event.createdAt))
                """, on: connection)
            try await pool.run("INSERT INTO event_invitee (event_id, user_id) SELECT \(event.id), unnest(\(invitees)::text[])", on: connection)
        }
    }

    func event(_ id: String) async throws -> TravelEvent? {
        try await pool.query("SELECT \(unescaped: Self.columns) FROM event WHERE id = \(id)").first.map(Self.event)
    }

    func responses(to event: String) async throws -> [(user: String, response: RSVP?)] {
        try await pool.query("SELECT user_id, response FROM event_invitee WHERE event_id = \(event) ORDER BY user_id").map { row in
            let (user, response) = try row.decode((String, String?).self)
            return (user, response.flatMap(RSVP.init(rawValue:)))
        }
    }

    func respond(to event: String, user: String, _ response: RSVP, at time: Int64) async throws -> Bool {
        let rows = try await pool.query(
            """
            UPDATE event_invitee SET response = \(response.rawValue), responded_at_ms = \(time)
            WHERE event_id = \(event) AND user_id = \(user) RETURNING user_id
            """)
        return rows.first != nil
    }

    func events(of user: String) async throws -> [(event: TravelEvent, invited: Bool, response: RSVP?)] {
        try await pool.query(
            """
            SELECT \(unescaped: Self.columns.split(separator: ",").map { "e." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")),
                   i.user_id, i.response
            FROM event e LEFT JOIN event_invitee i ON i.event_id = e.id AND i.user_id = \(user)
            WHERE e.creator = \(user) OR i.user_id IS NOT NULL
            ORDER BY e.starts_at_ms, e.id
            """
        ).map { row in
            let columns = row.makeRandomAccess()
            let invited = try columns[12].decode(String?.self)
            let response = try columns[13].decode(String?.self)
            return (try Self.event(row), invited != nil, response.flatMap(RSVP.init(rawValue:)))
        }
    }

    func telegramIDs(of users: [String]) async throws -> [String: Int64] {
        guard !users.isEmpty else { return [:] }
        var result: [String: Int64] = [:]
        for row in try await pool.query("SELECT id, telegram_id FROM app_user WHERE telegram_id IS NOT NULL AND id = ANY(\(users)::text[])") {
            let (id, telegramID) = try row.decode((String, Int64).self)
            result[id] = telegramID
        }
        return result
    }

    func user(forTelegramID telegramID: Int64) async throws -> String? {
        try await pool.query("SELECT id FROM app_user WHERE telegram_id = \(telegramID)").first?.decode(String.self)
    }

    /// An event from a row whose first twelve columns are `columns`.
    private static func event(_ row: PostgresRow) throws -> TravelEvent {
        let columns = row.makeRandomAccess()
        let lat = try columns[7].decode(Double?.self)
        let lon = try columns[8].decode(Double?.self)
        let place = lat.flatMap { lat in lon.map { lon in (lat, lon) } }
        let placeName = try columns[6].decode(String?.self)
        return TravelEvent(
            id: try columns[0].decode(String.self), creator: try columns[1].decode(String.self), title: try columns[2].decode(String.self),
            description: try columns[3].decode(String.self), startsAt: try columns[4].decode(Int64.self), endsAt: try columns[5].decode(Int64?.self),
            place: place.map { EventPlace(name: placeName, lat: $0.0, lon: $0.1) }, trip: try columns[9].decode(String?.self),
            audience: try columns[10].decode(String.self), createdAt: try columns[11].decode(Int64.self))
    }
}
