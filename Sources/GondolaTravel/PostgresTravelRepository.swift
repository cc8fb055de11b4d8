import GondolaDomain
import GondolaPostgres
import PostgresNIO

/// The travel directory in PostgreSQL (cluster mode), shared by every node.
struct PostgresTravelRepository: TravelRepository {
    let pool: PostgresPool

    func loadAll() async throws -> TravelRecords {
        try await pool.withConnection { connection in
            var records = TravelRecords()
            for row in try await pool.run("SELECT id, name, bio, photo_url, links, visibility, staff FROM app_user", on: connection) {
                try Self.addUser(row, to: &records)
            }
            for row in try await pool.run("SELECT id, name, resort, starts_at_ms, ends_at_ms FROM trip", on: connection) {
                records.trips.append(try Self.trip(row))
            }
            for row in try await pool.run("SELECT trip_id, user_id, role FROM trip_member", on: connection) {
                records.members.append(try Self.member(row))
            }
            for row in try await pool.run("SELECT from_user, to_user FROM friend_request", on: connection) {
                records.requests.append(try row.decode((String, String).self))
            }
            return records
        }
    }

    func records(users: [String], trips: [String]) async throws -> TravelRecords {
        try await pool.withConnection { connection in
            var records = TravelRecords()
            for row in try await pool.run(
                "SELECT id, name, bio, photo_url, links, visibility, staff FROM app_user WHERE id = ANY(\(users))", on: connection)
            {
                try Self.addUser(row, to: &records)
            }
            let tripIDs = Array(
                Set(trips).union(
                    try await pool.run("SELECT trip_id FROM trip_member WHERE user_id = ANY(\(users))", on: connection)
                        .map { try $0.decode(String.self) }))
            for row in try await pool.run("SELECT id, name, resort, starts_at_ms, ends_at_ms FROM trip WHERE id = ANY(\(tripIDs))", on: connection) {
                records.trips.append(try Self.trip(row))
            }
            for row in try await pool.run("SELECT trip_id, user_id, role FROM trip_member WHERE trip_id = ANY(\(tripIDs))", on: connection) {
                records.members.append(try Self.member(row))
            }
            for row in try await pool.run(
                "SELECT from_user, to_user FROM friend_request WHERE from_user = ANY(\(users)) OR to_user = ANY(\(users))",
                on: connection)
            {
                records.requests.append(try row.decode((String, String).self))
            }
            return records
        }
    }

    private static func addUser(_ row: PostgresRow, to records: inout TravelRecords) throws {
        let (id, name, bio, photo, links, visibility, staff) = try row.decode((String, String, String, String?, String, String, Bool).self)
        var profile = Profile(id: id, name: name)
        profile.bio = bio
        profile.avatarURL = photo
        profile.links = ProfileLinks.decode(links)
        records.add(profile, visibility: visibility, staff: staff)
    }

    private static func trip(_ row: PostgresRow) throws -> Trip {
        let (id, name, resort, starts, ends) = try row.decode((String, String, String?, Int64, Int64).self)
        return Trip(id: id, name: name, resort: resort, startsAt: starts, endsAt: ends)
    }

    private static func member(_ row: PostgresRow) throws -> (trip: String, user: String, role: TripRole) {
        let (trip, user, role) = try row.decode((String, String, String).self)
        return (trip, user, TripRole(rawValue: role) ?? .traveller)
    }

    func write(_ change: DirectoryChange) async throws {
        let now = unixMilliseconds()
        try await pool.transaction { connection in
            switch change {
            case let .known(user):
                try await ensureUser(user, now: now, on: connection)
            case let .profile(profile):
                try await pool.run(
                    """
                    INSERT INTO app_user (id, name, bio, photo_url, links, created_at_ms)
                    VALUES (\(profile.id), \(profile.name), \(profile.bio), \(profile.avatarURL), \(ProfileLinks.encode(profile.links)), \(now))
                    ON CONFLICT (id) DO UPDATE SET name = excluded.name, bio = excluded.bio, photo_url = excluded.photo_url, links = excluded.links
                    """, on: connection)
            case let .visibility(user, visibility):
                try await pool.run("UPDATE app_user SET visibility = \(visibility.rawValue) WHERE id = \(user)", on: connection)
            case let .staff(user, staff):
                try await pool.run("UPDATE app_user SET staff = \(staff) WHERE id = \(user)", on: connection)
            case let .trip(trip, hosts):
                try await pool.run(
                    """
                    INSERT INTO trip (id, name, resort, starts_at_ms, ends_at_ms, created_at_ms)
                    VALUES (\(trip.id), \(trip.name), \(trip.resort), \(trip.startsAt), \(trip.endsAt), \(now)) ON CONFLICT (id) DO NOTHING
                    """, on: connection)
                for host in hosts { try await upsertMember(trip: trip.id, user: host, role: .host, now: now, on: connection) }
            case let .member(trip, user, role):
                try await upsertMember(trip: trip, user: user, role: role, now: now, on: connection)
            case let .request(from, to):
                try await pool.run(
                    """
                    INSERT INTO friend_request (from_user, to_user, created_at_ms) VALUES (\(from), \(to), \(now)) ON CONFLICT DO NOTHING
                    """, on: connection)
            case let .unfriend(a, b):
                try await pool.run(
                    """
                    DELETE FROM friend_request WHERE (from_user = \(a) AND to_user = \(b)) OR (from_user = \(b) AND to_user = \(a))
                    """, on: connection)
            }
        }
    }

    private func ensureUser(_ user: String, now: Int64, on connection: PostgresConnection) async throws {
        try await pool.run(
            "INSERT INTO app_user (id, name, created_at_ms) VALUES (\(user), \(user), \(now)) ON CONFLICT (id) DO NOTHING", on: connection)
    }

    private func upsertMember(trip: String, user: String, role: TripRole, now: Int64, on connection: PostgresConnection) async throws {
        try await ensureUser(user, now: now, on: connection)
        try await pool.run(
            """
            INSERT INTO trip_member (trip_id, user_id, role) VALUES (\(trip), \(user), \(role.rawValue))
            ON CONFLICT (trip_id, user_id) DO UPDATE SET role = excluded.role
            """, on: connection)
    }
}
