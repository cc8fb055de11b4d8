import GondolaDomain
import GondolaHub
import GondolaProtocol

/// `broadcast.send`: a host's message to everyone on one of their trips
/// (`trip:<id>`), or a staff member's announcement to every user
/// (`announcements`). Both channels keep a durable stream, so a traveller who was
/// offline gets what they missed when their SDK recovers.
struct BroadcastService: Sendable {
    let node: Node
    let directory: Directory
    let notices: NoticeBoard

    func registerRPC(in registrations: inout NodeRegistrations) {
        registrations.register(
            "broadcast.send", BroadcastMessage.self, BroadcastSent.self,
            rules:
                "published on `trip:<id>` (hosts of the trip) or `announcements` (staff); anyone else 103", broadcastSend)
    }

    /// Answers `broadcast.send`.
    func broadcastSend(_ context: RPCContext, _ request: BroadcastMessage) async throws -> BroadcastSent {
        let text = request.text
        let channel: String
        let type: String
        let audience: Notice.Audience
        var tripName = ""
        switch request.audience {
        case let .trip(trip):
            try await directory.refresh(users: [context.user], trips: [trip])
            try await directory.requireHost(context.user, of: trip, "only hosts of trip \(trip) may broadcast to it")
            (channel, type) = (TripChannel.channel(of: trip), "broadcast")
            audience = .users(directory.members(of: trip).keys.filter { $0 != context.user }.sorted())
            tripName = directory.cachedTrip(trip)?.name ?? trip
        case .everyone:
            guard try await directory.isStaff(context.user) else { throw HubError.permissionDenied("only staff may send announcements") }
            (channel, type) = (AnnouncementsChannel.channel, "announcement")
            audience = .everyone
        }
        let id = RandomID.make("b")
        let ts = unixMilliseconds()
        let message = BroadcastPublication(type: type, id: id, from: context.user, name: directory.name(of: context.user), text: text, ts: ts)
        guard let position = try await node.publish(channel: channel, data: Payload(message.json)) else {
            throw HubError.internalError("\(channel) keeps no stream")
        }
        notices.post(
            Notice(
                audience: audience, channel: channel, category: .broadcast, text: type == "broadcast" ? "trip.broadcast" : "announcement",
                values: ["sender": directory.name(of: context.user), "text": text, "trip": tripName],
                link: ["screen": type, "channel": channel, "id": id], at: ts))
        return BroadcastSent(channel: channel, id: id, position: position, ts: ts)
    }
}

/// A broadcast as `trip:<id>` and `announcements` carry it.
struct BroadcastPublication: AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("type", "`broadcast` (a trip's) or `announcement`") { $0.type }, .string("id") { $0.id }, .string("from", "the sender") { $0.from },
        .string("name", "the sender's name") { $0.name }, .string("text") { $0.text }, .integer("ts", "Unix ms") { $0.ts },
    ]
    let type: String
    let id: String
    let from: String
    let name: String
    let text: String
    let ts: Int64
}

/// `broadcast.send`: `{text, trip}` to a trip, or `{text, scope: "all"}` to everyone.
struct BroadcastMessage: RequestContract {
    enum Audience {
        case trip(String)
        case everyone
    }
    /// The one `scope` there is.
    enum Scope: String, CaseIterable {
        case all
    }
    let text: String
    let audience: Audience

    init(_ fields: RequestFields) throws(HubError) {
        text = try fields.text("text", maxLength: ChatService.maxTextLength)
        let trip: RequestFields.Reader<Audience> = { fields throws(HubError) in
            Audience.trip(try fields.noting("a trip the caller hosts").string("trip", maxLength: 64))
        }
        let scope: RequestFields.Reader<Audience> = { fields throws(HubError) in
            _ = try fields.noting("an announcement to everyone (staff only)").choice("scope", Scope.self)
            return Audience.everyone
        }
        audience = try fields.oneOf(
            ["trip": trip, "scope": scope], ifNone: "trip or scope is required", ifSeveral: "give either trip or scope, not both")
    }
}
