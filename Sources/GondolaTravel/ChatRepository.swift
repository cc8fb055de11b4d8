import Foundation
import GRDB
import GondolaHub
import GondolaProtocol
import GondolaStore

/// What kind of conversation a chat is.
public enum ChatKind: String, Sendable, CaseIterable {
    /// Two users; one chat per pair, whoever opens it first.
    case direct
    /// Several friends or trip-mates, with a title.
    case group
    /// Every member of a trip; created with the trip.
    case trip
}

/// A chat's identity and who is in it. A trip chat's members are the trip's, so
/// `members` is empty for it.
public struct Chat: Sendable, Equatable {
    public var id: String
    public var kind: ChatKind
    public var title: String?
    public var trip: String?
    public var members: Set<String>
    public var createdAt: Int64
}

/// A stored chat message: its place in the chat's stream and the bytes published for it.
struct StoredChatMessage: Sendable {
    let offset: UInt64
    let ts: Int64
    let data: RawJSON
}

/// Where chats live: chats and their members with read markers, and every message.
/// The messages are the chat's stream (see `ChatStreamStore`), so a message
/// acknowledged by `chat.send` is stored before anyone sees it.
protocol ChatRepository: Sendable {
    /// Whether `append` publishes the messages itself as it commits (on a cluster's
    /// bus); otherwise the chat writer delivers them after the commit.
    var publishesOnCommit: Bool { get }
    func loadChats() async throws -> [Chat]
    /// Stores a new chat with its members and a fresh stream epoch, and answers it;
    /// when a chat with its id or `pairKey` exists (created at the same time on
    /// another node) that one is answered and nothing is written.
    func create(_ chat: Chat, pairKey: String?, createdBy: String?) async throws -> Chat
    /// The stored chat with `id` and its members; nil when there is none.
    func chat(_ id: String) async throws -> Chat?
    /// Appends messages, each as its chat's next offset, in one transaction (a group
    /// commit); the results come in the order of `messages`. A message whose sender
    /// and client id are already stored in its chat (a retry) is not written again:
    /// its stored copy is answered. `storedOffset` names such messages that the
    /// caller remembers. `beforeCommit` hears the top of each chat that gets a
    /// message, before the batch, inside the transaction. The keys in one call must
    /// differ. Fails as a whole.
    func append(
        _ messages: [(chat: String, message: ChatMessageData, data: RawJSON)],
        storedOffset: (ChatMessageKey) -> UInt64?,
        beforeCommit: (_ chat: String, _ top: UInt64) -> Void
    ) async throws -> [ChatAppend]
    /// The sends stored in `chats` at or after `since` (unix ms), at most the newest `limit`, oldest first.
    func recentSends(in chats: [String], since: Int64, limit: Int) async throws -> [RecentChatSends.Entry]
    /// The stream's top offset and epoch; nil for an unknown chat.
    func position(of chat: String) async throws -> StreamPosition?
    /// Messages with an offset in `range`, oldest first or newest first, at most `limit`.
    func messages(of chat: String, offsets range: ClosedRange<UInt64>, limit: Int, newestFirst: Bool) async throws -> [StoredChatMessage]
    /// For each chat: the newest message and how many messages from others follow the user's read marker.
    func summaries(of chats: [String], for user: String) async throws -> [String: (last: StoredChatMessage?, unread: Int, read: UInt64)]
    /// Moves the user's read marker forward to `offset` (never back); answers the marker.
    func markRead(chat: String, user: String, offset: UInt64) async throws -> UInt64
}

/// The chat tables in SQLite. A repeated send is recognised only through
/// `storedOffset` (the writer's memory, `RecentChatSends`): an index on the client
/// id put a random B-tree leaf in every commit.
struct SQLiteChatRepository: ChatRepository {
    let database: GondolaDatabase
    var publishesOnCommit: Bool { false }

