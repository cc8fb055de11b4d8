import Foundation
import GRDB
import GondolaDomain
import GondolaStore

/// Everything the travel directory keeps, as read from the database at start.
struct TravelRecords: Sendable {
    var profiles: [Profile] = []
    var visibility: [String: Visibility] = [:]
    var staff: Set<String> = []
    var trips: [Trip] = []
    var members: [(trip: String, user: String, role: TripRole)] = []
    var requests: [(from: String, to: String)] = []

    /// Adds a user's row: the profile, the visibility as stored (unknown values read as
    /// everyone) and whether they are staff.
    mutating func add(_ profile: Profile, visibility stored: String, staff isStaff: Bool) {
        profiles.append(profile)
        visibility[profile.id] = Visibility(rawValue: stored) ?? .everyone
        if isStaff { staff.insert(profile.id) }
    }
}

/// The travel directory's storage: profiles, trips with their members, friend
/// requests. Every write commits before the directory changes its in-memory view,
/// so nothing acknowledged is lost.
protocol TravelRepository: Sendable {
    /// Everything, for the directory's in-memory view.
    func loadAll() async throws -> TravelRecords
    /// What concerns `users` and `trips`: the users' profiles, the trips (named and the
    /// users'), every member of those trips, and the friend requests from and to the users.
    /// The directory reads it when its memory has no answer.
    func records(users: [String], trips: [String]) async throws -> TravelRecords
    /// Stores one change (idempotently: storing it again changes nothing).
    func write(_ change: DirectoryChange) async throws
}

/// The travel directory in SQLite: profiles in `user`, `trip`, `trip_member`, `friend_request`.
struct SQLiteTravelRepository: TravelRepository {
    let database: GondolaDatabase

    func loadAll() throws -> TravelRecords {
        try database.pool.read { db in
            var records = TravelRecords()
            for row in try Row.fetchAll(db, sql: "SELECT id, name, bio, photo_url, links, visibility, staff FROM user") {
                records.add(Self.profile(row), visibility: row["visibility"], staff: (row["staff"] as Int64) != 0)
            }
            for row in try Row.fetchAll(db, sql: "SELECT id, name, resort, starts_at_ms, ends_at_ms FROM trip") {
                records.trips.append(Self.trip(row))
            }
            for row in try Row.fetchAll(db, sql: "SELECT trip_id, user_id, role FROM trip_member") {
                records.members.append((row["trip_id"], row["user_id"], TripRole(rawValue: row["role"]) ?? .traveller))
            }
            for row in try Row.fetchAll(db, sql: "SELECT from_user, to_user FROM friend_request") {
                records.requests.append((row["from_user"], row["to_user"]))
            }
            return records
        }
    }

    func records(users: [String], trips: [String]) throws -> TravelRecords {
        try database.pool.read { db in
            var records = TravelRecords()
            let userList = users.map { _ in "?" }.joined(separator: ", ")
            for row in try Row.fetchAll(
                db, sql: "SELECT id, name, bio, photo_url, links, visibility, staff FROM user WHERE id IN (\(userList))",
                arguments: StatementArguments(users))
            {
                records.add(Self.profile(row), visibility: row["visibility"], staff: (row["staff"] as Int64) != 0)
            }
            let tripIDs = Set(trips).union(
                try String.fetchAll(
                    db, sql: "SELECT trip_id FROM trip_member WHERE user_id IN (\(userList))",
                    arguments: StatementArguments(users)))
            let tripList = tripIDs.map { _ in "?" }.joined(separator: ", ")
            for row in try Row.fetchAll(
                db, sql: "SELECT id, name, resort, starts_at_ms, ends_at_ms FROM trip WHERE id IN (\(tripList))",
                arguments: StatementArguments(Array(tripIDs)))
            {
                records.trips.append(Self.trip(row))
            }
            for row in try Row.fetchAll(
                db, sql: "SELECT trip_id, user_id, role FROM trip_member WHERE trip_id IN (\(tripList))",
                arguments: StatementArguments(Array(tripIDs)))
            {
                records.members.append((row["trip_id"], row["user_id"], TripRole(rawValue: row["role"]) ?? .traveller))
            }
            for row in try Row.fetchAll(
                db, sql: "SELECT from_user, to_user FROM friend_request WHERE from_user IN (\(userList)) OR to_user IN (\(userList))",
                arguments: StatementArguments(users + users))
            {
                records.requests.append((row["from_user"], row["to_user"]))
            }
            return records
        }
    }

