import Foundation
import GondolaDomain
import GondolaHub
import GondolaProtocol

/// The `profile.*`, `trip.*` and `friend.*` RPC methods and the travel server API
/// methods (`trip_create`, `trip_add_member`, `user_set_staff`).
struct DirectoryService: Sendable {
    let directory: Directory
    let locations: LocationService
    let resorts: ResortCatalog
    let notify: @Sendable (_ user: String, _ push: JSON) -> Void

    static let maxNameLength = 64
    static let maxBioLength = 500
    static let maxURLLength = 512
    static let maxLinks = 10
    static let maxHostsPerTrip = 100

    func registerRPC(in registrations: inout NodeRegistrations) {
        registrations.register(
            "profile.get", ProfileReference.self, ProfileAnswer.self,
            rules:
                "never Telegram details; `staff` on the caller's own profile only", profileGet)
        registrations.register(
            "profile.update", ProfileChange.self, ProfileAnswer.self,
            rules: "name 1–64 characters, bio ≤ 500, http(s) URLs, ≤ 10 links", profileUpdate)
        registrations.register(
            "trip.list", NoFields.self, TripList.self,
            rules: "the caller's trips as host or traveller", tripList)
        registrations.register(
            "trip.members", TripReference.self, TripMembers.self,
            rules: "members only (103 otherwise)", tripMembers)
        registrations.register(
            "friend.add", UserReference.self, Friendship.self,
            rules: "the other side is told on `personal:`", friendAdd)
        registrations.register(
            "friend.remove", UserReference.self, Friendship.self,
            rules: "trip-mates stay friends (`source: \"trip\"`); the requests both ways are withdrawn", friendRemove)
        registrations.register(
            "friend.list", NoFields.self, FriendList.self,
            rules: "", friendList)
    }

    /// Answers `profile.get`.
    func profileGet(_ context: RPCContext, _ request: ProfileReference) async throws -> ProfileAnswer {
        let user = request.user ?? context.user
        if user == context.user { try await directory.ensureKnown(user) }
        guard let profile = try await directory.profile(of: user) else { throw HubError.badRequest("user: unknown user '\(user)'") }
        // Only the user's own profile says whether they are staff.
        return ProfileAnswer(profile: profile, staff: user == context.user ? try await directory.isStaff(user) : nil)
    }

    /// Answers `profile.update`.
    func profileUpdate(_ context: RPCContext, _ change: ProfileChange) async throws -> ProfileAnswer {
        try await directory.ensureKnown(context.user)
        var profile = try await directory.profile(of: context.user) ?? Profile(id: context.user, name: context.user)
        change.apply(to: &profile)
        try await directory.save(profile)
        return ProfileAnswer(profile: profile, staff: nil)
    }

    /// Answers `trip.list`.
    func tripList(_ context: RPCContext, _: NoFields) async throws -> TripList {
        try await directory.refresh(users: [context.user])
        let now = unixMilliseconds()
        return TripList(
            trips: directory.trips(of: context.user).sorted { $0.trip.startsAt < $1.trip.startsAt }.map { trip, role in
                TripList.Entry(trip: trip, role: role, running: trip.isRunning(at: now))
            })
    }

    /// Answers `trip.members`.
    func tripMembers(_ context: RPCContext, _ request: TripReference) async throws -> TripMembers {
        let trip = request.trip
        try await directory.refresh(users: [context.user], trips: [trip])
        guard try await directory.role(of: context.user, in: trip) != nil else {
            throw HubError.permissionDenied("trip.members is for members of trip \(trip)")
        }
        return TripMembers(
            members: directory.members(of: trip).map { TripMembers.Member(user: $0.key, name: directory.name(of: $0.key), role: $0.value) }
                .sorted { ($0.role == .host ? 0 : 1, $0.name, $0.user) < ($1.role == .host ? 0 : 1, $1.name, $1.user) })
    }

