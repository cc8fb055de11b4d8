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

    /// The members of `json`, as the catalog prints the replica topic's payload.
    static let fields: [FieldContract] = [
        .required("k", .string, "the kind: known, profile, visibility, staff, trip, member, request, unfriend"),
        .optional("u", .string, "the user (the asking one for request and unfriend)"),
        .optional("t", .string, "the trip of member; the other user of request and unfriend"),
        .optional("v", .any, "the visibility, the staff flag or the member's role"), .optional("id", .string, "the trip's id"),
        .optional("name", .string, "the profile's or the trip's name"), .optional("bio", .string), .optional("avatar", .string),
        .optional("links", .object, "platform → URL"), .optional("resort", .string), .optional("starts", .integer, "Unix ms"),
        .optional("ends", .integer, "Unix ms"), .optional("hosts", .stringArray),
    ]

    /// Reads a change written by `json`; nil for anything else.
    init?(json: JSON) {
        guard let change = try? Self.read(RequestFields(json)) else { return nil }
        self = change
    }

    private static func read(_ fields: RequestFields) throws(HubError) -> DirectoryChange {
        // Written by another node: the RPCs that made the change checked the lengths.
        let any = Int.max
        func id(_ key: String) throws(HubError) -> String { try fields.string(key, maxLength: any) }
        switch try fields.string("k", maxLength: 16) {
        case "known": return .known(user: try id("u"))
        case "profile":
            var profile = Profile(id: try id("u"), name: try fields.string("name", maxLength: any))
            profile.bio = try fields.string("bio", maxLength: any, allowEmpty: true)
            profile.avatarURL = try fields.optionalString("avatar", maxLength: any, allowEmpty: true)
            for (platform, value) in try fields.optionalObject("links")?.members ?? [] {
                if case let .string(url) = value { profile.links[platform] = url }
            }
            return .profile(profile)
        case "visibility": return .visibility(user: try id("u"), try fields.choice("v", Visibility.self))
        case "staff": return .staff(user: try id("u"), try fields.bool("v"))
        case "trip":
            let trip = Trip(
                id: try id("id"), name: try fields.string("name", maxLength: any), resort: try fields.optionalString("resort", maxLength: any),
                startsAt: try fields.integer("starts", in: .min ... .max), endsAt: try fields.integer("ends", in: .min ... .max))
            return .trip(trip, hosts: try fields.stringArray("hosts", maxCount: any, maxLength: any))
        case "member": return .member(trip: try id("t"), user: try id("u"), role: try fields.choice("v", TripRole.self))
        case "request": return .request(from: try id("u"), to: try id("t"))
        case "unfriend": return .unfriend(try id("u"), try id("t"))
        case let other: throw .badRequest("unknown directory change '\(other)'")
        }
    }
}
