import GondolaDomain
import Foundation
import GondolaStore
import GRDB

/// Everything the travel directory keeps, as read from the database at start.
struct TravelRecords: Sendable {
    var profiles: [Profile] = []
    var visibility: [String: Visibility] = [:]
    var staff: Set<String> = []
    var trips: [Trip] = []
    var members: [(trip: String, user: String, role: TripRole)] = []
    var requests: [(from: String, to: String)] = []
}

/// The travel domain's tables in SQLite: profiles (in `user`), trips and their
/// members, friend requests. Every write commits before the caller changes its
/// in-memory view, so nothing acknowledged is lost.
struct TravelRepository: Sendable {
    let database: GondolaDatabase

    func loadAll() throws -> TravelRecords {
        try database.pool.read { db in
            var records = TravelRecords()
            for row in try Row.fetchAll(db, sql: "SELECT id, name, bio, photo_url, links, visibility, staff FROM user") {
                var profile = Profile(id: row["id"], name: row["name"])
                profile.bio = row["bio"]
                profile.avatarURL = row["photo_url"]
                profile.links = Self.decodeLinks(row["links"])
                records.profiles.append(profile)
                records.visibility[profile.id] = Visibility(rawValue: row["visibility"]) ?? .everyone
                if (row["staff"] as Int64) != 0 { records.staff.insert(profile.id) }
            }
            for row in try Row.fetchAll(db, sql: "SELECT id, name, resort, starts_at_ms, ends_at_ms FROM trip") {
                records.trips.append(Trip(id: row["id"], name: row["name"], resort: row["resort"], startsAt: row["starts_at_ms"], endsAt: row["ends_at_ms"]))
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

    /// Creates the user row when missing (a user known only from a token).
    func ensureUser(_ id: String, name: String) throws {
        try database.pool.write { db in
            try db.execute(
                sql: "INSERT INTO user (id, name, created_at_ms) VALUES (?, ?, ?) ON CONFLICT(id) DO NOTHING",
                arguments: [id, name, unixMilliseconds()])
        }
    }

    func saveProfile(_ profile: Profile) throws {
        try database.pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO user (id, name, bio, photo_url, links, created_at_ms) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT(id) DO UPDATE SET name = excluded.name, bio = excluded.bio, photo_url = excluded.photo_url, links = excluded.links
                    """,
                arguments: [profile.id, profile.name, profile.bio, profile.avatarURL, Self.encodeLinks(profile.links), unixMilliseconds()])
        }
    }

    func setVisibility(_ user: String, _ visibility: Visibility) throws {
        try database.pool.write { db in
            try db.execute(sql: "UPDATE user SET visibility = ? WHERE id = ?", arguments: [visibility.rawValue, user])
        }
    }

    func setStaff(_ user: String, _ staff: Bool) throws {
        try database.pool.write { db in
            try db.execute(sql: "UPDATE user SET staff = ? WHERE id = ?", arguments: [staff ? 1 : 0, user])
        }
    }

    /// Stores a trip with its hosts (users created when missing) in one transaction.
    func createTrip(_ trip: Trip, hosts: [String]) throws {
        try database.pool.write { db in
            try db.execute(
                sql: "INSERT INTO trip (id, name, resort, starts_at_ms, ends_at_ms, created_at_ms) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [trip.id, trip.name, trip.resort, trip.startsAt, trip.endsAt, unixMilliseconds()])
            for host in hosts {
                try Self.upsertMember(db, trip: trip.id, user: host, role: .host)
            }
        }
    }

    func addMember(trip: String, user: String, role: TripRole) throws {
        try database.pool.write { db in try Self.upsertMember(db, trip: trip, user: user, role: role) }
    }

    private static func upsertMember(_ db: Database, trip: String, user: String, role: TripRole) throws {
        try db.execute(
            sql: "INSERT INTO user (id, name, created_at_ms) VALUES (?, ?, ?) ON CONFLICT(id) DO NOTHING",
            arguments: [user, user, unixMilliseconds()])
        try db.execute(
            sql: "INSERT INTO trip_member (trip_id, user_id, role) VALUES (?, ?, ?) ON CONFLICT(trip_id, user_id) DO UPDATE SET role = excluded.role",
            arguments: [trip, user, role.rawValue])
    }

    func addRequest(from: String, to: String) throws {
        try database.pool.write { db in
            try db.execute(
                sql: "INSERT INTO friend_request (from_user, to_user, created_at_ms) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                arguments: [from, to, unixMilliseconds()])
        }
    }

    /// Removes the requests both ways, ending a friendship or a pending request.
    func removeRequests(between a: String, and b: String) throws {
        try database.pool.write { db in
            try db.execute(
                sql: "DELETE FROM friend_request WHERE (from_user = ? AND to_user = ?) OR (from_user = ? AND to_user = ?)",
                arguments: [a, b, b, a])
        }
    }

    static func encodeLinks(_ links: [String: String]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: links, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    static func decodeLinks(_ text: String) -> [String: String] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: String] ?? [:]
    }
}