    /// Answers `friend.add`.
    func friendAdd(_ context: RPCContext, _ request: UserReference) async throws -> Friendship {
        let other = try await otherUser(request, context)
        if let source = try await directory.friendSource(context.user, other) { return Friendship(source: source) }
        try await directory.ensureKnown(context.user)
        let friends = try await directory.request(from: context.user, to: other)
        notify(
            other,
            [
                "type": "friend_request", "from": ["user": .string(context.user), "name": .string(directory.name(of: context.user))],
                "friends": .bool(friends),
            ])
        if friends { locations.relationsChanged([context.user, other]) }
        return Friendship(source: friends ? .mutual : nil)
    }

    /// Answers `friend.remove`.
    func friendRemove(_ context: RPCContext, _ request: UserReference) async throws -> Friendship {
        let other = try await otherUser(request, context)
        try await directory.unfriend(context.user, other)
        locations.relationsChanged([context.user, other])
        return Friendship(source: try await directory.friendSource(context.user, other))
    }

    /// Answers `friend.list`.
    func friendList(_ context: RPCContext, _: NoFields) async throws -> FriendList {
        try await directory.refresh(users: [context.user])
        return FriendList(
            friends: directory.friends(of: context.user)
                .map { FriendList.Friend(user: $0.user, name: directory.name(of: $0.user), source: $0.source) }
                .sorted { ($0.name, $0.user) < ($1.name, $1.user) },
            requests: directory.pendingRequests(to: context.user).map { UserName(user: $0, name: directory.name(of: $0)) })
    }

    private func otherUser(_ request: UserReference, _ context: RPCContext) async throws(HubError) -> String {
        guard request.user != context.user else { throw .badRequest("user must be someone else") }
        guard try await directory.profile(of: request.user) != nil else { throw .badRequest("user: unknown user '\(request.user)'") }
        return request.user
    }

    // MARK: Server API

    /// The administration methods for the server API.
    func registerServerAPI(in api: inout ServerAPIMethods) {
        api.register("trip_create", TripCreation.self, TripCreated.self, rules: "times in Unix ms", tripCreate)
        api.register("trip_add_member", TripMembership.self, EmptyAnswer.self, rules: "the user is created when missing", tripAddMember)
        api.register("user_set_staff", StaffChange.self, EmptyAnswer.self, rules: "staff may send announcements", userSetStaff)
    }

    /// Answers `trip_create`.
    func tripCreate(_ request: TripCreation) async throws(HubError) -> TripCreated {
        if let resort = request.resort, resorts.resort(resort) == nil { throw HubError.badRequest("resort: unknown resort '\(resort)'") }
        let trip = Trip(
            id: RandomID.make("t", hexDigits: 12), name: request.name, resort: request.resort, startsAt: request.startsAt, endsAt: request.endsAt)
        try await directory.createTrip(trip, hosts: request.hosts)
        locations.relationsChanged(request.hosts)
        return TripCreated(trip: trip)
    }

    /// Answers `trip_add_member`.
    func tripAddMember(_ request: TripMembership) async throws(HubError) -> EmptyAnswer {
        guard try await directory.trip(request.trip) != nil else { throw HubError.badRequest("trip: unknown trip '\(request.trip)'") }
        try await directory.addMember(trip: request.trip, user: request.user, role: request.role)
        locations.relationsChanged(Array(directory.members(of: request.trip).keys))
        return EmptyAnswer()
    }

    /// Answers `user_set_staff`.
    func userSetStaff(_ request: StaffChange) async throws(HubError) -> EmptyAnswer {
        try await directory.setStaff(request.user, request.staff)
        return EmptyAnswer()
    }

    // MARK: Checks

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

/// `profile.get`: `{user?}`, the caller when absent.
struct ProfileReference: RequestContract {
    let user: String?
    init(_ fields: RequestFields) throws(HubError) { user = try fields.noting("the caller when absent").optionalString("user", maxLength: 64) }
}

/// `profile.update`: the members to change, each kept when absent; an empty
/// `avatar_url` removes the picture.
struct ProfileChange: RequestContract {
    let name: String?
    let bio: String?
    /// nil: keep it; `.some(nil)`: remove it.
    let avatarURL: String??
    let links: [String: String]?

