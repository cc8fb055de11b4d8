import Foundation
import GondolaHub
import GondolaPostgres
import GondolaProtocol
import PostgresNIO

/// The chat tables in PostgreSQL (cluster mode). A batch locks its chats' rows (in
/// id order, so concurrent batches cannot deadlock), numbers the messages from each
/// chat's `top_offset`, and sends them on the cluster's bus in the same transaction:
/// every node delivers a chat's messages in offset order, and only once they are
/// committed. A retry that reaches another node is recognised by the unique index
/// on the sender's client id.
struct PostgresChatRepository: ChatRepository {
    let pool: PostgresPool
    /// Where committed messages are published; nil stores without publishing (tests).
    let bus: (any TransactionalBus)?

    var publishesOnCommit: Bool { bus != nil }

    func loadChats() async throws -> [Chat] {
        try await pool.withConnection { connection in
            var chats: [String: Chat] = [:]
            for row in try await pool.run("SELECT id, kind, title, trip_id, created_at_ms FROM chat", on: connection) {
                let chat = try Self.chat(row)
                chats[chat.id] = chat
            }
            for row in try await pool.run(
                "SELECT m.chat_id, m.user_id FROM chat_member m JOIN chat c ON c.id = m.chat_id WHERE c.kind <> 'trip'", on: connection)
            {
                let (chat, user) = try row.decode((String, String).self)
                chats[chat]?.members.insert(user)
            }
            return Array(chats.values)
        }
    }

    func create(_ chat: Chat, pairKey: String?, createdBy: String?) async throws -> Chat {
        try await pool.transaction { connection in
            let inserted = try await pool.run(
                """
                INSERT INTO chat (id, kind, title, trip_id, pair_key, epoch, created_by, created_at_ms)
                VALUES (\(chat.id), \(chat.kind.rawValue), \(chat.title), \(chat.trip), \(pairKey), \(Epoch.make()), \(createdBy), \(chat.createdAt))
                ON CONFLICT DO NOTHING RETURNING id
                """, on: connection)
            guard inserted.first != nil else {
                let rows = try await pool.run(
                    """
                    SELECT id, kind, title, trip_id, created_at_ms FROM chat WHERE id = \(chat.id) OR pair_key = \(pairKey) LIMIT 1
                    """, on: connection)
                guard let row = rows.first else { throw ChatStoreError.unknownChat(chat.id) }
                return try await withMembers(try Self.chat(row), on: connection)
            }
            try await pool.run("INSERT INTO chat_member (chat_id, user_id) SELECT \(chat.id), unnest(\(Array(chat.members))::text[])", on: connection)
            return chat
        }
    }