    private static func profile(_ row: Row) -> Profile {
        var profile = Profile(id: row["id"], name: row["name"])
        profile.bio = row["bio"]
        profile.avatarURL = row["photo_url"]
        profile.links = ProfileLinks.decode(row["links"])
        return profile
    }

    private static func trip(_ row: Row) -> Trip {
        Trip(id: row["id"], name: row["name"], resort: row["resort"], startsAt: row["starts_at_ms"], endsAt: row["ends_at_ms"])
    }

    func write(_ change: DirectoryChange) throws {
        let now = unixMilliseconds()
        try database.pool.write { db in
            switch change {
            case let .known(user):
                try db.execute(
                    sql: "INSERT INTO user (id, name, created_at_ms) VALUES (?, ?, ?) ON CONFLICT(id) DO NOTHING",
                    arguments: [user, user, now])
            case let .profile(profile):
                try db.execute(
                    sql: """
                        INSERT INTO user (id, name, bio, photo_url, links, created_at_ms) VALUES (?, ?, ?, ?, ?, ?)
                        ON CONFLICT(id) DO UPDATE SET name = excluded.name, bio = excluded.bio, photo_url = excluded.photo_url, links = excluded.links
                        """,
                    arguments: [profile.id, profile.name, profile.bio, profile.avatarURL, ProfileLinks.encode(profile.links), now])
            case let .visibility(user, visibility):
                try db.execute(sql: "UPDATE user SET visibility = ? WHERE id = ?", arguments: [visibility.rawValue, user])
            case let .staff(user, staff):
                try db.execute(sql: "UPDATE user SET staff = ? WHERE id = ?", arguments: [staff ? 1 : 0, user])
            case let .trip(trip, hosts):
                try db.execute(
                    sql:
                        "INSERT INTO trip (id, name, resort, starts_at_ms, ends_at_ms, created_at_ms) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING",
                    arguments: [trip.id, trip.name, trip.resort, trip.startsAt, trip.endsAt, now])
                for host in hosts { try Self.upsertMember(db, trip: trip.id, user: host, role: .host, now: now) }
            case let .member(trip, user, role):
                try Self.upsertMember(db, trip: trip, user: user, role: role, now: now)
            case let .request(from, to):
                try db.execute(
                    sql: "INSERT INTO friend_request (from_user, to_user, created_at_ms) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                    arguments: [from, to, now])
            case let .unfriend(a, b):
                try db.execute(
                    sql: "DELETE FROM friend_request WHERE (from_user = ? AND to_user = ?) OR (from_user = ? AND to_user = ?)",
                    arguments: [a, b, b, a])
            }
        }
    }

    private static func upsertMember(_ db: Database, trip: String, user: String, role: TripRole, now: Int64) throws {
        try db.execute(sql: "INSERT INTO user (id, name, created_at_ms) VALUES (?, ?, ?) ON CONFLICT(id) DO NOTHING", arguments: [user, user, now])
        try db.execute(
            sql: "INSERT INTO trip_member (trip_id, user_id, role) VALUES (?, ?, ?) ON CONFLICT(trip_id, user_id) DO UPDATE SET role = excluded.role",
            arguments: [trip, user, role.rawValue])
    }
}

/// How a profile's links are kept in a text column (both engines).
enum ProfileLinks {
    static func encode(_ links: [String: String]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: links, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    static func decode(_ text: String) -> [String: String] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: String] ?? [:]
    }
}