    init(_ fields: RequestFields) throws(HubError) {
        name = try fields.optionalText("name", maxLength: DirectoryService.maxNameLength)
        bio = try fields.optionalString("bio", maxLength: DirectoryService.maxBioLength, allowEmpty: true)
        let avatarField = fields.noting("an http(s) URL; empty removes it")
        if let avatar = try avatarField.optionalString("avatar_url", maxLength: DirectoryService.maxURLLength, allowEmpty: true) {
            guard avatar.isEmpty || DirectoryService.isWebURL(avatar) else { throw .badRequest("avatar_url must be an http(s) URL") }
            avatarURL = .some(avatar.isEmpty ? nil : avatar)
        } else {
            avatarURL = nil
        }
        links = try fields.noting("platform (`[a-z0-9_]`, up to 32) → http(s) URL, at most 10; replaces them all").optionalFreeObject("links").map {
            (links) throws(HubError) in try DirectoryService.links(links)
        }
    }

    func apply(to profile: inout Profile) {
        if let name { profile.name = name }
        if let bio { profile.bio = bio }
        if let avatarURL { profile.avatarURL = avatarURL }
        if let links { profile.links = links }
    }
}

/// `{trip}`.
struct TripReference: RequestContract {
    let trip: String
    init(_ fields: RequestFields) throws(HubError) { trip = try fields.string("trip", maxLength: 64) }
}

/// `{user}`: another user.
struct UserReference: RequestContract {
    let user: String
    init(_ fields: RequestFields) throws(HubError) { user = try fields.noting("someone else").string("user", maxLength: 64) }
}

/// `trip_create`: `{name, starts_at, ends_at, resort?, hosts}`.
struct TripCreation: RequestContract {
    let name: String
    let resort: String?
    let startsAt: Int64
    let endsAt: Int64
    let hosts: [String]

    init(_ fields: RequestFields) throws(HubError) {
        name = try fields.string("name", maxLength: 100)
        resort = try fields.noting("a resort of the catalog").optionalString("resort", maxLength: 64)
        startsAt = try fields.noting("Unix ms").integer("starts_at", in: 0...4_102_444_800_000)
        endsAt = try fields.noting("Unix ms, not before starts_at").integer("ends_at", in: 0...4_102_444_800_000)
        guard endsAt >= startsAt else { throw .badRequest("ends_at must not be before starts_at") }
        hosts = try fields.noting("user ids, at least one; created when missing").stringArray(
            "hosts", maxCount: DirectoryService.maxHostsPerTrip, maxLength: 64)
        guard !hosts.isEmpty else { throw .badRequest("hosts must name at least one user") }
        for (index, host) in hosts.enumerated() where !UserID.isValid(host) {
            throw .badRequest("hosts[\(index)] is not a valid user id")
        }
    }
}

/// `trip_add_member`: `{trip, user, role}`.
struct TripMembership: RequestContract {
    let trip: String
    let user: String
    let role: TripRole

    init(_ fields: RequestFields) throws(HubError) {
        trip = try fields.string("trip", maxLength: 64)
        user = try fields.noting("created when missing").string("user", maxLength: 64)
        guard UserID.isValid(user) else { throw .badRequest("user is not a valid user id") }
        role = try fields.choice("role", TripRole.self)
    }
}

/// `user_set_staff`: `{user, staff}`.
struct StaffChange: RequestContract {
    let user: String
    let staff: Bool

    init(_ fields: RequestFields) throws(HubError) {
        user = try fields.string("user", maxLength: 64)
        guard UserID.isValid(user) else { throw .badRequest("user is not a valid user id") }
        staff = try fields.bool("staff")
    }
}
