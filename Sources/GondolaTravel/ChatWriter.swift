import Dispatch
import GondolaHub
import GondolaProtocol
import Synchronization

/// Stores and publishes chat messages in batches (group commit). Sends wait in a
/// queue; one writer at a time takes everything waiting (at most `maxBatch`),
/// answers repeats of a stored `client_message_id` from the database, writes the
/// rest in one SQLite transaction, then delivers each message in order and answers
/// its sender. A send is answered only after its message is committed.
///
/// The writer runs on its own dispatch queue, so the tasks serving connections
/// wait for it without holding a thread, and the SQLite writer is never contended.
final class ChatWriter: Sendable {
    typealias Outcome = Result<(message: StoredChatMessage, repeated: Bool), HubError>

    /// A send waiting for the writer.
    struct Request: Sendable {
        let chat: String
        let message: ChatMessageData
        let done: CheckedContinuation<Outcome, Never>

        var key: ChatMessageKey { ChatMessageKey(chat: chat, from: message.from, clientMessageID: message.clientMessageID) }
    }

    /// Most sends written in one transaction.
    static let maxBatch = 512

    let node: Node
    let repository: ChatRepository
    let streams: ChatStreamStore
    private let queue = DispatchQueue(label: "gondola.chat.writer")
    private let waiting = Mutex<(requests: [Request], writing: Bool)>(([], false))

    init(node: Node, repository: ChatRepository, streams: ChatStreamStore) {
        self.node = node
        self.repository = repository
        self.streams = streams
    }

    /// Stores and publishes `message` in `chat`; a repeat answers the stored message.
    func send(_ message: ChatMessageData, to chat: String) async -> Outcome {
        await withCheckedContinuation { continuation in
            let start = waiting.withLock { waiting -> Bool in
                waiting.requests.append(Request(chat: chat, message: message, done: continuation))
                guard !waiting.writing else { return false }
                waiting.writing = true
                return true
            }
            if start { queue.async { self.drain() } }
        }
    }

    private func drain() {
        while true {
            let batch = waiting.withLock { waiting -> [Request] in
                let batch = Array(waiting.requests.prefix(Self.maxBatch))
                waiting.requests.removeFirst(batch.count)
                if batch.isEmpty { waiting.writing = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            write(batch)
        }
    }

    private func write(_ batch: [Request]) {
        let stored: [ChatMessageKey: StoredChatMessage]
        do {
            stored = try repository.messages(sentAs: batch.map(\.key))
        } catch {
            return fail(batch, .internalError("database read failed: \(error)"))
        }
        // Each request is a repeat of a stored message, of an earlier request in the batch, or new.
        var fresh: [Request] = []
        var freshIndex: [ChatMessageKey: Int] = [:]
        var repeats: [(request: Request, of: Int)] = []
        for request in batch {
            if let message = stored[request.key] {
                request.done.resume(returning: .success((message, true)))
            } else if let earlier = freshIndex[request.key] {
                repeats.append((request, earlier))
            } else {
                freshIndex[request.key] = fresh.count
                fresh.append(request)
            }
        }
        guard !fresh.isEmpty else { return }
        let messages = fresh.map { (chat: $0.chat, message: $0.message, data: RawJSON($0.message.json)) }
        let positions: [StreamPosition]
        do {
            positions = try repository.append(messages) { chat, top in streams.holdBack(chat, at: top) }
        } catch {
            return fail(fresh + repeats.map(\.request), .internalError("database write failed: \(error)"))
        }
        var answers: [StoredChatMessage] = []
        for (message, position) in zip(messages, positions) {
            node.deliver(channel: ChatService.channel(of: message.chat), publication: Publication(offset: position.offset, data: message.data)) {
                streams.markDelivered(message.chat, position.offset)
            }
            answers.append(StoredChatMessage(offset: position.offset, ts: message.message.ts, data: message.data))
        }
        for (request, answer) in zip(fresh, answers) { request.done.resume(returning: .success((answer, false))) }
        for (request, earlier) in repeats { request.done.resume(returning: .success((answers[earlier], true))) }
    }

    private func fail(_ requests: [Request], _ error: HubError) {
        for request in requests { request.done.resume(returning: .failure(error)) }
    }
}
