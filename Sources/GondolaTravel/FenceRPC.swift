import GondolaDomain
import GondolaHub
import GondolaProtocol

/// The `fence.*` RPC methods (hosts of the trip) and the server API's `fence_*` methods.
extension FenceService {
    func registerRPC(in registrations: inout NodeRegistrations) {
        registrations.register(
            "fence.create", FenceDefinition.self, FenceAnswer.self,
            rules:
                "hosts of the trip only (103); at most 100 fences per trip; `roaming.user` and `users` must be members of the trip; bad geometry is refused (107) naming what is wrong"
        ) { context, request in
            try await self.requireHost(context.user, of: request.trip)
            return try await self.create(request, by: context.user)
        }
        registrations.register("fence.list", TripFenceReference.self, FenceList.self, rules: "hosts of the trip only, oldest first") {
            context, request in
            try await self.requireHost(context.user, of: request.trip)
            return try await self.list(request.trip)
        }
        registrations.register("fence.delete", FenceDeletion.self, EmptyAnswer.self, rules: "hosts of the trip only; 107 for an unknown fence") {
            context, request in
            try await self.requireHost(context.user, of: request.trip)
            try await self.delete(request)
            return EmptyAnswer()
        }
    }

    func registerServerAPI(in api: inout ServerAPIMethods) {
        api.register("fence_create", FenceDefinition.self, FenceAnswer.self, rules: "as `fence.create`, made by `api`") { request throws(HubError) in
            try await self.requireTrip(request.trip)
            return try await self.create(request, by: "api")
        }
        api.register("fence_list", TripFenceReference.self, FenceList.self, rules: "oldest first") { request throws(HubError) in
            try await self.requireTrip(request.trip)
            return try await self.list(request.trip)
        }
        api.register("fence_delete", FenceDeletion.self, EmptyAnswer.self, rules: "107 for an unknown fence") { request throws(HubError) in
            try await self.requireTrip(request.trip)
            try await self.delete(request)
            return EmptyAnswer()
        }
        api.register(
            "fence_webhook_set", FenceWebhookSetting.self, EmptyAnswer.self,
            rules: "the trip's fence events are posted to `url`, signed with `secret`; `url` null removes the webhook"
        ) { request throws(HubError) in
            try await self.requireTrip(request.trip)
            do {
                try await self.repository.setWebhook(request.webhook, of: request.trip)
            } catch {
                throw .internalError("cannot store the webhook: \(error)")
            }
            return EmptyAnswer()
        }
    }

    private func requireHost(_ user: String, of trip: String) async throws(HubError) {
        try await directory.requireHost(user, of: trip, "only hosts of trip \(trip) manage its fences")
    }

    private func requireTrip(_ trip: String) async throws(HubError) {
        guard try await directory.trip(trip) != nil else { throw .badRequest("trip: unknown trip '\(trip)'") }
    }

    /// Stores a fence checked against the trip's members and its limit, and starts watching it.
    func create(_ request: FenceDefinition, by creator: String) async throws(HubError) -> FenceAnswer {
        let members = directory.members(of: request.trip)
        if case let .roaming(anchor, _) = request.shape, members[anchor] == nil {
            throw .badRequest("roaming.user: '\(anchor)' is not a member of trip \(request.trip)")
        }
        if let stranger = request.users?.first(where: { members[$0] == nil }) {
            throw .badRequest("users: '\(stranger)' is not a member of trip \(request.trip)")
        }
        let fence = TripFence(
            id: RandomID.make("f", hexDigits: 12), trip: request.trip, name: request.name, shape: request.shape, detects: request.detects,
            dwellMilliseconds: request.dwellMilliseconds, users: request.users, createdBy: creator, createdAt: unixMilliseconds())
        let stored: Bool
        do {
            stored = try await repository.create(fence, limit: Self.maxFencesPerTrip)
        } catch {
            throw .internalError("cannot store the fence: \(error)")
        }
        guard stored else { throw .badRequest("trip \(request.trip) already has \(Self.maxFencesPerTrip) fences, the most a trip may have") }
        try await applied(trip: request.trip)
        return FenceAnswer(fence: fence)
    }

    /// The trip's fences as the database holds them now (read, and applied to this node's
    /// watch), so that a fence another node just stored or deleted is listed as it is: the
    /// other nodes' change notice may not have come yet.
    func list(_ trip: String) async throws(HubError) -> FenceList {
        do {
            try await reload(trip: trip)
        } catch {
            throw .internalError("cannot read the trip's fences: \(error)")
        }
        return FenceList(fences: fences(of: trip), owner: owner(of: trip))
    }

    func delete(_ request: FenceDeletion) async throws(HubError) {
        let deleted: Bool
        do {
            deleted = try await repository.delete(trip: request.trip, id: request.fence)
        } catch {
            throw .internalError("cannot delete the fence: \(error)")
        }
        guard deleted else { throw .badRequest("fence: trip \(request.trip) has no fence '\(request.fence)'") }
        try await applied(trip: request.trip)
    }

    /// Watches the trip's stored fences here and tells the other nodes.
    private func applied(trip: String) async throws(HubError) {
        do {
            try await reload(trip: trip)
        } catch {
            throw .internalError("cannot read the trip's fences: \(error)")
        }
        changed(trip: trip)
    }
}

/// `fence.list`'s request: the trip.
struct TripFenceReference: RequestContract {
    let trip: String

    init(_ fields: RequestFields) throws(HubError) {
        trip = try fields.string("trip", maxLength: 64)
    }
}

/// `fence.delete`'s request: the trip and the fence.
struct FenceDeletion: RequestContract {
    let trip: String
    let fence: String

    init(_ fields: RequestFields) throws(HubError) {
        trip = try fields.string("trip", maxLength: 64)
        fence = try fields.noting("the fence's id").string("fence", maxLength: 64)
    }
}

/// `fence_webhook_set`'s request.
struct FenceWebhookSetting: RequestContract {
    let trip: String
    let webhook: FenceWebhook?

    init(_ fields: RequestFields) throws(HubError) {
        trip = try fields.string("trip", maxLength: 64)
        let url = try fields.noting("an http(s) URL; absent or null removes the webhook").optionalString("url", maxLength: 2_048)
        let secret = try fields.noting("at least 16 characters; required with a url").optionalString("secret", maxLength: 256)
        guard let url else {
            webhook = nil
            return
        }
        guard DirectoryService.isWebURL(url) else { throw .badRequest("url: '\(url)' is not an http(s) URL") }
        guard let secret else { throw .badRequest("secret is required") }
        guard secret.count >= 16 else { throw .badRequest("secret must have at least 16 characters, got \(secret.count)") }
        webhook = FenceWebhook(url: url, secret: secret)
    }
}

/// `fence.create`'s answer.
struct FenceAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [.object("fence") { $0.fence }]
    let fence: TripFence
}

/// `fence.list`'s answer.
struct FenceList: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .objects("fences") { $0.fences },
        .string("owner", "the uid of the node that reports the trip's events, as this node sees it; null when none", orNull: { $0.owner }),
    ]
    let fences: [TripFence]
    let owner: String?
}
