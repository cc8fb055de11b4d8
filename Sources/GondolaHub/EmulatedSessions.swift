import GondolaProtocol
import Synchronization

/// This node's sessions of HTTP-streaming and SSE connections by their key, and the
/// command frames posted to each through `/emulation`: handled one frame at a time, in
/// the order they arrived, by a task that exists only while frames wait (as a WebSocket's
/// messages are). At most `maxWaitingFrames` frames wait per session; one more is refused
/// (`Delivery.full`, the endpoint's 429) and changes nothing.
final class EmulatedSessions: Sendable {
    static let maxWaitingFrames = 32

    /// What became of a posted frame.
    enum Delivery: Equatable, Sendable {
        case accepted
        case noSession
        case badRequest(String)
        case full
    }

    private struct Entry {
        let session: ClientSession
        var waiting: [[UInt8]] = []
        var working = false
    }

    private let entries = Mutex<[String: Entry]>([:])

    func add(_ session: ClientSession) {
        entries.withLock { $0[session.key] = Entry(session: session) }
    }

    func remove(_ session: ClientSession) {
        entries.withLock { _ = $0.removeValue(forKey: session.key) }
    }

    var count: Int { entries.withLock { $0.count } }

    /// Queues the commands of `request` for its session, starting the task that handles them when none runs.
    func deliver(_ request: EmulationRequest) -> Delivery {
        guard let session = entries.withLock({ $0[request.session]?.session }), !session.isClosed else { return .noSession }
        let frame: [UInt8]
        do {
            frame = try request.commands(for: session.encoding)
        } catch {
            return .badRequest(error.message)
        }
        let outcome = entries.withLock { entries -> (Delivery, start: Bool) in
            guard var entry = entries[request.session] else { return (.noSession, false) }
            guard entry.waiting.count < Self.maxWaitingFrames else { return (.full, false) }
            entry.waiting.append(frame)
            let start = !entry.working
            entry.working = true
            entries[request.session] = entry
            return (.accepted, start)
        }
        if outcome.start { Task { await self.handleWaitingFrames(of: session) } }
        return outcome.0
    }

    private func handleWaitingFrames(of session: ClientSession) async {
        while let frame = next(for: session.key) {
            await session.handle(frame: frame)
        }
    }

    /// The session's next frame, or nil after marking it idle.
    private func next(for key: String) -> [UInt8]? {
        entries.withLock { entries in
            guard var entry = entries[key] else { return nil }
            guard !entry.waiting.isEmpty, !entry.session.isClosed else {
                entry.waiting = []
                entry.working = false
                entries[key] = entry
                return nil
            }
            let frame = entry.waiting.removeFirst()
            entries[key] = entry
            return frame
        }
    }
}
