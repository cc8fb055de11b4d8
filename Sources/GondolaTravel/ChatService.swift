import GondolaDomain
import GondolaHub
import GondolaProtocol
import Synchronization

/// Chats between users: one direct chat per pair, group chats among friends or
/// trip-mates, and one chat per trip for its members.
///
/// A message is written to the database (as the next offset of the chat's stream) before
/// `chat.send` answers, then published on `chat:<id>` (see `ChatWriter`, which
/// commits sends in batches). Sends are idempotent per sender and
/// `client_message_id`: a retry within `RecentChatSends`' limits answers the stored
/// message's offset and publishes nothing. Chat metadata is kept in memory and
/// written through (in a cluster, new chats are replicated to the other nodes);
/// messages are read from the database.
public final class ChatService: Sendable {
    static let maxTextLength = 4000
    static let maxClientMessageIDLength = 64
    static let maxTitleLength = 100
    static let maxGroupMembers = 100
    static let defaultHistoryPage = 50
    static let maxHistoryPage = 100

    private struct Chats {
        var byID: [String: Chat] = [:]
        /// Direct chats by their pair key.
        var direct: [String: String] = [:]
        /// Group and direct chats of each user.
        var byUser: [String: Set<String>] = [:]

        mutating func add(_ chat: Chat) {
            byID[chat.id] = chat
            if chat.kind == .direct { direct[ChatService.pairKey(chat.members)] = chat.id }
            for member in chat.members { byUser[member, default: []].insert(chat.id) }
        }
    }

    let node: Node
    let directory: Directory
    let repository: any ChatRepository
    let notices: NoticeBoard
    private let chats: Mutex<Chats>
    /// The streams of `chat:` channels and the writer that fills them.
    let streams: ChatStreamStore
    let writer: ChatWriter

    init(node: Node, directory: Directory, repository: any ChatRepository, notices: NoticeBoard = NoticeBoard()) async throws {
        self.node = node
        self.notices = notices
        self.directory = directory
        self.repository = repository
        let chats = try await Self.load(repository)
        self.chats = Mutex(chats)
        streams = ChatStreamStore(repository: repository)
        writer = try await ChatWriter(node: node, repository: repository, streams: streams, chats: Array(chats.byID.keys))
    }

    private static func load(_ repository: any ChatRepository) async throws -> Chats {
        var chats = Chats()
        for chat in try await repository.loadChats() { chats.add(chat) }
        return chats
    }

    /// The topic of new chats on the cluster's bus.
    static let replicaTopic = "travel.chat"

    /// Reads every chat again (a cluster node that may have missed new chats).
    func reload() async throws {
        let fresh = try await Self.load(repository)
        chats.withLock { $0 = fresh }
    }

    /// Adds a chat another node created.
    func apply(replica chat: Chat) {
        chats.withLock { $0.add(chat) }
    }

    static func pairKey(_ users: Set<String>) -> String { users.sorted().joined(separator: " ") }

    static func channel(of chat: String) -> String { "chat:\(chat)" }

    static func tripChatID(_ trip: String) -> String { "trip-\(trip)" }

    // MARK: Chats

    /// The chat with `id`, creating a trip's chat on first use. A chat this node has not
    /// heard of (another node of a cluster created it a moment ago) is read from the database.
    func chat(_ id: String) async throws(HubError) -> Chat? {
        if let chat = chats.withLock({ $0.byID[id] }) { return chat }
        if let stored = try await databaseRead({ try await repository.chat(id) }) {
            chats.withLock { $0.add(stored) }
            return stored
        }
        guard id.hasPrefix("trip-"), let trip = try await directory.trip(String(id.dropFirst("trip-".count))) else { return nil }
        return try await ensureTripChat(trip.id)
    }

    /// Creates the chat of `trip` when it has none yet.
    @discardableResult
    func ensureTripChat(_ trip: String) async throws(HubError) -> Chat {
        let id = Self.tripChatID(trip)
        if let chat = chats.withLock({ $0.byID[id] }) { return chat }
        // Creating a chat that exists answers the stored one, so two callers at once agree.
        let chat = Chat(id: id, kind: .trip, title: nil, trip: trip, members: [], createdAt: unixMilliseconds())
        let stored = try await databaseWrite { try await repository.create(chat, pairKey: nil, createdBy: nil) }
        chats.withLock { $0.add(stored) }
        return stored
    }

    func isMember(_ user: String, of chat: Chat) async throws(HubError) -> Bool {
        switch chat.kind {
        case .trip:
            guard let trip = chat.trip else { return false }
            return try await directory.role(of: user, in: trip) != nil
        case .direct, .group: return chat.members.contains(user)
        }
    }

    /// The chat if `user` is a member; 103 otherwise (also for a chat that does not exist).
    func memberChat(_ id: String, user: String) async throws(HubError) -> Chat {
        guard let chat = try await chat(id), try await isMember(user, of: chat) else { throw .permissionDenied("not a member of chat \(id)") }
        return chat
    }

