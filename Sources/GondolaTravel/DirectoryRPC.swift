import Foundation
import GondolaDomain
import GondolaHub
import GondolaProtocol

/// The `profile.*`, `trip.*` and `friend.*` RPC methods and the travel server API
/// methods (`trip_create`, `trip_add_member`, `user_set_staff`).
struct DirectoryRPC: Sendable {
    let directory: Directory
    let locations: LocationService
    let resorts: ResortCatalog
    let notify: @Sendable (_ user: String, _ push: JSON) -> Void

    static let maxNameLength = 64
    static let maxBioLength = 500
    static let maxURLLength = 512
    static let maxLinks = 10
    static let maxHostsPerTrip = 100

    func register(in registrations: inout NodeRegistrations) {
        registrations.register("profile.get") { context, data in
            let fields = try RequestFields(data)
            let user = try fields.optionalString("user", maxLength: 64) ?? context.user
            if user == context.user { try await directory.ensureKnown(user) }
            guard let profile = try await directory.profile(of: user) else { throw HubError.badRequest("user: unknown user '\(user)'") }
            // Only the user's own profile says whether they are staff.
            return await user == context.user
                ? Self.profileJSON(profile).adding("staff", .bool(try directory.isStaff(user))) : Self.profileJSON(profile)
        }
        registrations.register("profile.update") { context, data in
            let fields = try RequestFields(data)
            try await directory.ensureKnown(context.user)
            var profile = try await directory.profile(of: context.user) ?? Profile(id: context.user, name: context.user)
            if let name = try fields.optionalText("name", maxLength: Self.maxNameLength) { profile.name = name }
            if let bio = try fields.optionalString("bio", maxLength: Self.maxBioLength, allowEmpty: true) { profile.bio = bio }
            if let avatar = try fields.optionalString("avatar_url", maxLength: Self.maxURLLength, allowEmpty: true) {
                guard avatar.isEmpty || Self.isWebURL(avatar) else { throw HubError.badRequest("avatar_url must be an http(s) URL") }
                profile.avatarURL = avatar.isEmpty ? nil : avatar
            }
            if let links = try fields.optionalObject("links") { profile.links = try Self.links(links) }
            try await directory.save(profile)
            return Self.profileJSON(profile)
        }
        registrations.register("trip.list") { context, _ in
            try await directory.refresh(users: [context.user])
            let trips = directory.trips(of: context.user).sorted { $0.trip.startsAt < $1.trip.startsAt }
            let now = unixMilliseconds()
            return [
                "trips": .array(
                    trips.map { trip, role in
                        var json = Self.tripFields(trip)
                        json.append(("role", .string(role.rawValue)))
                        json.append(("running", .bool(trip.isRunning(at: now))))
                        return .object(json)
                    })
            ]
        }
        registrations.register("trip.members") { context, data in
            let trip = try RequestFields(data).string("trip", maxLength: 64)
            try await directory.refresh(users: [context.user], trips: [trip])
            guard try await directory.role(of: context.user, in: trip) != nil else {
                throw HubError.permissionDenied("trip.members is for members of trip \(trip)")
            }
            let members = directory.members(of: trip).map { (user: $0.key, role: $0.value, name: directory.name(of: $0.key)) }
                .sorted { ($0.role == .host ? 0 : 1, $0.name, $0.user) < ($1.role == .host ? 0 : 1, $1.name, $1.user) }
            return ["members": .array(members.map { ["user": .string($0.user), "name": .string($0.name), "role": .string($0.role.rawValue)] })]
        }
        registrations.register("friend.add") { context, data in
            let other = try await otherUser(data, context)
            if let source = try await directory.friendSource(context.user, other) {
                return ["friends": true, "source": .string(source.rawValue)]
            }
            try await directory.ensureKnown(context.user)
            let friends = try await directory.request(from: context.user, to: other)
            notify(
                other,
                [
                    "type": "friend_request", "from": ["user": .string(context.user), "name": .string(directory.name(of: context.user))],
                    "friends": .bool(friends),
                ])
            if friends { locations.relationsChanged([context.user, other]) }
            return ["friends": .bool(friends), "source": friends ? "mutual" : .null]
        }
        registrations.register("friend.remove") { context, data in
            let other = try await otherUser(data, context)
            try await directory.unfriend(context.user, other)
            locations.relationsChanged([context.user, other])
            let source = try await directory.friendSource(context.user, other)
            return ["friends": .bool(source != nil), "source": source.map { .string($0.rawValue) } ?? .null]
        }
        registrations.register("friend.list") { context, _ in
            try await directory.refresh(users: [context.user])
            let friends = directory.friends(of: context.user)
                .map { (user: $0.user, source: $0.source, name: directory.name(of: $0.user)) }
                .sorted { ($0.name, $0.user) < ($1.name, $1.user) }
            let requests = directory.pendingRequests(to: context.user)
            return [
                "friends": .array(friends.map { ["user": .string($0.user), "name": .string($0.name), "source": .string($0.source.rawValue)] }),
                "requests": .array(requests.map { ["user": .string($0), "name": .string(directory.name(of: $0))] }),
            ]
        }
    }

