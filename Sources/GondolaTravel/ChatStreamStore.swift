import Foundation
import GondolaHub
import GondolaProtocol
import GRDB

/// The streams of `chat:<id>` channels, kept in the chat's own table: a chat's
/// stream is its messages, with the chat's epoch, so recovery after a reconnect or
/// a restart and `chat.history` read the same rows, and nothing is trimmed (the
/// namespace's history size and TTL do not apply; recovery is bounded by the hub's
/// `max_history_per_request`).
///
/// Appends come from `Node.publish` under the channel's lock, which keeps offsets
/// and delivery in the same order. The publication's data must be a chat message
/// (`ChatMessageData`): `chat.send` writes one; a server API `publish` of anything
/// else is refused with 107.
final class ChatStreamStore: HistoryStore {
    let repository: ChatRepository

    init(repository: ChatRepository) {
        self.repository = repository
    }

    func append(_ publication: Publication, to channel: String, options: NamespaceOptions, now: Date) throws -> (Publication, StreamPosition) {
        let chat = ChatChannel.chatID(of: channel)
        let message = try ChatMessageData(publication.data)
        let position: StreamPosition
        do {
            position = try repository.append(chat: chat, id: message.id, from: message.from, clientMessageID: message.clientMessageID,
                                             ts: message.ts, data: publication.data)
        } catch ChatStoreError.unknownChat {
            throw HubError.unknownChannel(channel)
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            throw HubError.badRequest("client_message_id: \(message.clientMessageID) was already used by \(message.from) in this chat")
        }
        var stored = publication
        stored.offset = position.offset
        return (stored, position)
    }

    func read(channel: String, after: UInt64?, limit: Int, reverse: Bool, options: NamespaceOptions, now: Date) throws -> StreamSlice {
        let chat = ChatChannel.chatID(of: channel)
        guard let position = try repository.position(of: chat) else { throw HubError.unknownChannel(channel) }
        let first = (after ?? 0) + 1
        guard limit > 0, first <= position.offset else { return StreamSlice(publications: [], position: position) }
        let messages = try repository.messages(of: chat, offsets: first...position.offset, limit: limit, newestFirst: reverse)
        return StreamSlice(publications: messages.map { Publication(offset: $0.offset, data: $0.data) }, position: position)
    }

    func removeHistory(channel: String) throws {
        throw HubError.notAvailable("a chat's messages are kept; its history cannot be removed")
    }
}

/// The fields of a message published on `chat:<id>`:
/// `{"id","from","name","text","ts","client_message_id"}`.
struct ChatMessageData: Sendable {
    let id: String
    let from: String
    let name: String
    let text: String
    let ts: Int64
    let clientMessageID: String

    init(id: String, from: String, name: String, text: String, ts: Int64, clientMessageID: String) {
        self.id = id
        self.from = from
        self.name = name
        self.text = text
        self.ts = ts
        self.clientMessageID = clientMessageID
    }

    /// Reads a published message, refusing anything that is not one (107 naming the field).
    init(_ data: RawJSON) throws(HubError) {
        let fields = try RequestFields(data.value)
        self.init(
            id: try fields.string("id", maxLength: 64), from: try fields.string("from", maxLength: 64),
            name: try fields.string("name", maxLength: 256, allowEmpty: true), text: try fields.string("text", maxLength: ChatService.maxTextLength),
            ts: try fields.integer("ts", in: 0...Int64.max), clientMessageID: try fields.string("client_message_id", maxLength: ChatService.maxClientMessageIDLength))
    }

    var json: JSON {
        [
            "id": .string(id), "from": .string(from), "name": .string(name), "text": .string(text), "ts": .int(ts),
            "client_message_id": .string(clientMessageID),
        ]
    }
}
