import GondolaDomain
import GondolaHub
import GondolaProtocol

/// The `event.*` RPC methods: `create`, `rsvp`, `list`, `get`.
extension EventService {
    /// How far ahead an event may start, and how long it may last.
    static let maxLeadTime: Int64 = 366 * 86_400_000
    static let maxDuration: Int64 = 14 * 86_400_000
    /// An event may start at most this long ago (created late, while it runs).
    static let maxLateness: Int64 = 3_600_000

    func registerRPC(in registrations: inout NodeRegistrations) {
        registrations.register(
            "event.create", EventCreation.self, EventAnswer.self,
            rules:
                "audience `{kind:\"nearby\",radius?}` (travellers within the radius of your current position whom you may see; 108 without a position), `{kind:\"friends\"}`, `{kind:\"selected\",users}` (friends or trip-mates only), `{kind:\"trip\"}` (needs `trip`, yours); at most 500 invitees; title ≤ 120, description ≤ 2,000 characters; `starts_at` from an hour ago to a year ahead, `ends_at` after it and within 14 days",
            eventCreate)
        registrations.register(
            "event.rsvp", EventResponse.self, RSVPAnswer.self, rules: "invitees only, changeable", eventRsvp)
        registrations.register(
            "event.list", NoFields.self, EventList.self, rules: "the events the caller created or is invited to", eventList)
        registrations.register(
            "event.get", EventReference.self, EventAnswer.self, rules: "creator and invitees only", eventGet)
    }

    /// Answers `event.create`.
    func eventCreate(_ context: RPCContext, _ request: EventCreation) async throws -> EventAnswer {
        let (created, invitees) = try await create(request.event(creator: context.user), audience: request.audience)
        return EventAnswer(
            event: view(of: created), invitees: invitees.map { UserName(user: $0, name: directory.name(of: $0)) }, responses: nil,
            counts: RSVPCounts(pending: invitees.count))
    }

    /// Answers `event.rsvp`.
    func eventRsvp(_ context: RPCContext, _ request: EventResponse) async throws -> RSVPAnswer {
        let (_, counts) = try await respond(context.user, to: request.event, request.response)
        return RSVPAnswer(event: request.event, response: request.response, counts: counts)
    }

    /// Answers `event.list`.
    func eventList(_ context: RPCContext, _: NoFields) async throws -> EventList {
        EventList(
            events: try await events(of: context.user).map { entry in
                EventList.Entry(event: view(of: entry.event), creator: entry.event.creator == context.user, response: entry.response)
            })
    }

    /// Answers `event.get`.
    func eventGet(_ context: RPCContext, _ request: EventReference) async throws -> EventAnswer {
        let (event, responses) = try await visibleEvent(request.event, to: context.user)
        return EventAnswer(
            event: view(of: event), invitees: nil,
            responses: responses.map {
                EventAnswer.Response(user: UserName(user: $0.user, name: directory.name(of: $0.user)), response: $0.response)
            },
            counts: RSVPCounts(responses))
    }
}

/// `event.create`: the event (title, description, times in order, place, trip) and whom to invite.
struct EventCreation: RequestContract {
    let title: String
    let description: String
    let startsAt: Int64
    let endsAt: Int64?
    let place: EventPlace?
    let trip: String?
    let audience: EventAudience
    let createdAt: Int64

    init(_ fields: RequestFields) throws(HubError) {
        title = try fields.text("title", maxLength: EventService.maxTitleLength)
        description = try fields.optionalString("description", maxLength: EventService.maxDescriptionLength, allowEmpty: true) ?? ""
        let now = unixMilliseconds()
        startsAt = try fields.noting("Unix ms, from an hour ago to a year ahead", replacingLimits: true).integer(
            "starts_at", in: (now - EventService.maxLateness)...(now + EventService.maxLeadTime))
        endsAt = try fields.noting("Unix ms, after starts_at, within 14 days of it", replacingLimits: true).optionalInteger(
            "ends_at", in: (startsAt + 1)...(startsAt + EventService.maxDuration))
        place = try fields.noting("`{name?, lat, lon}`").optionalObject("place").map { (fields) throws(HubError) in
            EventPlace(
                name: try fields.optionalString("name", maxLength: 100), lat: try fields.number("lat", in: -90...90),
                lon: try fields.number("lon", in: -180...180))
        }
        trip = try fields.noting("the trip it belongs to").optionalString("trip", maxLength: 64)
        audience = try Self.audience(try fields.noting("`{kind, radius?, users?}`").object("audience"))
        createdAt = now
    }

    /// The event as `creator` creates it, with a new id.
    func event(creator: String) -> TravelEvent {
        TravelEvent(
            id: RandomID.make("e"), creator: creator, title: title, description: description, startsAt: startsAt,
            endsAt: endsAt, place: place, trip: trip, audience: "", createdAt: createdAt)
    }

    /// `{kind:"nearby",radius?}`, `{kind:"friends"}`, `{kind:"selected",users}` or `{kind:"trip"}`.
    static func audience(_ fields: RequestFields) throws(HubError) -> EventAudience {
        enum Kind: String, CaseIterable { case nearby, friends, selected, trip }
        let kind = try fields.choice("kind", Kind.self)
        let radius = try fields.noting("metres, for nearby").optionalNumber("radius", in: 1...NearbyChannel.maxRadius)
        let users = try fields.noting("for selected").optionalStringArray("users", maxCount: EventService.maxInvitees, maxLength: 64)
        switch kind {
        case .nearby: return .nearby(radius: radius ?? NearbyChannel.defaultRadius)
        case .friends: return .friends
        case .selected:
            guard let users else { throw .badRequest("\(fields.path(of: "users")) is required") }
            return .selected(users)
        case .trip: return .trip
        }
    }
}

/// `{event}`.
struct EventReference: RequestContract {
    let event: String
    init(_ fields: RequestFields) throws(HubError) { event = try fields.string("event", maxLength: 64) }
}

/// `event.rsvp`: `{event, response}`.
struct EventResponse: RequestContract {
    let event: String
    let response: RSVP
    init(_ fields: RequestFields) throws(HubError) {
        event = try fields.string("event", maxLength: 64)
        response = try fields.choice("response", RSVP.self)
    }
}