    private func otherUser(_ data: JSON?, _ context: RPCContext) async throws(HubError) -> String {
        let other = try RequestFields(data).string("user", maxLength: 64)
        guard other != context.user else { throw .badRequest("user must be someone else") }
        guard try await directory.profile(of: other) != nil else { throw .badRequest("user: unknown user '\(other)'") }
        return other
    }

    // MARK: Server API

    /// The administration methods for the server API, by name.
    var adminMethods: [(name: String, method: @Sendable (JSON) async throws(HubError) -> JSON)] {
        [
            (
                "trip_create",
                { body throws(HubError) in
                    let fields = try RequestFields(body)
                    let name = try fields.string("name", maxLength: 100)
                    let resort = try fields.optionalString("resort", maxLength: 64)
                    if let resort, resorts.resort(resort) == nil { throw HubError.badRequest("resort: unknown resort '\(resort)'") }
                    let startsAt = try fields.integer("starts_at", in: 0...4_102_444_800_000)
                    let endsAt = try fields.integer("ends_at", in: 0...4_102_444_800_000)
                    guard endsAt >= startsAt else { throw HubError.badRequest("ends_at must not be before starts_at") }
                    let hosts = try fields.stringArray("hosts", maxCount: Self.maxHostsPerTrip, maxLength: 64)
                    guard !hosts.isEmpty else { throw HubError.badRequest("hosts must name at least one user") }
                    for (index, host) in hosts.enumerated() where !UserID.isValid(host) {
                        throw HubError.badRequest("hosts[\(index)] is not a valid user id")
                    }
                    let trip = Trip(
                        id: RandomID.make("t", hexDigits: 12),
                        name: name, resort: resort, startsAt: startsAt, endsAt: endsAt)
                    try await directory.createTrip(trip, hosts: hosts)
                    locations.relationsChanged(hosts)
                    return ["trip": .object(Self.tripFields(trip))]
                }
            ),
            (
                "trip_add_member",
                { body throws(HubError) in
                    let fields = try RequestFields(body)
                    let trip = try fields.string("trip", maxLength: 64)
                    guard try await directory.trip(trip) != nil else { throw HubError.badRequest("trip: unknown trip '\(trip)'") }
                    let user = try fields.string("user", maxLength: 64)
                    guard UserID.isValid(user) else { throw HubError.badRequest("user is not a valid user id") }
                    let role = try fields.choice("role", TripRole.self)
                    try await directory.addMember(trip: trip, user: user, role: role)
                    locations.relationsChanged(Array(directory.members(of: trip).keys))
                    return [:]
                }
            ),
            (
                "user_set_staff",
                { body throws(HubError) in
                    let fields = try RequestFields(body)
                    let user = try fields.string("user", maxLength: 64)
                    guard UserID.isValid(user) else { throw HubError.badRequest("user is not a valid user id") }
                    try await directory.setStaff(user, try fields.bool("staff"))
                    return [:]
                }
            ),
        ]
    }

    // MARK: JSON

    static func profileJSON(_ profile: Profile) -> JSON {
        [
            "user": .string(profile.id), "name": .string(profile.name), "bio": .string(profile.bio),
            "avatar_url": profile.avatarURL.map(JSON.string) ?? .null,
            "links": .object(profile.links.sorted { $0.key < $1.key }.map { (key: $0.key, value: .string($0.value)) }),
        ]
    }

    static func tripFields(_ trip: Trip) -> [(key: String, value: JSON)] {
        [
            ("id", .string(trip.id)), ("name", .string(trip.name)), ("resort", trip.resort.map(JSON.string) ?? .null),
            ("starts_at", .int(trip.startsAt)), ("ends_at", .int(trip.endsAt)),
        ]
    }

    static func isWebURL(_ text: String) -> Bool {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), url.host?.isEmpty == false else { return false }
        return scheme == "https" || scheme == "http"
    }

    /// Social links: at most `maxLinks` platform names (`[a-z0-9_]`, up to 32) to http(s) URLs.
    static func links(_ fields: RequestFields) throws(HubError) -> [String: String] {
        guard fields.members.count <= maxLinks else { throw .badRequest("links has \(fields.members.count) entries, more than \(maxLinks)") }
        var links: [String: String] = [:]
        for (key, _) in fields.members {
            guard !key.isEmpty, key.count <= 32, key.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }) else {
                throw .badRequest("links: '\(key)' is not a platform name ([a-z0-9_], up to 32 characters)")
            }
            let url = try fields.string(key, maxLength: maxURLLength)
            guard isWebURL(url) else { throw .badRequest("links.\(key) must be an http(s) URL") }
            links[key] = url
        }
        return links
    }
}