    func append(
        _ messages: [(chat: String, message: ChatMessageData, data: RawJSON)],
        storedOffset: (ChatMessageKey) -> UInt64?,
        beforeCommit: (_ chat: String, _ top: UInt64) -> Void
    ) async throws -> [ChatAppend] {
        let chatIDs = Array(Set(messages.map(\.chat))).sorted()
        return try await pool.transaction { connection in
            var streams: [String: (epoch: String, top: Int64)] = [:]
            for row in try await pool.run(
                "SELECT id, epoch, top_offset FROM chat WHERE id = ANY(\(chatIDs)::text[]) ORDER BY id FOR UPDATE", on: connection)
            {
                let (id, epoch, top) = try row.decode((String, String, Int64).self)
                streams[id] = (epoch, top)
                beforeCommit(id, UInt64(top))
            }
            let stored = try await storedCopies(
                of: messages.map { ChatMessageKey(chat: $0.chat, from: $0.message.from, clientMessageID: $0.message.clientMessageID) },
                on: connection)
            var results: [ChatAppend] = []
            var rows = (
                chat: [String](), offset: [Int64](), id: [String](), from: [String](), client: [String](), ts: [Int64](), data: [ByteBuffer]()
            )
            var events: [ClusterEvent] = []
            for (chat, message, data) in messages {
                if let copy = stored[ChatMessageKey(chat: chat, from: message.from, clientMessageID: message.clientMessageID)] {
                    results.append(.stored(copy))
                    continue
                }
                guard var stream = streams[chat] else { throw ChatStoreError.unknownChat(chat) }
                stream.top += 1
                streams[chat] = stream
                rows.chat.append(chat)
                rows.offset.append(stream.top)
                rows.id.append(message.id)
                rows.from.append(message.from)
                rows.client.append(message.clientMessageID)
                rows.ts.append(message.ts)
                rows.data.append(ByteBuffer(bytes: data.bytes))
                results.append(.appended(StreamPosition(offset: UInt64(stream.top), epoch: stream.epoch)))
                events.append(.publication(channel: ChatService.channel(of: chat), Publication(offset: UInt64(stream.top), data: Payload(data))))
            }
            guard !rows.chat.isEmpty else { return results }
            try await pool.run(
                """
                INSERT INTO chat_message (chat_id, "offset", id, from_user, client_message_id, ts, data)
                SELECT * FROM unnest(\(rows.chat)::text[], \(rows.offset)::int8[], \(rows.id)::text[], \(rows.from)::text[],
                                     \(rows.client)::text[], \(rows.ts)::int8[], \(rows.data)::bytea[])
                """, on: connection)
            let tops = streams.filter { rows.chat.contains($0.key) }
            try await pool.run(
                """
                UPDATE chat SET top_offset = t.top FROM unnest(\(Array(tops.keys))::text[], \(tops.values.map(\.top))::int8[]) AS t(id, top)
                WHERE chat.id = t.id
                """, on: connection)
            try await bus?.notify(events, on: connection)
            return results
        }
    }

    /// The stored messages among `keys` (sends already committed, here or on another node).
    private func storedCopies(of keys: [ChatMessageKey], on connection: PostgresConnection) async throws -> [ChatMessageKey: StoredChatMessage] {
        var copies: [ChatMessageKey: StoredChatMessage] = [:]
        let rows = try await pool.run(
            """
            SELECT m.chat_id, m.from_user, m.client_message_id, m."offset", m.ts, m.data FROM chat_message m
            JOIN unnest(\(keys.map(\.chat))::text[], \(keys.map(\.from))::text[], \(keys.map(\.clientMessageID))::text[])
                AS k(chat_id, from_user, client_message_id)
            ON m.chat_id = k.chat_id AND m.from_user = k.from_user AND m.client_message_id = k.client_message_id
            """, on: connection)
        for row in rows {
            let (chat, from, client, offset, ts, data) = try row.decode((String, String, String, Int64, Int64, ByteBuffer).self)
            copies[ChatMessageKey(chat: chat, from: from, clientMessageID: client)] =
                StoredChatMessage(offset: UInt64(offset), ts: ts, data: try RawJSON(validating: Array(buffer: data)))
        }
        return copies
    }

    func recentSends(in chats: [String], since: Int64, limit: Int) async throws -> [RecentChatSends.Entry] {
        let rows = try await pool.query(
            """
            SELECT chat_id, from_user, client_message_id, "offset", ts FROM chat_message
            WHERE chat_id = ANY(\(chats)::text[]) AND ts >= \(since) ORDER BY ts DESC, chat_id DESC, "offset" DESC LIMIT \(Int64(limit))
            """)
        return try rows.map { row in
            let (chat, from, client, offset, ts) = try row.decode((String, String, String, Int64, Int64).self)
            return RecentChatSends.Entry(key: ChatMessageKey(chat: chat, from: from, clientMessageID: client), offset: UInt64(offset), ts: ts)
        }.reversed()
    }

    func position(of chat: String) async throws -> StreamPosition? {
        try await pool.query("SELECT epoch, top_offset FROM chat WHERE id = \(chat)").first.map { row in
            let (epoch, top) = try row.decode((String, Int64).self)
            return StreamPosition(offset: UInt64(top), epoch: epoch)
        }
    }

