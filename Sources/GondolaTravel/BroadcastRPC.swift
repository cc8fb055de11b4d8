import GondolaDomain
import GondolaHub
import GondolaProtocol

/// `broadcast.send`: a host's message to everyone on one of their trips
/// (`trip:<id>`), or a staff member's announcement to every user
/// (`announcements`). Both channels keep a durable stream, so a traveller who was
/// offline gets what they missed when their SDK recovers.
struct BroadcastRPC: Sendable {
    let node: Node
    let directory: Directory
    let notices: NoticeBoard

    func register(in registrations: inout NodeRegistrations) {
        registrations.register("broadcast.send") { context, data in
            let fields = try RequestFields(data)
            let text = try fields.text("text", maxLength: ChatService.maxTextLength)
            let channel: String
            let type: String
            let audience: Notice.Audience
            var tripName = ""
            switch (fields.has("trip"), fields.has("scope")) {
            case (true, true):
                throw HubError.badRequest("give either trip or scope, not both")
            case (true, false):
                let trip = try fields.string("trip", maxLength: 64)
                try await directory.refresh(users: [context.user], trips: [trip])
                guard try await directory.role(of: context.user, in: trip) == .host else {
                    throw HubError.permissionDenied("only hosts of trip \(trip) may broadcast to it")
                }
                (channel, type) = (TripChannel.channel(of: trip), "broadcast")
                audience = .users(directory.members(of: trip).keys.filter { $0 != context.user }.sorted())
                tripName = directory.cachedTrip(trip)?.name ?? trip
            case (false, true):
                guard try fields.string("scope", maxLength: 16) == "all" else { throw HubError.badRequest("scope must be \"all\"") }
                guard try await directory.isStaff(context.user) else { throw HubError.permissionDenied("only staff may send announcements") }
                (channel, type) = (AnnouncementsChannel.channel, "announcement")
                audience = .everyone
            case (false, false):
                throw HubError.badRequest("trip or scope is required")
            }
            let id = RandomID.make("b")
            let ts = unixMilliseconds()
            let message: JSON = [
                "type": .string(type), "id": .string(id), "from": .string(context.user), "name": .string(directory.name(of: context.user)),
                "text": .string(text), "ts": .int(ts),
            ]
            guard let position = try await node.publish(channel: channel, data: Payload(message)) else {
                throw HubError.internalError("\(channel) keeps no stream")
            }
            notices.post(
                Notice(
                    audience: audience, channel: channel, category: .broadcast, text: type == "broadcast" ? "trip.broadcast" : "announcement",
                    values: ["sender": directory.name(of: context.user), "text": text, "trip": tripName],
                    link: ["screen": type, "channel": channel, "id": id], at: ts))
            return [
                "channel": .string(channel), "id": .string(id), "offset": .int(Int64(position.offset)), "epoch": .string(position.epoch),
                "ts": .int(ts),
            ]
        }
    }
}
