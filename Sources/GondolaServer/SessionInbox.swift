import GondolaHub
import NIOCore
import Synchronization

/// The whole messages of one WebSocket connection waiting for its session, and the task that
/// hands them over, one at a time and in order. The first message starts the task, on the
/// connection's event loop (`EventLoopTaskExecutor`), and it ends when none is left, so an idle
/// connection holds no suspended task; what the session waits for (a database, the bus) it
/// awaits, leaving the loop to other connections. Once `limit` messages wait, `isFull` holds
/// the connection's reads (`WebSocketSessionHandler.read`) until the session takes the next one;
/// meanwhile the session suspends its pong deadline (`ClientSession.holdingInput`), since the
/// silence is the server's, and a message counts as heard when it arrives, not when handled.
final class SessionInbox: Sendable {
    /// Whole messages that may wait for the session before reading stops.
    static let limit = 16

    private struct Waiting {
        var messages: [[UInt8]] = []
        var head = 0
        var working = false

        var count: Int { messages.count - head }

        /// The next message, or nil after marking the inbox idle.
        mutating func next() -> [UInt8]? {
            guard head < messages.count else {
                messages.removeAll(keepingCapacity: false)
                head = 0
                working = false
                return nil
            }
            defer { head += 1 }
            return messages[head]
        }
    }

    private let session: ClientSession
    private let channel: any Channel
    private let executor: any TaskExecutor
    private let connections: OpenConnections
    private let waiting = Mutex(Waiting())

    init(session: ClientSession, channel: any Channel, executor: any TaskExecutor, connections: OpenConnections) {
        self.session = session
        self.channel = channel
        self.executor = executor
        self.connections = connections
    }

    /// Whether `limit` messages wait.
    var isFull: Bool { waiting.withLock { $0.count >= Self.limit } }

    /// Queues a whole message for the session, starting the task that hands messages over when none
    /// runs. The session hears of it at once: a pong waiting behind a slow command still counts.
    func add(_ message: [UInt8]) {
        session.heard()
        let (start, full) = waiting.withLock { waiting -> (Bool, Bool) in
            waiting.messages.append(message)
            let full = waiting.count >= Self.limit
            guard !waiting.working else { return (false, full) }
            waiting.working = true
            return (true, full)
        }
        // Reads stop now (`WebSocketSessionHandler.read`): the client's pongs cannot be heard.
        if full { session.holdingInput(true) }
        guard start else { return }
        connections.handling(by: +1)
        Task(executorPreference: executor) { await self.handleWaitingMessages() }
    }

    private func handleWaitingMessages() async {
        defer { connections.handling(by: -1) }
        while true {
            let (message, wasFull) = waiting.withLock { waiting in
                let wasFull = waiting.count >= Self.limit
                return (waiting.next(), wasFull)
            }
            guard let message else { return }
            // A read held while the inbox was full goes on now that there is room.
            if wasFull {
                session.holdingInput(false)
                channel.read()
            }
            await session.handle(frame: message, receivedAt: nil)  // heard in `add`, as it arrived
            if session.isClosed {
                waiting.withLock { $0 = Waiting() }
                return
            }
        }
    }
}
