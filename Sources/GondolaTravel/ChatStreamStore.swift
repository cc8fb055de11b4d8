import Foundation
import GondolaHub
import GondolaProtocol
import Synchronization

/// The streams of `chat:<id>` channels, kept in the chat's own table: a chat's
/// stream is its messages, with the chat's epoch, so recovery after a reconnect or
/// a restart and `chat.history` read the same rows, and nothing is trimmed (the
/// namespace's history size and TTL do not apply; recovery is bounded by the hub's
/// `max_history_per_request`).
///
/// Messages are written by `ChatWriter` in batches and then delivered one by one, so
/// the store shows a stream only up to its last delivered offset: a subscriber
/// recovering while a batch is between commit and delivery gets those messages
/// live, not twice. Appends through `Node.publish` (the server API's `publish`) are
/// refused: messages go through `chat.send`.
final class ChatStreamStore: HistoryStore {
    let repository: any ChatRepository
    /// The last delivered offset of each chat written since start; other chats are whole.
    private let delivered = Mutex<[String: UInt64]>([:])

    init(repository: any ChatRepository) {
        self.repository = repository
    }

    /// Called inside a batch's transaction with a chat's top before the batch: until
    /// delivery the stream is shown up to there.
    func holdBack(_ chat: String, at top: UInt64) {
        delivered.withLock { delivered in
            if delivered[chat] == nil { delivered[chat] = top }
        }
    }

    /// Called under the channel's lock as a message is delivered.
    func markDelivered(_ chat: String, _ offset: UInt64) {
        delivered.withLock { $0[chat] = max($0[chat] ?? 0, offset) }
    }

    func append(_ publication: Publication, to channel: String, options: NamespaceOptions, now: Date) throws -> (Publication, StreamPosition) {
        throw HubError.notAvailable("messages of \(channel) are written with chat.send")
    }

    func read(channel: String, after: UInt64?, limit: Int, reverse: Bool, options: NamespaceOptions, now: Date) async throws -> StreamSlice {
        // The node resolved the name before it asked; a name that no longer parses has no stream.
        guard let chat = try? ChannelName(channel).key else { throw HubError.unknownChannel(channel) }
        guard var position = try await repository.position(of: chat) else { throw HubError.unknownChannel(channel) }
        if let shown = delivered.withLock({ $0[chat] }) { position.offset = min(position.offset, shown) }
        let first = (after ?? 0) + 1
        guard limit > 0, first <= position.offset else { return StreamSlice(publications: [], position: position) }
        let messages = try await repository.messages(of: chat, offsets: first...position.offset, limit: limit, newestFirst: reverse)
        return StreamSlice(publications: messages.map { Publication(offset: $0.offset, data: Payload($0.data)) }, position: position)
    }

    func removeHistory(channel: String) throws {
        throw HubError.notAvailable("a chat's messages are kept; its history cannot be removed")
    }
}

/// A message as published on `chat:<id>` (and stored as those bytes).
struct ChatMessageData: AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("id") { $0.id }, .string("from", "the sender") { $0.from }, .string("name", "the sender's name") { $0.name },
        .string("text") { $0.text }, .integer("ts", "Unix ms") { $0.ts },
        .string("client_message_id", "the sender's id of the message") { $0.clientMessageID },
    ]
    let id: String
    let from: String
    let name: String
    let text: String
    let ts: Int64
    let clientMessageID: String
}
