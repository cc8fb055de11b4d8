import Foundation
import GondolaDomain
import GondolaHub
import Synchronization

/// Users, trips and the friend graph in memory, written through to the database
/// (and, in a cluster, to the other nodes' directories).
///
/// Every question the live path asks (are these two friends, who hosts this
/// traveller, may this viewer see that subject) is a few hash lookups: the whole
/// graph of a deployment (thousands of users, tens of trips each) fits in memory
/// and is loaded at start. Writes commit to the database first.
///
/// The memory never refuses: a request whose answer would be "no" (an unknown user
/// or trip, not a member, not friends) reads the rows concerned from the database
/// first, so what another node of a cluster committed a moment ago, and has not yet
/// replicated here, is found (`profile(of:)`, `trip(_:)`, `role(of:in:)`,
/// `friendSource(_:_:)`); requests that answer lists read their rows with `refresh`.
/// The live path uses the memory alone (`cachedTrip`), which the cluster's bus keeps
/// up to date.
public final class Directory: Sendable {
    struct State {
        var profiles: [String: Profile] = [:]
        var visibility: [String: Visibility] = [:]
        var staff: Set<String> = []
        var trips: [String: Trip] = [:]
        var tripMembers: [String: [String: TripRole]] = [:]
        var userTrips: [String: [String: TripRole]] = [:]
        /// Friend requests each user sent; a pair that asked each other is friends.
        var outgoing: [String: Set<String>] = [:]
        var incoming: [String: Set<String>] = [:]

        init() {}

        init(_ records: TravelRecords) {
            for profile in records.profiles { profiles[profile.id] = profile }
            visibility = records.visibility
            staff = records.staff
            for trip in records.trips { trips[trip.id] = trip }
            for member in records.members { addMember(trip: member.trip, user: member.user, role: member.role) }
            for request in records.requests { apply(.request(from: request.from, to: request.to)) }
        }

        mutating func apply(_ change: DirectoryChange) {
            switch change {
            case let .known(user):
                if profiles[user] == nil { profiles[user] = Profile(id: user, name: user) }
            case let .profile(profile):
                profiles[profile.id] = profile
            case let .visibility(user, value):
                apply(.known(user: user))
                visibility[user] = value
            case let .staff(user, isStaff):
                apply(.known(user: user))
                if isStaff { staff.insert(user) } else { staff.remove(user) }
            case let .trip(trip, hosts):
                trips[trip.id] = trip
                for host in hosts { addMember(trip: trip.id, user: host, role: .host) }
            case let .member(trip, user, role):
                addMember(trip: trip, user: user, role: role)
            case let .request(from, to):
                outgoing[from, default: []].insert(to)
                incoming[to, default: []].insert(from)
            case let .unfriend(a, b):
                outgoing[a]?.remove(b)
                outgoing[b]?.remove(a)
                incoming[a]?.remove(b)
                incoming[b]?.remove(a)
            }
        }

        /// Adds what the database holds about some users and trips. Nothing is removed:
        /// a change committed here between the read and this merge stays, and a removal
        /// another node made arrives on the bus.
        mutating func merge(_ records: TravelRecords) {
            for profile in records.profiles {
                profiles[profile.id] = profile
                visibility[profile.id] = records.visibility[profile.id] ?? .everyone
                if records.staff.contains(profile.id) { staff.insert(profile.id) } else { staff.remove(profile.id) }
            }
            for trip in records.trips { trips[trip.id] = trip }
            for member in records.members { addMember(trip: member.trip, user: member.user, role: member.role) }
            for request in records.requests { apply(.request(from: request.from, to: request.to)) }
        }

        mutating func addMember(trip: String, user: String, role: TripRole) {
            tripMembers[trip, default: [:]][user] = role
            userTrips[user, default: [:]][trip] = role
            if profiles[user] == nil { profiles[user] = Profile(id: user, name: user) }
        }

        func shareTrip(_ a: String, _ b: String) -> Bool {
            guard let tripsOfA = userTrips[a], let tripsOfB = userTrips[b] else { return false }
            let (small, large) = tripsOfA.count <= tripsOfB.count ? (tripsOfA, tripsOfB) : (tripsOfB, tripsOfA)
            return small.keys.contains { large[$0] != nil }
        }

