import GondolaHub
import GondolaProtocol

/// One write to the travel directory. The repository stores it, the directory
/// applies it to its in-memory view, and in a cluster the other nodes apply it too
/// (it travels as JSON on the bus). Applying a change twice leaves the same state.
enum DirectoryChange: Sendable, Equatable {
    /// A user known only from a token: a row named after the id, when missing.
    case known(user: String)
    case profile(Profile)
    case visibility(user: String, Visibility)
    case staff(user: String, Bool)
    /// A new trip with its hosts (users created when missing).
    case trip(Trip, hosts: [String])
    case member(trip: String, user: String, role: TripRole)
    /// `from` asked `to` to be friends.
    case request(from: String, to: String)
    /// Both users' requests to each other withdrawn.
    case unfriend(String, String)

    /// The users whose friends or trips the change touches (nil: none).
    var relatedUsers: [String]? {
        switch self {
        case .known, .profile, .visibility, .staff: nil
        case let .trip(_, hosts): hosts
        case let .member(_, user, _): [user]
        case let .request(from, to): [from, to]
        case let .unfriend(a, b): [a, b]
        }
    }

    var json: JSON {
        switch self {
        case let .known(user): ["k": "known", "u": .string(user)]
        case let .profile(profile):
            [
                "k": "profile", "u": .string(profile.id), "name": .string(profile.name), "bio": .string(profile.bio),
                "avatar": profile.avatarURL.map(JSON.string) ?? .null,
                "links": .object(profile.links.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }),
            ]
        case let .visibility(user, visibility): ["k": "visibility", "u": .string(user), "v": .string(visibility.rawValue)]
        case let .staff(user, staff): ["k": "staff", "u": .string(user), "v": .bool(staff)]
        case let .trip(trip, hosts):
            [
                "k": "trip", "id": .string(trip.id), "name": .string(trip.name), "resort": trip.resort.map(JSON.string) ?? .null,
                "starts": .int(trip.startsAt), "ends": .int(trip.endsAt), "hosts": .array(hosts.map(JSON.string)),
            ]
        case let .member(trip, user, role): ["k": "member", "t": .string(trip), "u": .string(user), "v": .string(role.rawValue)]
        case let .request(from, to): ["k": "request", "u": .string(from), "t": .string(to)]
        case let .unfriend(a, b): ["k": "unfriend", "u": .string(a), "t": .string(b)]
        }
    }

    /// Reads a change written by `json`; nil for anything else.
    init?(json: JSON) {
        guard case let .string(kind)? = json["k"] else { return nil }
        func string(_ key: String) -> String? { if case let .string(value)? = json[key] { value } else { nil } }
        func int(_ key: String) -> Int64? { if case let .int(value)? = json[key] { value } else { nil } }
        switch kind {
        case "known":
            guard let user = string("u") else { return nil }
            self = .known(user: user)
        case "profile":
            guard let user = string("u"), let name = string("name") else { return nil }
            var profile = Profile(id: user, name: name)
            profile.bio = string("bio") ?? ""
            profile.avatarURL = string("avatar")
            if case let .object(links)? = json["links"] {
                for (platform, value) in links { if case let .string(url) = value { profile.links[platform] = url } }
            }
            self = .profile(profile)
        case "visibility":
            guard let user = string("u"), let visibility = string("v").flatMap(Visibility.init(rawValue:)) else { return nil }
            self = .visibility(user: user, visibility)
        case "staff":
            guard let user = string("u"), case let .bool(staff)? = json["v"] else { return nil }
            self = .staff(user: user, staff)
        case "trip":
            guard let id = string("id"), let name = string("name"), let starts = int("starts"), let ends = int("ends"),
                  case let .array(hosts)? = json["hosts"] else { return nil }
            let hostIDs = hosts.compactMap { if case let .string(host) = $0 { host } else { nil } }
            self = .trip(Trip(id: id, name: name, resort: string("resort"), startsAt: starts, endsAt: ends), hosts: hostIDs)
        case "member":
            guard let trip = string("t"), let user = string("u"), let role = string("v").flatMap(TripRole.init(rawValue:)) else { return nil }
            self = .member(trip: trip, user: user, role: role)
        case "request":
            guard let from = string("u"), let to = string("t") else { return nil }
            self = .request(from: from, to: to)
        case "unfriend":
            guard let a = string("u"), let b = string("t") else { return nil }
            self = .unfriend(a, b)
        default:
            return nil
        }
    }
}