    /// Opens the direct chat with one other user (the existing one when there is one)
    /// or creates a group chat; every other member must be a friend or trip-mate.
    func create(by user: String, members requested: [String], title: String?) async throws(HubError) -> Chat {
        var others: [String] = []
        for (index, member) in requested.enumerated() where member != user && !others.contains(member) {
            guard UserID.isValid(member) else { throw .badRequest("members[\(index)] is not a valid user id") }
            guard try await directory.friendSource(user, member) != nil else {
                throw .permissionDenied("members[\(index)]: \(member) is not a friend or trip-mate")
            }
            others.append(member)
        }
        guard !others.isEmpty else { throw .badRequest("members must name at least one other user") }
        try await directory.ensureKnown(user)
        let members = Set(others + [user])
        let kind: ChatKind = others.count == 1 && title == nil ? .direct : .group
        let pairKey = kind == .direct ? Self.pairKey(members) : nil
        let known = chats.withLock { chats in pairKey.flatMap { chats.direct[$0] }.flatMap { chats.byID[$0] } }
        if let known { return known }
        // A direct chat of the same pair created meanwhile is the one the database answers.
        let chat = Chat(
            id: RandomID.make(kind == .direct ? "d" : "g"), kind: kind, title: title, trip: nil, members: members,
            createdAt: unixMilliseconds())
        let stored = try await databaseWrite { try await repository.create(chat, pairKey: pairKey, createdBy: user) }
        chats.withLock { $0.add(stored) }
        if stored.id == chat.id { node.replicate(topic: Self.replicaTopic, ChatReplica(chat: stored)) }
        return stored
    }

    /// The chats `user` is in: direct and group chats and the chats of their trips.
    func chats(of user: String) async throws(HubError) -> [Chat] {
        try await directory.refresh(users: [user])
        var result = chats.withLock { chats in (chats.byUser[user] ?? []).compactMap { chats.byID[$0] } }
        for (trip, _) in directory.trips(of: user) { result.append(try await ensureTripChat(trip.id)) }
        return result
    }

    // MARK: Messages

    /// Stores and publishes a message; a repeated `clientMessageID` answers the stored
    /// one. `stored` hears the outcome as soon as it is committed (see `ChatWriter`).
    func send(
        by user: String, to id: String, text: String, clientMessageID: String,
        stored: @escaping @Sendable (StoredChatMessage, _ repeated: Bool) -> Void
    ) async throws(HubError) -> (message: StoredChatMessage, repeated: Bool) {
        let chat = try await memberChat(id, user: user)
        let message = ChatMessageData(
            id: RandomID.make("m"), from: user, name: directory.name(of: user), text: text,
            ts: unixMilliseconds(), clientMessageID: clientMessageID)
        let sent = try await writer.send(message, to: chat.id, stored: stored).get()
        if !sent.repeated { notify(about: message, in: chat) }
        return sent
    }

    /// Posts a stored message for the phones of the chat's other members; a chat's
    /// notifications collapse into one per chat with a count.
    private func notify(about message: ChatMessageData, in chat: Chat) {
        let members = chat.kind == .trip ? chat.trip.map { Set(directory.members(of: $0).keys) } ?? [] : chat.members
        let others = members.subtracting([message.from]).sorted()
        guard !others.isEmpty else { return }
        var values = ["sender": message.name, "text": message.text]
        if let title = chat.title { values["chat"] = title }
        notices.post(
            Notice(
                audience: .users(others), channel: Self.channel(of: chat.id), category: .chat, text: "chat.message", values: values,
                link: ["screen": "chat", "chat": chat.id], thread: "chat:\(chat.id)", at: message.ts))
    }

    /// Messages older than `before` (all when nil), newest `limit` of them in
    /// ascending order, and whether older ones remain.
    func history(of id: String, user: String, before: UInt64?, limit: Int) async throws(HubError) -> (messages: [StoredChatMessage], more: Bool) {
        let chat = try await memberChat(id, user: user)
        let upper = before.map { $0 == 0 ? 0 : $0 - 1 } ?? UInt64(Int64.max)
        guard upper >= 1 else { return ([], false) }
        let page = try await databaseRead { try await repository.messages(of: chat.id, offsets: 1...upper, limit: limit + 1, newestFirst: true) }
        return (Array(page.prefix(limit).reversed()), page.count > limit)
    }

    /// Moves the user's read marker to `offset` (at most the newest message); answers the marker.
    func markRead(_ id: String, user: String, offset: UInt64) async throws(HubError) -> UInt64 {
        let chat = try await memberChat(id, user: user)
        let top = try await databaseRead { try await repository.position(of: chat.id)?.offset } ?? 0
        guard offset <= top else { throw .badRequest("offset: \(offset) is beyond the newest message \(top)") }
        return try await databaseWrite { try await repository.markRead(chat: chat.id, user: user, offset: offset) }
    }

    func summaries(of chats: [Chat], for user: String) async throws(HubError) -> [String: (last: StoredChatMessage?, unread: Int, read: UInt64)] {
        try await databaseRead { try await repository.summaries(of: chats.map(\.id), for: user) }
    }
}

/// `travel.chat`: a chat one node created, as the others add it to the chats in memory.
struct ChatReplica: ReplicaPayload {
    let chat: Chat

    init(chat: Chat) { self.chat = chat }

    init(_ fields: RequestFields) throws(HubError) {
        let any = Int.max
        chat = Chat(
            id: try fields.string("id", maxLength: any), kind: try fields.choice("kind", ChatKind.self),
            title: try fields.optionalString("title", maxLength: any, allowEmpty: true),
            trip: try fields.noting("the trip of a trip chat").optionalString("trip", maxLength: any),
            members: Set(try fields.stringArray("members", maxCount: any, maxLength: any)),
            createdAt: try fields.noting("Unix ms").integer("created", in: .min ... .max))
    }

    var json: JSON {
        [
            "id": .string(chat.id), "kind": .string(chat.kind.rawValue), "title": chat.title.map(JSON.string) ?? .null,
            "trip": chat.trip.map(JSON.string) ?? .null, "members": .array(chat.members.sorted().map(JSON.string)), "created": .int(chat.createdAt),
        ]
    }
}