        func friendSource(_ a: String, _ b: String) -> FriendSource? {
            guard a != b else { return nil }
            if shareTrip(a, b) { return .trip }
            if outgoing[a]?.contains(b) == true, outgoing[b]?.contains(a) == true { return .mutual }
            return nil
        }

        /// Whether `viewer` hosts a trip under way that `subject` belongs to.
        func hostsRunningTrip(viewer: String, subject: String, now: Int64) -> Bool {
            guard let hosted = userTrips[viewer], let subjectTrips = userTrips[subject] else { return false }
            return hosted.contains { trip, role in
                role == .host && subjectTrips[trip] != nil && (trips[trip]?.isRunning(at: now) ?? false)
            }
        }
    }

    let state: Mutex<State>
    let repository: any TravelRepository
    /// Tells the other nodes of a cluster about a committed change.
    private let replicate: @Sendable (DirectoryChange) -> Void

    /// The topic of directory changes on the cluster's bus.
    static let replicaTopic = "travel.directory"

    init(repository: any TravelRepository, replicate: @escaping @Sendable (DirectoryChange) -> Void = { _ in }) async throws {
        self.repository = repository
        self.replicate = replicate
        self.state = Mutex(State(try await repository.loadAll()))
    }

    /// Reads everything again (a cluster node that may have missed changes).
    func reload() async throws {
        let fresh = State(try await repository.loadAll())
        state.withLock { $0 = fresh }
    }

    /// Applies a change another node committed.
    func apply(_ change: DirectoryChange) {
        state.withLock { $0.apply(change) }
    }

    /// Reads what the database holds about `users` and `trips` into memory: what another
    /// node committed is known here from then on.
    public func refresh(users: [String] = [], trips: [String] = []) async throws(HubError) {
        guard !users.isEmpty || !trips.isEmpty else { return }
        let records = try await databaseRead { try await repository.records(users: users, trips: trips) }
        state.withLock { $0.merge(records) }
    }

    /// The memory's answer, or, when it has none, the answer after reading the rows
    /// `refresh` names.
    private func answer<T>(_ question: (State) -> T?, refreshing users: [String] = [], trips: [String] = []) async throws(HubError) -> T? {
        if let known = state.withLock({ question($0) }) { return known }
        try await refresh(users: users, trips: trips)
        return state.withLock { question($0) }
    }

    /// Stores a change, applies it here and tells the other nodes.
    private func commit(_ change: DirectoryChange) async throws(HubError) {
        try await databaseWrite { try await repository.write(change) }
        state.withLock { $0.apply(change) }
        replicate(change)
    }

    // MARK: Users

    /// The profile of `user` (a user known only from a token has a default one), read
    /// from the database when this node has not heard of them; nil for nobody.
    public func profile(of user: String) async throws(HubError) -> Profile? {
        try await answer({ $0.profiles[user] }, refreshing: [user])
    }

    /// Display name: the profile's name, else the id.
    public func name(of user: String) -> String {
        state.withLock { $0.profiles[user]?.name ?? user }
    }

    /// Makes sure a user who connected with a token has a row (named after its id until they set a name).
    func ensureKnown(_ user: String) async throws(HubError) {
        guard try await profile(of: user) == nil else { return }
        try await commit(.known(user: user))
    }

    /// Records a user who just connected with a valid token: they exist from now on. A
    /// `name` (the token's `info.name`) names a new user, or one still named after their
    /// id; a name the user chose stays.
    func connected(_ user: String, name: String?) async throws(HubError) {
        let stored = try await profile(of: user)
        guard let name, stored == nil || stored?.name == user, name != user else {
            if stored == nil { try await commit(.known(user: user)) }
            return
        }
        var named = stored ?? Profile(id: user, name: name)
        named.name = name
        try await commit(.profile(named))
    }

    func save(_ profile: Profile) async throws(HubError) {
        try await commit(.profile(profile))
    }

    public func visibility(of user: String) -> Visibility {
        state.withLock { $0.visibility[user] ?? .everyone }
    }

    func setVisibility(_ user: String, _ visibility: Visibility) async throws(HubError) {
        try await ensureKnown(user)
        try await commit(.visibility(user: user, visibility))
    }

    /// Whether `user` is staff (read from the database when this node says no).
    public func isStaff(_ user: String) async throws(HubError) -> Bool {
        try await answer({ $0.staff.contains(user) ? true : nil }, refreshing: [user]) ?? false
    }

