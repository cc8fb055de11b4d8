import GondolaHub
import GondolaProtocol

/// The `chat.*` RPC methods: `create`, `send`, `list`, `read`, `history`.
extension ChatService {
    func registerRPC(in registrations: inout NodeRegistrations) {
        registrations.register(
            "chat.create", ChatCreation.self, ChatCreated.self,
            rules:
                "one other member and no title: the pair's direct chat (the existing one when there is one), else a group chat; every member must be a friend or trip-mate (103 naming them)",
            chatCreate)
        registrations.register(
            "chat.send", ChatMessage.self, ChatMessageAnswer.self,
            rules:
                "text 1–4,000 characters, not blank; stored in SQLite before the answer; the same `client_message_id` again (within 10 minutes, also after a restart) answers the stored message with `\"repeated\":true` and publishes nothing",
            chatSend)
        registrations.register(
            "chat.list", NoFields.self, ChatList.self,
            rules:
                "newest activity first; unread counts others' messages after the read marker", chatList)
        registrations.register(
            "chat.read", ReadMarker.self, ReadMarkerAnswer.self,
            rules: "the marker only moves forward; beyond the newest message → 107", chatRead)
        registrations.register(
            "chat.history", HistoryPage.self, ChatHistory.self,
            rules: "up to `limit` (default 50, max 100) messages before offset `before`, oldest first", chatHistory)
    }

    /// Answers `chat.create`.
    func chatCreate(_ context: RPCContext, _ request: ChatCreation) async throws -> JSON {
        let chat = try await create(by: context.user, members: request.members, title: request.title)
        return ["chat": chatJSON(chat), "channel": .string(ChatService.channel(of: chat.id))]
    }

    /// Answers `chat.send`.
    func chatSend(_ context: RPCContext, _ request: ChatMessage) async throws -> JSON {
        // With a waiting client the reply leaves from the writer's thread right after the
        // commit, and what is returned here is dropped: build the answer only once.
        let (message, repeated) = try await send(
            by: context.user, to: request.chat, text: request.text, clientMessageID: request.clientMessageID
        ) { message, repeated in
            context.answer?(Self.sendAnswer(message, repeated: repeated))
        }
        return context.answer == nil ? Self.sendAnswer(message, repeated: repeated) : .null
    }

    /// Answers `chat.list`.
    func chatList(_ context: RPCContext, _: NoFields) async throws -> JSON {
        let list = try await chats(of: context.user)
        let summaries = try await summaries(of: list, for: context.user)
        let entries = list.map { chat in (chat: chat, summary: summaries[chat.id]) }
            .sorted { ($0.summary?.last?.ts ?? $0.chat.createdAt, $0.chat.id) > ($1.summary?.last?.ts ?? $1.chat.createdAt, $1.chat.id) }
        return [
            "chats": .array(
                entries.map { entry in
                    var json = chatJSON(entry.chat)
                    json = json.adding("last_message", entry.summary?.last.map(Self.messageJSON) ?? .null)
                    json = json.adding("unread", .int(Int64(entry.summary?.unread ?? 0)))
                    return json.adding("read_offset", .int(Int64(entry.summary?.read ?? 0)))
                })
        ]
    }

    /// Answers `chat.read`.
    func chatRead(_ context: RPCContext, _ request: ReadMarker) async throws -> JSON {
        ["read_offset": .int(Int64(try await markRead(request.chat, user: context.user, offset: request.offset)))]
    }

    /// Answers `chat.history`.
    func chatHistory(_ context: RPCContext, _ request: HistoryPage) async throws -> JSON {
        let (messages, more) = try await history(of: request.chat, user: context.user, before: request.before, limit: request.limit)
        return ["messages": .array(messages.map(Self.messageJSON)), "more": .bool(more)]
    }

    /// `{"id","kind","title","trip","channel","members":[{"user","name"}]}`; a trip chat lists the trip's members.
    func chatJSON(_ chat: Chat) -> JSON {
        let members = chat.kind == .trip ? chat.trip.map { Set(directory.members(of: $0).keys) } ?? [] : chat.members
        let title = chat.title ?? chat.trip.flatMap { directory.cachedTrip($0)?.name }
        return [
            "id": .string(chat.id), "kind": .string(chat.kind.rawValue), "title": title.map(JSON.string) ?? .null,
            "trip": chat.trip.map(JSON.string) ?? .null, "channel": .string(ChatService.channel(of: chat.id)),
            "members": .array(members.sorted().map { ["user": .string($0), "name": .string(directory.name(of: $0))] }),
        ]
    }

    /// `chat.send`'s answer: the stored message, marked `repeated` for a retry.
    static func sendAnswer(_ message: StoredChatMessage, repeated: Bool) -> JSON {
        let answer = messageJSON(message)
        return repeated ? answer.adding("repeated", true) : answer
    }

    /// A stored message as answered by RPCs: its published fields led by `offset`.
    static func messageJSON(_ message: StoredChatMessage) -> JSON {
        guard case let .object(members) = message.data.value else { return ["offset": .int(Int64(message.offset))] }
        return .object([("offset", .int(Int64(message.offset)))] + members)
    }
}

/// `chat.create`: `{members, title?}`.
struct ChatCreation: RequestContract {
    let members: [String]
    let title: String?
    init(_ fields: RequestFields) throws(HubError) {
        members = try fields.noting("the other members, friends or trip-mates").stringArray(
            "members", maxCount: ChatService.maxGroupMembers, maxLength: 64)
        title = try fields.noting("a group chat's title").optionalText("title", maxLength: ChatService.maxTitleLength)
    }
}

/// `chat.send`: `{chat, text, client_message_id}`.
struct ChatMessage: RequestContract {
    let chat: String
    let text: String
    let clientMessageID: String
    init(_ fields: RequestFields) throws(HubError) {
        chat = try fields.string("chat", maxLength: 80)
        text = try fields.text("text", maxLength: ChatService.maxTextLength)
        clientMessageID = try fields.noting("the sender's id of the message; a retry sends the same").string(
            "client_message_id", maxLength: ChatService.maxClientMessageIDLength)
    }
}

/// `chat.read`: `{chat, offset}`.
struct ReadMarker: RequestContract {
    let chat: String
    let offset: UInt64
    init(_ fields: RequestFields) throws(HubError) {
        chat = try fields.string("chat", maxLength: 80)
        offset = UInt64(try fields.noting("the newest message read").integer("offset", in: 0...Int64.max))
    }
}

/// `chat.history`: `{chat, before?, limit?}`.
struct HistoryPage: RequestContract {
    let chat: String
    let before: UInt64?
    let limit: Int
    init(_ fields: RequestFields) throws(HubError) {
        chat = try fields.string("chat", maxLength: 80)
        before = try fields.noting("an offset; the newest messages when absent").optionalInteger("before", in: 1...Int64.max).map(UInt64.init)
        limit = Int(try fields.integer("limit", in: 1...Int64(ChatService.maxHistoryPage), default: Int64(ChatService.defaultHistoryPage)))
    }
}