    func messages(of chat: String, offsets range: ClosedRange<UInt64>, limit: Int, newestFirst: Bool) async throws -> [StoredChatMessage] {
        try await pool.query(
            """
            SELECT "offset", ts, data FROM chat_message
            WHERE chat_id = \(chat) AND "offset" BETWEEN \(Int64(range.lowerBound)) AND \(Int64(min(range.upperBound, UInt64(Int64.max))))
            ORDER BY "offset" \(unescaped: newestFirst ? "DESC" : "ASC") LIMIT \(Int64(limit))
            """
        ).map(Self.message)
    }

    func summaries(of chats: [String], for user: String) async throws -> [String: (last: StoredChatMessage?, unread: Int, read: UInt64)] {
        var result: [String: (last: StoredChatMessage?, unread: Int, read: UInt64)] = [:]
        for chat in chats { result[chat] = (nil, 0, 0) }
        let rows = try await pool.query(
            """
            SELECT c.id, COALESCE(m.read_offset, 0), last."offset", last.ts, last.data,
                   (SELECT count(*) FROM chat_message u WHERE u.chat_id = c.id AND u."offset" > COALESCE(m.read_offset, 0) AND u.from_user <> \(user))
            FROM chat c
            LEFT JOIN chat_member m ON m.chat_id = c.id AND m.user_id = \(user)
            LEFT JOIN LATERAL (SELECT "offset", ts, data FROM chat_message WHERE chat_id = c.id ORDER BY "offset" DESC LIMIT 1) last ON true
            WHERE c.id = ANY(\(chats)::text[])
            """)
        for row in rows {
            let (chat, read, offset, ts, data, unread) = try row.decode((String, Int64, Int64?, Int64?, ByteBuffer?, Int64).self)
            var last: StoredChatMessage?
            if let offset, let ts, let data {
                last = StoredChatMessage(offset: UInt64(offset), ts: ts, data: try RawJSON(validating: Array(buffer: data)))
            }
            result[chat] = (last, Int(unread), UInt64(read))
        }
        return result
    }

    func markRead(chat: String, user: String, offset: UInt64) async throws -> UInt64 {
        let rows = try await pool.query(
            """
            INSERT INTO chat_member (chat_id, user_id, read_offset) VALUES (\(chat), \(user), \(Int64(offset)))
            ON CONFLICT (chat_id, user_id) DO UPDATE SET read_offset = GREATEST(chat_member.read_offset, excluded.read_offset)
            RETURNING read_offset
            """)
        return UInt64(try rows.first?.decode(Int64.self) ?? 0)
    }

    func chat(_ id: String) async throws -> Chat? {
        try await pool.withConnection { connection in
            guard let row = try await pool.run("SELECT id, kind, title, trip_id, created_at_ms FROM chat WHERE id = \(id)", on: connection).first
            else {
                return nil
            }
            return try await withMembers(try Self.chat(row), on: connection)
        }
    }

    /// `chat` with its members read (a trip's chat has none of its own: they are the trip's).
    private func withMembers(_ chat: Chat, on connection: PostgresConnection) async throws -> Chat {
        guard chat.kind != .trip else { return chat }
        var chat = chat
        chat.members = Set(
            try await pool.run("SELECT user_id FROM chat_member WHERE chat_id = \(chat.id)", on: connection).map { try $0.decode(String.self) })
        return chat
    }

    private static func chat(_ row: PostgresRow) throws -> Chat {
        let (id, kind, title, trip, created) = try row.decode((String, String, String?, String?, Int64).self)
        return Chat(id: id, kind: ChatKind(rawValue: kind) ?? .group, title: title, trip: trip, members: [], createdAt: created)
    }

    private static func message(_ row: PostgresRow) throws -> StoredChatMessage {
        let (offset, ts, data) = try row.decode((Int64, Int64, ByteBuffer).self)
        return StoredChatMessage(offset: UInt64(offset), ts: ts, data: try RawJSON(validating: Array(buffer: data)))
    }
}
