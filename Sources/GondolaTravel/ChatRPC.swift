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
    func chatCreate(_ context: RPCContext, _ request: ChatCreation) async throws -> ChatCreated {
        ChatCreated(chat: view(of: try await create(by: context.user, members: request.members, title: request.title)))
    }

    /// Answers `chat.send`.
    func chatSend(_ context: RPCContext, _ request: ChatMessage) async throws -> ChatMessageAnswer {
        // With a waiting client the reply leaves from the writer's thread right after the
        // commit; what is returned here is then dropped unwritten.
        let (message, repeated) = try await send(
            by: context.user, to: request.chat, text: request.text, clientMessageID: request.clientMessageID
        ) { message, repeated in
            context.answer?(ChatMessageAnswer(message: StoredMessage(message: message), repeated: repeated).json)
        }
        return ChatMessageAnswer(message: StoredMessage(message: message), repeated: repeated)
    }

    /// Answers `chat.list`.
    func chatList(_ context: RPCContext, _: NoFields) async throws -> ChatList {
        let list = try await chats(of: context.user)
        let summaries = try await summaries(of: list, for: context.user)
        let entries = list.map { chat in (chat: chat, summary: summaries[chat.id]) }
            .sorted { ($0.summary?.last?.ts ?? $0.chat.createdAt, $0.chat.id) > ($1.summary?.last?.ts ?? $1.chat.createdAt, $1.chat.id) }
        return ChatList(
            chats: entries.map { entry in
                ChatList.Entry(
                    chat: view(of: entry.chat), last: entry.summary?.last.map(StoredMessage.init), unread: entry.summary?.unread ?? 0,
                    read: entry.summary?.read ?? 0)
            })
    }

    /// Answers `chat.read`.
    func chatRead(_ context: RPCContext, _ request: ReadMarker) async throws -> ReadMarkerAnswer {
        ReadMarkerAnswer(offset: try await markRead(request.chat, user: context.user, offset: request.offset))
    }

    /// Answers `chat.history`.
    func chatHistory(_ context: RPCContext, _ request: HistoryPage) async throws -> ChatHistory {
        let (messages, more) = try await history(of: request.chat, user: context.user, before: request.before, limit: request.limit)
        return ChatHistory(messages: messages.map(StoredMessage.init), more: more)
    }

    /// How the caller sees `chat`: its title (a trip chat's is the trip's name) and its
    /// members by name (a trip chat's are the trip's members).
    func view(of chat: Chat) -> ChatView {
        let members = chat.kind == .trip ? chat.trip.map { Set(directory.members(of: $0).keys) } ?? [] : chat.members
        return ChatView(
            chat: chat, title: chat.title ?? chat.trip.flatMap { directory.cachedTrip($0)?.name },
            members: members.sorted().map { UserName(user: $0, name: directory.name(of: $0)) })
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

/// A user and their name.
struct UserName: AnswerObject {
    static let members: [AnswerMember<Self>] = [.string("user") { $0.user }, .string("name") { $0.name }]
    let user: String
    let name: String
}

/// A chat as its members see it.
struct ChatView: AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("id") { $0.chat.id }, .string("kind", "`direct`, `group` or `trip`") { $0.chat.kind.rawValue },
        .string("title", "a trip chat's is the trip's name; null for a direct chat", orNull: { $0.title }),
        .string("trip", "null outside a trip", orNull: { $0.chat.trip }), .string("channel") { ChatService.channel(of: $0.chat.id) },
        .objects("members", "a trip chat's are the trip's members") { $0.members },
    ]
    let chat: Chat
    let title: String?
    let members: [UserName]
}

/// A stored message as answered: its place in the chat's stream and what was published.
struct StoredMessage: AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .integer("offset", "its place in the chat's stream") { Int64($0.message.offset) }, .spread(ChatMessageData.self) { $0.message.data.value },
    ]
    let message: StoredChatMessage
}

/// `chat.create`'s answer.
struct ChatCreated: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [.object("chat") { $0.chat }, .string("channel") { ChatService.channel(of: $0.chat.chat.id) }]
    let chat: ChatView
}

/// `chat.send`'s answer: the stored message, marked `repeated` for a retry.
struct ChatMessageAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] =
        StoredMessage.members(in: { $0.message }) + [
            .boolean("repeated", "a retry: nothing was published", ifAny: { $0.repeated ? true : nil })
        ]
    let message: StoredMessage
    let repeated: Bool
}

/// `chat.list`'s answer.
struct ChatList: ResponseContract, AnswerObject {
    /// A chat with its newest message and the caller's read marker.
    struct Entry: AnswerObject {
        static let members: [AnswerMember<Self>] =
            ChatView.members(in: { $0.chat }) + [
                .object("last_message", "null when none", orNull: { $0.last }),
                .integer("unread", "others' messages after the read marker") { Int64($0.unread) },
                .integer("read_offset") { Int64($0.read) },
            ]
        let chat: ChatView
        let last: StoredMessage?
        let unread: Int
        let read: UInt64
    }

    static let members: [AnswerMember<Self>] = [.objects("chats", "newest activity first") { $0.chats }]
    let chats: [Entry]
}

/// `chat.read`'s answer.
struct ReadMarkerAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [.integer("read_offset") { Int64($0.offset) }]
    let offset: UInt64
}

/// `chat.history`'s answer.
struct ChatHistory: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [.objects("messages", "oldest first") { $0.messages }, .boolean("more") { $0.more }]
    let messages: [StoredMessage]
    let more: Bool
}
