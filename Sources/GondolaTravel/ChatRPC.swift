import GondolaHub
import GondolaProtocol

/// The `chat.*` RPC methods: `create`, `send`, `list`, `read`, `history`.
struct ChatRPC: Sendable {
    let chats: ChatService
    let directory: Directory

    func register(in registrations: inout NodeRegistrations) {
        registrations.register("chat.create") { context, data in
            let fields = try RequestFields(data)
            let members = try fields.stringArray("members", maxCount: ChatService.maxGroupMembers, maxLength: 64)
            let title = try fields.optionalText("title", maxLength: ChatService.maxTitleLength)
            let chat = try await chats.create(by: context.user, members: members, title: title)
            return ["chat": chatJSON(chat), "channel": .string(ChatService.channel(of: chat.id))]
        }
        registrations.register("chat.send") { context, data in
            let fields = try RequestFields(data)
            let chat = try fields.string("chat", maxLength: 80)
            let text = try fields.text("text", maxLength: ChatService.maxTextLength)
            let clientMessageID = try fields.string("client_message_id", maxLength: ChatService.maxClientMessageIDLength)
            // With a waiting client the reply leaves from the writer's thread right after the
            // commit, and what is returned here is dropped: build the answer only once.
            let (message, repeated) = try await chats.send(by: context.user, to: chat, text: text, clientMessageID: clientMessageID) {
                message, repeated in
                context.answer?(Self.sendAnswer(message, repeated: repeated))
            }
            return context.answer == nil ? Self.sendAnswer(message, repeated: repeated) : .null
        }
        registrations.register("chat.list") { context, _ in
            let list = try await chats.chats(of: context.user)
            let summaries = try await chats.summaries(of: list, for: context.user)
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
        registrations.register("chat.read") { context, data in
            let fields = try RequestFields(data)
            let chat = try fields.string("chat", maxLength: 80)
            let offset = try fields.integer("offset", in: 0...Int64.max)
            return ["read_offset": .int(Int64(try await chats.markRead(chat, user: context.user, offset: UInt64(offset))))]
        }
        registrations.register("chat.history") { context, data in
            let fields = try RequestFields(data)
            let chat = try fields.string("chat", maxLength: 80)
            let before = try fields.optionalInteger("before", in: 1...Int64.max).map(UInt64.init)
            let limit = Int(try fields.optionalInteger("limit", in: 1...Int64(ChatService.maxHistoryPage)) ?? Int64(ChatService.defaultHistoryPage))
            let (messages, more) = try await chats.history(of: chat, user: context.user, before: before, limit: limit)
            return ["messages": .array(messages.map(Self.messageJSON)), "more": .bool(more)]
        }
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
