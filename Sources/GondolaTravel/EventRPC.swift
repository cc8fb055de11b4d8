import GondolaDomain
import GondolaHub
import GondolaProtocol

/// The `event.*` RPC methods: `create`, `rsvp`, `list`, `get`.
struct EventRPC: Sendable {
    let events: EventService
    let directory: Directory

    /// How far ahead an event may start, and how long it may last.
    static let maxLeadTime: Int64 = 366 * 86_400_000
    static let maxDuration: Int64 = 14 * 86_400_000
    /// An event may start at most this long ago (created late, while it runs).
    static let maxLateness: Int64 = 3_600_000

    func register(in registrations: inout NodeRegistrations) {
        registrations.register("event.create") { context, data in
            let fields = try RequestFields(data)
            let event = try Self.event(fields, creator: context.user)
            let audience = try Self.audience(try fields.object("audience"))
            let (created, invitees) = try await events.create(event, audience: audience)
            return EventJSON.event(created, directory: directory)
                .adding("invitees", .array(invitees.map { ["user": .string($0), "name": .string(directory.name(of: $0))] }))
                .adding("counts", EventJSON.counts(RSVPCounts(pending: invitees.count)))
        }
        registrations.register("event.rsvp") { context, data in
            let fields = try RequestFields(data)
            let id = try fields.string("event", maxLength: 64)
            let response = try fields.choice("response", RSVP.self)
            let (_, counts) = try await events.respond(context.user, to: id, response)
            return ["event": .string(id), "response": .string(response.rawValue), "counts": EventJSON.counts(counts)]
        }
        registrations.register("event.list") { context, _ in
            [
                "events": .array(
                    try await events.events(of: context.user).map { entry in
                        EventJSON.event(entry.event, directory: directory)
                            .adding("role", entry.event.creator == context.user ? "creator" : "invitee")
                            .adding("my_response", entry.response.map { .string($0.rawValue) } ?? .null)
                    })
            ]
        }
        registrations.register("event.get") { context, data in
            let id = try RequestFields(data).string("event", maxLength: 64)
            let (event, responses) = try await events.visibleEvent(id, to: context.user)
            return EventJSON.event(event, directory: directory)
                .adding(
                    "responses",
                    .array(
                        responses.map { entry in
                            [
                                "user": .string(entry.user), "name": .string(directory.name(of: entry.user)),
                                "response": entry.response.map { .string($0.rawValue) } ?? .null,
                            ]
                        })
                )
                .adding("counts", EventJSON.counts(RSVPCounts(responses)))
        }
    }

    /// The event described by `event.create`'s fields, checked: title, description, times in order, place.
    static func event(_ fields: RequestFields, creator: String) throws(HubError) -> TravelEvent {
        let title = try fields.text("title", maxLength: EventService.maxTitleLength)
        let description = try fields.optionalString("description", maxLength: EventService.maxDescriptionLength, allowEmpty: true) ?? ""
        let now = unixMilliseconds()
        let startsAt = try fields.integer("starts_at", in: (now - maxLateness)...(now + maxLeadTime))
        let endsAt = try fields.optionalInteger("ends_at", in: (startsAt + 1)...(startsAt + maxDuration))
        var place: EventPlace?
        if let fields = try fields.optionalObject("place") {
            place = EventPlace(
                name: try fields.optionalString("name", maxLength: 100), lat: try fields.number("lat", in: -90...90),
                lon: try fields.number("lon", in: -180...180))
        }
        let trip = try fields.optionalString("trip", maxLength: 64)
        return TravelEvent(
            id: RandomID.make("e"), creator: creator, title: title, description: description, startsAt: startsAt,
            endsAt: endsAt, place: place, trip: trip, audience: "", createdAt: now)
    }

    /// `{kind:"nearby",radius?}`, `{kind:"friends"}`, `{kind:"selected",users}` or `{kind:"trip"}`.
    static func audience(_ fields: RequestFields) throws(HubError) -> EventAudience {
        enum Kind: String, CaseIterable { case nearby, friends, selected, trip }
        switch try fields.choice("kind", Kind.self) {
        case .nearby: return .nearby(radius: try fields.optionalNumber("radius", in: 1...NearbyChannel.maxRadius) ?? NearbyChannel.defaultRadius)
        case .friends: return .friends
        case .selected: return .selected(try fields.stringArray("users", maxCount: EventService.maxInvitees, maxLength: 64))
        case .trip: return .trip
        }
    }
}