    func loadChats() throws -> [Chat] {
        try database.pool.read { db in
            var chats: [String: Chat] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT id, kind, title, trip_id, created_at_ms FROM chat") {
                let id: String = row["id"]
                chats[id] = Chat(
                    id: id, kind: ChatKind(rawValue: row["kind"]) ?? .group, title: row["title"], trip: row["trip_id"],
                    members: [], createdAt: row["created_at_ms"])
            }
            for row in try Row.fetchAll(db, sql: "SELECT chat_id, user_id FROM chat_member JOIN chat ON chat.id = chat_id WHERE chat.kind != 'trip'")
            {
                chats[row["chat_id"] as String]?.members.insert(row["user_id"])
            }
            return Array(chats.values)
        }
    }

    func create(_ chat: Chat, pairKey: String?, createdBy: String?) throws -> Chat {
        try database.pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO chat (id, kind, title, trip_id, pair_key, epoch, created_by, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT DO NOTHING
                    """,
                arguments: [chat.id, chat.kind.rawValue, chat.title, chat.trip, pairKey, Epoch.make(), createdBy, chat.createdAt])
            guard db.changesCount > 0 else {
                let existing = try String.fetchOne(db, sql: "SELECT id FROM chat WHERE id = ? OR pair_key = ?", arguments: [chat.id, pairKey])
                guard let existing, let stored = try Self.chat(existing, in: db) else { throw ChatStoreError.unknownChat(chat.id) }
                return stored
            }
            for member in chat.members {
                try db.execute(sql: "INSERT INTO chat_member (chat_id, user_id) VALUES (?, ?)", arguments: [chat.id, member])
            }
            return chat
        }
    }

    func chat(_ id: String) throws -> Chat? {
        try database.pool.read { db in try Self.chat(id, in: db) }
    }

    private static func chat(_ id: String, in db: Database) throws -> Chat? {
        guard let row = try Row.fetchOne(db, sql: "SELECT id, kind, title, trip_id, created_at_ms FROM chat WHERE id = ?", arguments: [id]) else {
            return nil
        }
        var chat = Chat(
            id: row["id"], kind: ChatKind(rawValue: row["kind"]) ?? .group, title: row["title"], trip: row["trip_id"], members: [],
            createdAt: row["created_at_ms"])
        if chat.kind != .trip {
            chat.members = Set(try String.fetchAll(db, sql: "SELECT user_id FROM chat_member WHERE chat_id = ?", arguments: [id]))
        }
        return chat
    }

    func append(
        _ messages: [(chat: String, message: ChatMessageData, data: RawJSON)],
        storedOffset: (ChatMessageKey) -> UInt64?,
        beforeCommit: (_ chat: String, _ top: UInt64) -> Void
    ) throws -> [ChatAppend] {
        try database.pool.write { db in
            let storedCopy = try db.cachedStatement(sql: #"SELECT "offset", ts, data FROM chat_message WHERE chat_id = ? AND "offset" = ?"#)
            let insert = try db.cachedStatement(
                sql: #"INSERT INTO chat_message (chat_id, "offset", id, from_user, client_message_id, ts, data) VALUES (?, ?, ?, ?, ?, ?, ?)"#)
            var streams: [String: (epoch: String, top: Int64)] = [:]
            var results: [ChatAppend] = []
            results.reserveCapacity(messages.count)
            for (chat, message, data) in messages {
                let key = ChatMessageKey(chat: chat, from: message.from, clientMessageID: message.clientMessageID)
                if let offset = storedOffset(key), let row = try Row.fetchOne(storedCopy, arguments: [chat, Int64(offset)]) {
                    results.append(.stored(try Self.message(row)))
                    continue
                }
                var stream: (epoch: String, top: Int64)
                if let known = streams[chat] {
                    stream = known
                } else {
                    guard let position = try Self.position(of: chat, in: db) else { throw ChatStoreError.unknownChat(chat) }
                    stream = (position.epoch, Int64(position.offset))
                    beforeCommit(chat, position.offset)
                }
                stream.top += 1
                streams[chat] = stream
                try insert.execute(arguments: [chat, stream.top, message.id, message.from, message.clientMessageID, message.ts, Data(data.bytes)])
                results.append(.appended(StreamPosition(offset: UInt64(stream.top), epoch: stream.epoch)))
            }
            return results
        }
    }

    /// The sends stored in `chats` at or after `since` (unix ms), at most the newest
    /// `limit`, oldest first. Each chat is read from its newest message back, so chats
    /// without recent messages cost one lookup.
    func recentSends(in chats: [String], since: Int64, limit: Int) throws -> [RecentChatSends.Entry] {
        try database.pool.read { db in
            let newestFirst = try db.cachedStatement(
                sql: #"SELECT from_user, client_message_id, "offset", ts FROM chat_message WHERE chat_id = ? ORDER BY "offset" DESC"#)
            var entries: [RecentChatSends.Entry] = []
            for chat in chats {
                let rows = try Row.fetchCursor(newestFirst, arguments: [chat])
                var read = 0
                while read < limit, let row = try rows.next() {
                    let ts: Int64 = row["ts"]
                    guard ts >= since else { break }
                    entries.append(
                        .init(
                            key: ChatMessageKey(chat: chat, from: row["from_user"], clientMessageID: row["client_message_id"]),
                            offset: UInt64(row["offset"] as Int64), ts: ts))
                    read += 1
                }
            }
            entries.sort { ($0.ts, $0.key.chat, $0.offset) < ($1.ts, $1.key.chat, $1.offset) }
            return Array(entries.suffix(limit))
        }
    }

    /// The stream's top offset and epoch; nil for an unknown chat.
    func position(of chat: String) throws -> StreamPosition? {
        try database.pool.read { db in try Self.position(of: chat, in: db) }
    }

    /// The chat's epoch and its newest message's offset (0 before the first): a commit
    /// writes only the message rows, no counter that every batch would rewrite.
    private static func position(of chat: String, in db: Database) throws -> StreamPosition? {
        guard let epoch = try String.fetchOne(db.cachedStatement(sql: "SELECT epoch FROM chat WHERE id = ?"), arguments: [chat]) else { return nil }
        let top =
            try Int64.fetchOne(
                db.cachedStatement(sql: #"SELECT "offset" FROM chat_message WHERE chat_id = ? ORDER BY "offset" DESC LIMIT 1"#), arguments: [chat])
            ?? 0
        return StreamPosition(offset: UInt64(top), epoch: epoch)
    }

    /// Messages with an offset in `range`, oldest first or newest first, at most `limit`.
    func messages(of chat: String, offsets range: ClosedRange<UInt64>, limit: Int, newestFirst: Bool) throws -> [StoredChatMessage] {
        try database.pool.read { db in
            try Row.fetchAll(
                db,
                sql:
                    #"SELECT "offset", ts, data FROM chat_message WHERE chat_id = ? AND "offset" BETWEEN ? AND ? ORDER BY "offset" \#(newestFirst ? "DESC" : "ASC") LIMIT ?"#,
                arguments: [chat, Int64(range.lowerBound), Int64(min(range.upperBound, UInt64(Int64.max))), limit]
            ).map(Self.message)
        }
    }

    /// For each chat: the newest message and how many messages from others follow the user's read marker.
    func summaries(of chats: [String], for user: String) throws -> [String: (last: StoredChatMessage?, unread: Int, read: UInt64)] {
        try database.pool.read { db in
            var result: [String: (last: StoredChatMessage?, unread: Int, read: UInt64)] = [:]
            for chat in chats {
                let read =
                    try Int64.fetchOne(db, sql: "SELECT read_offset FROM chat_member WHERE chat_id = ? AND user_id = ?", arguments: [chat, user]) ?? 0
                let last = try Row.fetchOne(
                    db, sql: #"SELECT "offset", ts, data FROM chat_message WHERE chat_id = ? ORDER BY "offset" DESC LIMIT 1"#, arguments: [chat]
                ).map(Self.message)
                let unread =
                    try Int.fetchOne(
                        db, sql: #"SELECT COUNT(*) FROM chat_message WHERE chat_id = ? AND "offset" > ? AND from_user != ?"#,
                        arguments: [chat, read, user]) ?? 0
                result[chat] = (last, unread, UInt64(read))
            }
            return result
        }
    }

    /// Moves the user's read marker forward to `offset` (never back); answers the marker.
    func markRead(chat: String, user: String, offset: UInt64) throws -> UInt64 {
        try database.pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO chat_member (chat_id, user_id, read_offset) VALUES (?, ?, ?)
                    ON CONFLICT(chat_id, user_id) DO UPDATE SET read_offset = MAX(read_offset, excluded.read_offset)
                    """,
                arguments: [chat, user, Int64(offset)])
            return UInt64(
                try Int64.fetchOne(db, sql: "SELECT read_offset FROM chat_member WHERE chat_id = ? AND user_id = ?", arguments: [chat, user]) ?? 0)
        }
    }

    private static func message(_ row: Row) throws -> StoredChatMessage {
        StoredChatMessage(offset: UInt64(row["offset"] as Int64), ts: row["ts"], data: try RawJSON(validating: [UInt8](row["data"] as Data)))
    }
}

/// What `ChatRepository.append` did with one message.
enum ChatAppend {
    /// Written as this position of its chat's stream.
    case appended(StreamPosition)
    /// Already stored by an earlier send with the same sender and client id.
    case stored(StoredChatMessage)
}

/// What makes a send a repeat: the same sender and client id in the same chat.
struct ChatMessageKey: Hashable, Sendable {
    let chat: String
    let from: String
    let clientMessageID: String
}

/// Failures of the chat tables that callers tell apart.
enum ChatStoreError: Error {
    case unknownChat(String)
}
