import Foundation
import GRDB
import GondolaStore

/// An invitee's answer to an event.
public enum RSVP: String, Sendable, CaseIterable {
    case going, maybe, declined
}

/// Where an event takes place.
public struct EventPlace: Sendable, Equatable {
    public var name: String?
    public var lat: Double
    public var lon: Double
}

/// An event someone created for people nearby, friends, selected people or a trip.
public struct TravelEvent: Sendable, Equatable {
    public var id: String
    public var creator: String
    public var title: String
    public var description: String
    public var startsAt: Int64
    public var endsAt: Int64?
    public var place: EventPlace?
    public var trip: String?
    /// The audience kind it was created for: nearby, friends, selected, trip.
    public var audience: String
    public var createdAt: Int64
}

/// How many invitees answered what; `pending` have not answered.
struct RSVPCounts: Sendable, Equatable {
    var going = 0, maybe = 0, declined = 0, pending = 0

    init(pending: Int = 0) { self.pending = pending }

    init(_ responses: [(user: String, response: RSVP?)]) {
        for (_, response) in responses {
            switch response {
            case .going?: going += 1
            case .maybe?: maybe += 1
            case .declined?: declined += 1
            case nil: pending += 1
            }
        }
    }
}

/// Where events live: events and their invitees with responses, and the Telegram
/// ids of invitees (to reach them through the bot).
protocol EventRepository: Sendable {
    /// Stores an event with its invitees in one transaction.
    func create(_ event: TravelEvent, invitees: [String]) async throws
    func event(_ id: String) async throws -> TravelEvent?
    /// Every invitee with their response (nil: not answered), by user id.
    func responses(to event: String) async throws -> [(user: String, response: RSVP?)]
    /// Sets an invitee's response; false when the user is not invited.
    func respond(to event: String, user: String, _ response: RSVP, at time: Int64) async throws -> Bool
    /// Events `user` created or is invited to, soonest first, with their own response.
    func events(of user: String) async throws -> [(event: TravelEvent, invited: Bool, response: RSVP?)]
    /// Telegram ids of those of `users` who signed in with Telegram.
    func telegramIDs(of users: [String]) async throws -> [String: Int64]
    /// The user who signed in with Telegram account `telegramID`, if any.
    func user(forTelegramID telegramID: Int64) async throws -> String?
}

/// The event tables in SQLite.
struct SQLiteEventRepository: EventRepository {
    let database: GondolaDatabase

    /// Stores an event with its invitees in one transaction.
    func create(_ event: TravelEvent, invitees: [String]) throws {
        try database.pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO event (id, creator, title, description, starts_at_ms, ends_at_ms, place_name, place_lat, place_lon, trip_id, audience, created_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    event.id, event.creator, event.title, event.description, event.startsAt, event.endsAt, event.place?.name,
                    event.place?.lat, event.place?.lon, event.trip, event.audience, event.createdAt,
                ])
            for invitee in invitees {
                try db.execute(sql: "INSERT INTO event_invitee (event_id, user_id) VALUES (?, ?)", arguments: [event.id, invitee])
            }
        }
    }

    func event(_ id: String) throws -> TravelEvent? {
        try database.pool.read { db in try Row.fetchOne(db, sql: "SELECT * FROM event WHERE id = ?", arguments: [id]).map(Self.event) }
    }

    /// Every invitee with their response (nil: not answered).
    func responses(to event: String) throws -> [(user: String, response: RSVP?)] {
        try database.pool.read { db in
            try Row.fetchAll(db, sql: "SELECT user_id, response FROM event_invitee WHERE event_id = ? ORDER BY user_id", arguments: [event]).map {
                (user: $0["user_id"], response: ($0["response"] as String?).flatMap(RSVP.init(rawValue:)))
            }
        }
    }

    /// Sets an invitee's response; false when the user is not invited.
    func respond(to event: String, user: String, _ response: RSVP, at time: Int64) throws -> Bool {
        try database.pool.write { db in
            try db.execute(
                sql: "UPDATE event_invitee SET response = ?, responded_at_ms = ? WHERE event_id = ? AND user_id = ?",
                arguments: [response.rawValue, time, event, user])
            return db.changesCount > 0
        }
    }

    /// Events `user` created or is invited to, soonest first, with their own response.
    func events(of user: String) throws -> [(event: TravelEvent, invited: Bool, response: RSVP?)] {
        try database.pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT event.*, invitee.user_id AS invited, invitee.response AS my_response
                    FROM event LEFT JOIN event_invitee AS invitee ON invitee.event_id = event.id AND invitee.user_id = ?
                    WHERE event.creator = ? OR invitee.user_id IS NOT NULL
                    ORDER BY event.starts_at_ms, event.id
                    """,
                arguments: [user, user]
            ).map { row in
                (
                    event: try Self.event(row), invited: (row["invited"] as String?) != nil,
                    response: (row["my_response"] as String?).flatMap(RSVP.init(rawValue:))
                )
            }
        }
    }

    /// Telegram ids of those of `users` who signed in with Telegram.
    func telegramIDs(of users: [String]) throws -> [String: Int64] {
        guard !users.isEmpty else { return [:] }
        return try database.pool.read { db in
            var result: [String: Int64] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT id, telegram_id FROM user WHERE telegram_id IS NOT NULL AND id IN (\(databaseQuestionMarks(count: users.count)))",
                arguments: StatementArguments(users))
            {
                result[row["id"]] = row["telegram_id"]
            }
            return result
        }
    }

    /// The user who signed in with Telegram account `telegramID`, if any.
    func user(forTelegramID telegramID: Int64) throws -> String? {
        try database.pool.read { db in try String.fetchOne(db, sql: "SELECT id FROM user WHERE telegram_id = ?", arguments: [telegramID]) }
    }

    private static func event(_ row: Row) throws -> TravelEvent {
        let lat: Double? = row["place_lat"]
        let lon: Double? = row["place_lon"]
        return TravelEvent(
            id: row["id"], creator: row["creator"], title: row["title"], description: row["description"], startsAt: row["starts_at_ms"],
            endsAt: row["ends_at_ms"], place: lat.flatMap { lat in lon.map { EventPlace(name: row["place_name"], lat: lat, lon: $0) } },
            trip: row["trip_id"], audience: row["audience"], createdAt: row["created_at_ms"])
    }
}
