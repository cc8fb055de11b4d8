import Foundation
import GondolaDomain
import GondolaHub
import GondolaProtocol
import GondolaServices
import Logging

/// Who an event is for, as asked in `event.create`.
enum EventAudience: Sendable, Equatable {
    /// Travellers within `radius` metres of the creator's position now, whom the creator may see.
    case nearby(radius: Double)
    /// The creator's friends (trip-mates included).
    case friends
    /// Named users, each a friend or trip-mate of the creator.
    case selected([String])
    /// The members of the event's trip.
    case trip

    var kind: String {
        switch self {
        case .nearby: "nearby"
        case .friends: "friends"
        case .selected: "selected"
        case .trip: "trip"
        }
    }
}

/// Events with invitations and RSVP: invitations go to each invitee's
/// `personal:#<uid>` (and to Telegram for those who signed in with it); every
/// response is published on `event:<id>` with the new counts and told to the
/// creator. Responses come from `event.rsvp` and from the Telegram webhook alike.
public final class EventService: Sendable {
    static let maxInvitees = 500
    static let maxTitleLength = 120
    static let maxDescriptionLength = 2000

    let node: Node
    let directory: Directory
    let locations: LocationService
    let repository: any EventRepository
    /// Where the Telegram sends are queued (the request does not wait for them).
    let telegramCalls: OutboundCalls
    let notices: NoticeBoard
    let logger: Logger

    init(
        node: Node, directory: Directory, locations: LocationService, repository: any EventRepository,
        telegramCalls: OutboundCalls, notices: NoticeBoard = NoticeBoard(), logger: Logger
    ) {
        self.telegramCalls = telegramCalls
        self.notices = notices
        self.node = node
        self.directory = directory
        self.locations = locations
        self.repository = repository
        self.logger = logger
    }

    static func channel(of event: String) -> String { "event:\(event)" }

    /// The users `audience` names for `creator` (never the creator), checked.
    func invitees(of creator: String, _ audience: EventAudience, trip: String?) async throws(HubError) -> [String] {
        var users: [String]
        switch audience {
        case let .nearby(radius):
            guard let near = locations.visibleUsers(near: creator, radius: radius) else {
                throw .notAvailable("audience nearby needs your current position; send location.update first")
            }
            users = near
        case .friends:
            users = directory.friends(of: creator).map(\.user)
        case let .selected(selected):
            users = []
            for (index, user) in selected.enumerated() where user != creator && !users.contains(user) {
                guard try await directory.friendSource(creator, user) != nil else {
                    throw .permissionDenied("audience.users[\(index)]: \(user) is not a friend or trip-mate")
                }
                users.append(user)
            }
        case .trip:
            guard let trip else { throw .badRequest("trip is required for audience trip") }
            try await directory.refresh(trips: [trip])
            users = directory.members(of: trip).keys.filter { $0 != creator }.sorted()
        }
        guard users.count <= Self.maxInvitees else {
            throw .badRequest("audience has \(users.count) users, more than \(Self.maxInvitees)")
        }
        return users
    }

    /// Stores the event with its invitees, then invites them; answers the event and invitees.
    func create(_ event: TravelEvent, audience: EventAudience) async throws(HubError) -> (event: TravelEvent, invitees: [String]) {
        var event = event
        event.audience = audience.kind
        if let trip = event.trip, try await directory.role(of: event.creator, in: trip) == nil {
            throw .permissionDenied("only members of trip \(trip) may create its events")
        }
        let invitees = try await invitees(of: event.creator, audience, trip: event.trip)
        try await directory.ensureKnown(event.creator)
        try await databaseWrite { try await repository.create(event, invitees: invitees) }
        let summary = view(of: event).json
        let creatorName = directory.name(of: event.creator)
        for invitee in invitees {
            node.tell(invitee, ["type": "invite", "event": summary])
            notices.post(
                Notice(
                    audience: .users([invitee]), channel: PersonalChannel.name(of: invitee), category: .invite, text: "event.invite",
                    values: ["sender": creatorName, "title": event.title], link: ["screen": "event", "event": event.id],
                    at: event.createdAt))
        }
        await inviteOnTelegram(event, invitees)
        return (event, invitees)
    }

