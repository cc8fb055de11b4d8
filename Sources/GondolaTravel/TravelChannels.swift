import GondolaDomain
import GondolaHub
import GondolaProtocol

/// The travel domain's built-in namespaces (docs/api/travel.md) and who may subscribe.
public enum TravelNamespaces {
    /// Namespace names the configuration may not redefine.
    public static let names: Set<String> = ["nearby", "friends", "locations", "chat", "trip", "event", "fences"]

    /// Hands each namespace to its provider.
    static func provide(
        in registrations: inout NodeRegistrations, locations: LocationService, directory: Directory, chats: ChatService,
        events: EventService
    ) {
        registrations.provide(PositionChannel.nearbyNamespace, by: NearbyChannel(locations: locations))
        registrations.provide(PositionChannel.friendsNamespace, by: FriendsChannel(locations: locations))
        registrations.provide(PositionChannel.locationsNamespace, by: TripLocationsChannel(locations: locations, directory: directory))
        registrations.provide(ChatChannel.options, by: ChatChannel(chats: chats))
        registrations.provide(TripChannel.options, by: TripChannel(directory: directory))
        registrations.provide(FenceEventsChannel.options, by: FenceEventsChannel(directory: directory))
        registrations.provide(channel: AnnouncementsChannel.channel, AnnouncementsChannel.options, by: AnnouncementsChannel())
        registrations.provide(NamespaceOptions(name: "event"), by: EventChannel(events: events))
    }

}

/// `nearby:#<uid>`: who is near the user, with the radius and limit of the subscribe `data`.
struct NearbyChannel: ChannelProvider {
    let locations: LocationService

    static let defaultRadius = 500.0, maxRadius = 5000.0
    static let defaultLimit = 50, maxLimit = 200

    func subscribe(_ subscription: ProvidedSubscription, attach: (RawJSON?) throws(HubError) -> Void) async throws(HubError) {
        try PersonalChannel.requireOwn(subscription)
        let fields = try RequestFields(subscription.data?.value)
        let radius = try fields.optionalNumber("radius", in: 1...Self.maxRadius) ?? Self.defaultRadius
        let limit = Int(try fields.optionalInteger("limit", in: 1...Int64(Self.maxLimit)) ?? Int64(Self.defaultLimit))
        try locations.openNearby(user: subscription.user, radius: radius, limit: limit, attach: attach)
    }

    func vacated(channel: ChannelName) {
        if let channel = PositionChannel(channel) { locations.vacated(channel) }
    }
}

/// `friends:#<uid>`: the user's friends' positions.
struct FriendsChannel: ChannelProvider {
    let locations: LocationService

    func subscribe(_ subscription: ProvidedSubscription, attach: (RawJSON?) throws(HubError) -> Void) async throws(HubError) {
        try PersonalChannel.requireOwn(subscription)
        try locations.openFriends(user: subscription.user, attach: attach)
    }

    func vacated(channel: ChannelName) {
        if let channel = PositionChannel(channel) { locations.vacated(channel) }
    }
}

/// `locations:<tripId>`: every member's position, for the trip's hosts.
struct TripLocationsChannel: ChannelProvider {
    let locations: LocationService
    let directory: Directory

    func subscribe(_ subscription: ProvidedSubscription, attach: (RawJSON?) throws(HubError) -> Void) async throws(HubError) {
        let trip = subscription.channel.key
        try await directory.requireHost(subscription.user, of: trip, "\(subscription.channel.raw) is for the hosts of trip \(trip)")
        try locations.openLocations(trip: trip, attach: attach)
    }

    func vacated(channel: ChannelName) {
        if let channel = PositionChannel(channel) { locations.vacated(channel) }
    }
}

/// `chat:<id>`: a chat's messages, for its members. A durable, recoverable stream
/// kept by `ChatStreamStore`; subscribers may also page it with `history`.
struct ChatChannel: ChannelProvider {
    let chats: ChatService
    let historyStore: (any HistoryStore)?

    init(chats: ChatService) {
        self.chats = chats
        historyStore = chats.streams
    }

    /// Chats keep every message (the store does not trim); size and TTL only mark the namespace as keeping a stream.
    static let options = NamespaceOptions.durableStream("chat", size: 1_000, ttl: .seconds(365 * 86_400))

    func subscribe(_ subscription: ProvidedSubscription, attach: (RawJSON?) throws(HubError) -> Void) async throws(HubError) {
        _ = try await chats.memberChat(subscription.channel.key, user: subscription.user)
        try attach(nil)
    }

    func vacated(channel: ChannelName) {}
}

/// `trip:<tripId>`: host broadcasts for the trip's members; a durable stream of
/// the last 100 for 30 days.
struct TripChannel: ChannelProvider {
    let directory: Directory

    static let options = NamespaceOptions.durableStream("trip", size: 100, ttl: .seconds(30 * 86_400))

    static func channel(of trip: String) -> String { "trip:\(trip)" }

    func subscribe(_ subscription: ProvidedSubscription, attach: (RawJSON?) throws(HubError) -> Void) async throws(HubError) {
        let trip = subscription.channel.key
        guard try await directory.role(of: subscription.user, in: trip) != nil else {
            throw .permissionDenied("\(subscription.channel.raw) is for members of trip \(trip)")
        }
        try attach(nil)
    }

    func vacated(channel: ChannelName) {}
}

/// `fences:<tripId>`: the trip's fence events, for its hosts; a durable stream of the last
/// 1,000 for 30 days.
struct FenceEventsChannel: ChannelProvider {
    let directory: Directory

    static let options = NamespaceOptions.durableStream("fences", size: 1_000, ttl: .seconds(30 * 86_400))

    static func channel(of trip: String) -> String { "fences:\(trip)" }

    func subscribe(_ subscription: ProvidedSubscription, attach: (RawJSON?) throws(HubError) -> Void) async throws(HubError) {
        let trip = subscription.channel.key
        try await directory.requireHost(subscription.user, of: trip, "\(subscription.channel.raw) is for the hosts of trip \(trip)")
        try attach(nil)
    }

    func vacated(channel: ChannelName) {}
}

/// `announcements`: staff notifications for every signed-in user; a durable stream
/// of the last 100 for 30 days.
struct AnnouncementsChannel: ChannelProvider {
    static let channel = "announcements"
    static let options = NamespaceOptions.durableStream("announcements", size: 100, ttl: .seconds(30 * 86_400))

    func subscribe(_ subscription: ProvidedSubscription, attach: (RawJSON?) throws(HubError) -> Void) async throws(HubError) {
        guard !subscription.user.isEmpty else { throw .permissionDenied("announcements are for signed-in users") }
        try attach(nil)
    }

    func vacated(channel: ChannelName) {}
}

/// `event:<eventId>`: RSVP changes with the counts, for the creator and the invitees.
struct EventChannel: ChannelProvider {
    let events: EventService

    func subscribe(_ subscription: ProvidedSubscription, attach: (RawJSON?) throws(HubError) -> Void) async throws(HubError) {
        _ = try await events.visibleEvent(subscription.channel.key, to: subscription.user)
        try attach(nil)
    }

    func vacated(channel: ChannelName) {}
}
