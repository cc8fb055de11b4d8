import GondolaDomain
import GondolaHub
import GondolaProtocol
import GondolaRuntime
import NIOPosix
import Synchronization

/// Stores and publishes chat messages in batches (group commit). Sends wait in a
/// queue (`GroupCommit`); one writer at a time takes everything waiting (at most `maxBatch`) and
/// writes it in one transaction, answering repeats of a recent
/// `client_message_id` (`RecentChatSends`) with their stored copy; then it answers
/// the senders, delivers each new message in order and resumes the sending tasks. A
/// send is answered only after its message is committed. In a cluster the
/// repository publishes the messages on the bus as it commits, and every node
/// (this one included) delivers them from there.
///
/// The writer is one task at a time, on a thread of its own (`writerThread`): the tasks
/// serving connections wait for it without holding a thread, the SQLite writer is never
/// contended, and a commit that waits on the disk holds none of the cooperative pool's threads.
final class ChatWriter: Sendable {
    typealias Outcome = Result<(message: StoredChatMessage, repeated: Bool), HubError>

    /// A send waiting for the writer.
    struct Request: Sendable {
        let chat: String
        let message: ChatMessageData
        /// Hears the stored message on the writer's task as soon as it is committed.
        let stored: @Sendable (StoredChatMessage, _ repeated: Bool) -> Void

        var key: ChatMessageKey { ChatMessageKey(chat: chat, from: message.from, clientMessageID: message.clientMessageID) }
    }

    /// Most sends written in one transaction.
    static let maxBatch = 512

    /// The thread every chat writer of the process runs on.
    private static let writerThread = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let commits: GroupCommit<Request, Outcome>

    /// A writer that remembers the sends stored in `chats` within `RecentChatSends`' limits before now.
    init(node: Node, repository: any ChatRepository, streams: ChatStreamStore, chats: [String]) async throws {
        let recentLimits = RecentChatSends.Limits()
        let now = unixMilliseconds()
        let stored = try await repository.recentSends(in: chats, since: now - recentLimits.windowMilliseconds, limit: recentLimits.maxEntries)
        let batches = ChatBatches(
            node: node, repository: repository, streams: streams,
            recent: RecentChatSends(limits: recentLimits, entries: stored, now: now))
        commits = GroupCommit(maxBatch: Self.maxBatch, executor: EventLoopTaskExecutor(Self.writerThread.next())) { await batches.write($0) }
    }

    /// Stores and publishes `message` in `chat`; a repeat answers the stored message.
    /// `stored` hears the outcome on the writer's task right after the commit, before
    /// the message is delivered and before this returns.
    func send(
        _ message: ChatMessageData, to chat: String,
        stored: @escaping @Sendable (StoredChatMessage, _ repeated: Bool) -> Void
    ) async -> Outcome {
        await commits.commit(Request(chat: chat, message: message, stored: stored))
    }
}

/// What the chat writer does with one batch: one transaction, then the senders' answers
/// and the deliveries.
private final class ChatBatches: Sendable {
    let node: Node
    let repository: any ChatRepository
    let streams: ChatStreamStore
    /// Sends of the last minutes, to recognise retries; changed only by the writer.
    private let recent: Mutex<RecentChatSends>

    init(node: Node, repository: any ChatRepository, streams: ChatStreamStore, recent: RecentChatSends) {
        self.node = node
        self.repository = repository
        self.streams = streams
        self.recent = Mutex(recent)
    }

    /// Writes `batch` and gives each request's outcome, in order.
    func write(_ batch: [ChatWriter.Request]) async -> [ChatWriter.Outcome] {
        // A request repeating an earlier one of the batch is answered with that one's outcome.
        var distinct: [ChatWriter.Request] = []
        var distinctIndex: [ChatMessageKey: Int] = [:]
        var repeats: [(request: ChatWriter.Request, of: Int)] = []
        var sources: [(index: Int, isRepeat: Bool)] = []
        for request in batch {
            if let earlier = distinctIndex[request.key] {
                repeats.append((request, earlier))
                sources.append((earlier, true))
            } else {
                distinctIndex[request.key] = distinct.count
                sources.append((distinct.count, false))
                distinct.append(request)
            }
        }
        let messages = distinct.map { (chat: $0.chat, message: $0.message, data: RawJSON($0.message.json)) }
        let results: [ChatAppend]
        do {
            results = try await repository.append(messages, storedOffset: { key in recent.withLock { $0.offset(of: key) } }) { chat, top in
                if !repository.publishesOnCommit { streams.holdBack(chat, at: top) }
            }
        } catch {
            return batch.map { _ in .failure(.internalError("database write failed: \(error)")) }
        }
        var answers: [(message: StoredChatMessage, repeated: Bool)] = []
        answers.reserveCapacity(results.count)
        let now = unixMilliseconds()
        recent.withLock { recent in
            for (request, (message, result)) in zip(distinct, zip(messages, results)) {
                switch result {
                case let .appended(position):
                    answers.append((StoredChatMessage(offset: position.offset, ts: message.message.ts, data: message.data), false))
                    recent.remember(.init(key: request.key, offset: position.offset, ts: message.message.ts), now: now)
                case let .stored(stored):
                    answers.append((stored, true))
                }
            }
        }
        // Senders first: their replies do not wait for the deliveries.
        for (request, answer) in zip(distinct, answers) { request.stored(answer.message, answer.repeated) }
        for (request, earlier) in repeats { request.stored(answers[earlier].message, true) }
        for (message, result) in zip(messages, results) where !repository.publishesOnCommit {
            guard case let .appended(position) = result else { continue }
            node.deliver(
                channel: ChatService.channel(of: message.chat), publication: Publication(offset: position.offset, data: Payload(message.data))
            ) {
                streams.markDelivered(message.chat, position.offset)
            }
        }
        return sources.map { source in .success(source.isRepeat ? (answers[source.index].message, true) : answers[source.index]) }
    }
}