    private func inviteOnTelegram(_ event: TravelEvent, _ invitees: [String]) async {
        let chats: [String: Int64]
        do {
            chats = try await repository.telegramIDs(of: invitees)
        } catch {
            return logger.error("telegram lookup failed", metadata: ["event": "\(event.id)", "error": "\(error)"])
        }
        guard !chats.isEmpty else { return }
        let invitation = TelegramMessage.invitation(to: event, creatorName: directory.name(of: event.creator))
        for (user, chat) in chats.sorted(by: { $0.key < $1.key }) {
            await telegramCalls.submit("invitation to \(event.id) for \(user)", TelegramCalls.message(invitation, to: chat))
        }
    }

    /// An event `user` created or is invited to; 103 otherwise (also for an unknown event).
    func visibleEvent(_ id: String, to user: String) async throws(HubError) -> (event: TravelEvent, responses: [(user: String, response: RSVP?)]) {
        guard let event = try await databaseRead({ try await repository.event(id) }) else { throw .permissionDenied("not invited to event \(id)") }
        let responses = try await databaseRead { try await repository.responses(to: id) }
        guard event.creator == user || responses.contains(where: { $0.user == user }) else { throw .permissionDenied("not invited to event \(id)") }
        return (event, responses)
    }

    /// Records an invitee's response (changeable), publishes it with the new counts on
    /// `event:<id>` and tells the creator on `personal:#<uid>`.
    func respond(_ user: String, to id: String, _ response: RSVP) async throws(HubError) -> (event: TravelEvent, counts: RSVPCounts) {
        guard let event = try await databaseRead({ try await repository.event(id) }) else { throw .permissionDenied("not invited to event \(id)") }
        guard try await databaseWrite({ try await repository.respond(to: id, user: user, response, at: unixMilliseconds()) }) else {
            throw .permissionDenied(event.creator == user ? "the creator of event \(id) does not answer it" : "not invited to event \(id)")
        }
        let counts = RSVPCounts(try await databaseRead { try await repository.responses(to: id) })
        let change = RSVPChange(event: id, user: UserName(user: user, name: directory.name(of: user)), response: response, counts: counts).json
        publish(Self.channel(of: id), change)
        node.tell(event.creator, change)
        notices.post(
            Notice(
                audience: .users([event.creator]), channel: PersonalChannel.name(of: event.creator), category: .invite,
                text: "event.\(response.rawValue)",
                values: ["name": directory.name(of: user), "title": event.title], link: ["screen": "event", "event": id]))
        return (event, counts)
    }

    func events(of user: String) async throws(HubError) -> [(event: TravelEvent, invited: Bool, response: RSVP?)] {
        try await databaseRead { try await repository.events(of: user) }
    }

    private func publish(_ channel: String, _ data: JSON) {
        node.publishInBackground(channel: channel, data: Payload(data))
    }
}

/// An event as its creator and invitees see it.
struct EventView: AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("id") { $0.event.id }, .string("title") { $0.event.title }, .string("description") { $0.event.description },
        .integer("starts_at", "Unix ms") { $0.event.startsAt }, .integer("ends_at", "Unix ms; null when open-ended", orNull: { $0.event.endsAt }),
        .object("place", "null without one", orNull: { $0.event.place }), .string("trip", "null outside a trip", orNull: { $0.event.trip }),
        .string("audience", "`nearby`, `friends`, `selected` or `trip`") { $0.event.audience }, .object("creator") { $0.creator },
        .string("channel", "`event:<id>`") { EventService.channel(of: $0.event.id) },
    ]
    let event: TravelEvent
    let creator: UserName
}

extension EventPlace: AnswerObject {
    public static let members: [AnswerMember<Self>] = [
        .string("name", "null without one", orNull: { $0.name }), .number("lat") { $0.lat }, .number("lon") { $0.lon },
    ]
}

extension RSVPCounts: AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .integer("going") { Int64($0.going) }, .integer("maybe") { Int64($0.maybe) }, .integer("declined") { Int64($0.declined) },
        .integer("pending", "not answered yet") { Int64($0.pending) },
    ]
}

/// An invitee's answer as `event:<id>` and the creator's personal channel carry it.
struct RSVPChange: AnswerObject {
    static let members: [AnswerMember<Self>] =
        [.string("type", "`rsvp`") { _ in "rsvp" }, .string("event") { $0.event }] + UserName.members(in: { $0.user }) + [
            .string("response") { $0.response.rawValue }, .object("counts") { $0.counts },
        ]
    let event: String
    let user: UserName
    let response: RSVP
    let counts: RSVPCounts
}

extension EventService {
    /// `event` with its creator's name.
    func view(of event: TravelEvent) -> EventView {
        EventView(event: event, creator: UserName(user: event.creator, name: directory.name(of: event.creator)))
    }
}
