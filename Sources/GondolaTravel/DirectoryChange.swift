import GondolaHub
import GondolaProtocol

/// One write to the travel directory. The repository stores it, the directory
/// applies it to its in-memory view, and in a cluster the other nodes apply it too
/// (it travels as JSON on the bus). Applying a change twice leaves the same state.
enum DirectoryChange: ReplicaPayload, Equatable {
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

    /// Reads a change written by `json` (by another node: the RPCs that made the change
    /// checked the lengths).
    init(_ fields: RequestFields) throws(HubError) {
        self = try fields.noting("the kind").variant(
            "k",
            [
                "known": Self.known, "profile": Self.profile, "visibility": Self.visibility, "staff": Self.staff, "trip": Self.trip,
                "member": Self.member, "request": Self.request, "unfriend": Self.unfriend,
            ])
    }

    private static func user(_ fields: RequestFields) throws(HubError) -> String {
        try fields.noting("the user (the asking one for request and unfriend)").string("u", maxLength: .max)
    }

    private static func other(_ fields: RequestFields) throws(HubError) -> String {
        try fields.noting("the trip of member; the other user of request and unfriend").string("t", maxLength: .max)
    }

    private static func known(_ fields: RequestFields) throws(HubError) -> DirectoryChange { .known(user: try user(fields)) }

    private static func profile(_ fields: RequestFields) throws(HubError) -> DirectoryChange {
        var profile = Profile(id: try user(fields), name: try fields.noting("the profile's or the trip's name").string("name", maxLength: .max))
        profile.bio = try fields.string("bio", maxLength: .max, allowEmpty: true)
        profile.avatarURL = try fields.optionalString("avatar", maxLength: .max, allowEmpty: true)
        for (platform, value) in try fields.noting("platform → URL").optionalFreeObject("links")?.members ?? [] {
            if case let .string(url) = value { profile.links[platform] = url }
        }
        return .profile(profile)
    }

    private static func visibility(_ fields: RequestFields) throws(HubError) -> DirectoryChange {
        .visibility(user: try user(fields), try fields.noting("the visibility, the staff flag or the member's role").choice("v", Visibility.self))
    }

    private static func staff(_ fields: RequestFields) throws(HubError) -> DirectoryChange {
        .staff(user: try user(fields), try fields.bool("v"))
    }

    private static func trip(_ fields: RequestFields) throws(HubError) -> DirectoryChange {
        let trip = Trip(
            id: try fields.noting("the trip's id").string("id", maxLength: .max), name: try fields.string("name", maxLength: .max),
            resort: try fields.optionalString("resort", maxLength: .max), startsAt: try fields.noting("Unix ms").integer("starts", in: .min ... .max),
            endsAt: try fields.noting("Unix ms").integer("ends", in: .min ... .max))
        return .trip(trip, hosts: try fields.stringArray("hosts", maxCount: .max, maxLength: .max))
    }

    private static func member(_ fields: RequestFields) throws(HubError) -> DirectoryChange {
        .member(trip: try other(fields), user: try user(fields), role: try fields.choice("v", TripRole.self))
    }

    private static func request(_ fields: RequestFields) throws(HubError) -> DirectoryChange {
        .request(from: try user(fields), to: try other(fields))
    }

    private static func unfriend(_ fields: RequestFields) throws(HubError) -> DirectoryChange {
        .unfriend(try user(fields), try other(fields))
    }
}