    func setStaff(_ user: String, _ staff: Bool) async throws(HubError) {
        try await ensureKnown(user)
        try await commit(.staff(user: user, staff))
    }

    // MARK: Trips

    /// The trip with `id`, read from the database when this node has not heard of it.
    public func trip(_ id: String) async throws(HubError) -> Trip? {
        try await answer({ $0.trips[id] }, trips: [id])
    }

    /// The trip as this node knows it, without reading the database (the live path).
    public func cachedTrip(_ id: String) -> Trip? { state.withLock { $0.trips[id] } }

    /// The trips `user` belongs to, with the user's role in each.
    public func trips(of user: String) -> [(trip: Trip, role: TripRole)] {
        state.withLock { state in
            (state.userTrips[user] ?? [:]).compactMap { id, role in state.trips[id].map { ($0, role) } }
        }
    }

    /// Members of a trip with their roles.
    public func members(of trip: String) -> [String: TripRole] {
        state.withLock { $0.tripMembers[trip] ?? [:] }
    }

    /// Refuses (103, `refusal`) unless `user` hosts `trip`.
    public func requireHost(_ user: String, of trip: String, _ refusal: @autoclosure () -> String) async throws(HubError) {
        guard try await role(of: user, in: trip) == .host else { throw .permissionDenied(refusal()) }
    }

    /// The role of `user` in `trip`; when this node knows none, the trip's members are
    /// read from the database first.
    public func role(of user: String, in trip: String) async throws(HubError) -> TripRole? {
        try await answer({ $0.tripMembers[trip]?[user] }, refreshing: [user], trips: [trip])
    }

    func createTrip(_ trip: Trip, hosts: [String]) async throws(HubError) {
        try await commit(.trip(trip, hosts: hosts))
    }

    func addMember(trip: String, user: String, role: TripRole) async throws(HubError) {
        try await commit(.member(trip: trip, user: user, role: role))
    }

    // MARK: Friends

    /// Why `a` and `b` are friends, or nil when they are not (after reading both users'
    /// trips and requests from the database, when this node knows no reason).
    public func friendSource(_ a: String, _ b: String) async throws(HubError) -> FriendSource? {
        guard a != b else { return nil }
        return try await answer({ $0.friendSource(a, b) }, refreshing: [a, b])
    }

    /// Every friend of `user`: trip-mates and mutual adds.
    public func friends(of user: String) -> [(user: String, source: FriendSource)] {
        state.withLock { state in
            var result: [String: FriendSource] = [:]
            for (trip, _) in state.userTrips[user] ?? [:] {
                for member in (state.tripMembers[trip] ?? [:]).keys where member != user { result[member] = .trip }
            }
            for other in state.outgoing[user] ?? [] where result[other] == nil && state.outgoing[other]?.contains(user) == true {
                result[other] = .mutual
            }
            return result.map { ($0.key, $0.value) }
        }
    }

    /// Records that `from` asked `to`; answers whether they are friends now.
    func request(from: String, to: String) async throws(HubError) -> Bool {
        try await commit(.request(from: from, to: to))
        return try await friendSource(from, to) != nil
    }

    /// Withdraws both users' requests. Trip-mates stay friends through their trip.
    func unfriend(_ a: String, _ b: String) async throws(HubError) {
        try await commit(.unfriend(a, b))
    }

    /// Users who asked `user` to be friends and are not friends yet.
    public func pendingRequests(to user: String) -> [String] {
        state.withLock { state in
            (state.incoming[user] ?? []).filter { state.friendSource(user, $0) == nil }.sorted()
        }
    }

    // MARK: Visibility

    /// Whether `viewer` may see `subject`'s position: by the subject's visibility,
    /// and always when the viewer hosts a running trip of the subject.
    public func canSee(viewer: String, subject: String, now: Int64) -> Bool {
        state.withLock { state in
            switch state.visibility[subject] ?? .everyone {
            case .everyone: return true
            case .friends:
                return state.friendSource(viewer, subject) != nil || state.hostsRunningTrip(viewer: viewer, subject: subject, now: now)
            case .nobody:
                return state.hostsRunningTrip(viewer: viewer, subject: subject, now: now)
            }
        }
    }
}
