import GondolaProtocol
import Synchronization

/// Questions a node asks the other nodes of its cluster over the engine, and their
/// answers (the server API's `channels` across the cluster): a survey goes out as the domain
/// event `hub.survey`, each other node answers with `hub.survey.answer` naming the asker, and
/// the asker takes answers from the nodes it expects until all came or its timeout is over,
/// then goes on with what it has: a node that did not answer is named, never waited on
/// longer. At most `maxWaiting` surveys wait at once; one more is refused (108).
final class Surveys: Sendable {
    static let askTopic = "hub.survey"
    static let answerTopic = "hub.survey.answer"
    static let maxWaiting = 64

    /// What came back: the answers by node uid, and the expected nodes that did not answer.
    struct Outcome: Sendable {
        var answers: [String: JSON]
        var unanswered: Set<String>
    }

    private struct Waiting {
        var expected: Set<String>
        var answers: [String: JSON] = [:]
        let continuation: CheckedContinuation<Outcome?, Never>
        /// Ends the survey at its timeout; cancelled when every answer came first.
        var timer: Task<Void, Never>?
    }

    private let waiting = Mutex<[String: Waiting]>([:])

    /// Sends survey `id` with `send` and answers once every node of `expected` answered, or
    /// `timeout` after sending.
    func collect(id: String, expected: Set<String>, timeout: Duration, send: () -> Void) async throws(HubError) -> Outcome {
        guard !expected.isEmpty else { return Outcome(answers: [:], unanswered: []) }
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Outcome?, Never>) in
            let accepted = waiting.withLock { waiting in
                guard waiting.count < Self.maxWaiting else { return false }
                waiting[id] = Waiting(expected: expected, continuation: continuation)
                return true
            }
            guard accepted else { return continuation.resume(returning: nil) }
            send()
            let timer = Task {
                try? await Task.sleep(for: timeout)
                self.finish(id)
            }
            // An answer may have finished the survey already: then the timer is not needed.
            let finished = waiting.withLock { waiting in
                guard waiting[id] != nil else { return true }
                waiting[id]?.timer = timer
                return false
            }
            if finished { timer.cancel() }
        }
        guard let outcome else { throw .notAvailable("\(Self.maxWaiting) cluster surveys are already waiting for answers") }
        return outcome
    }

    /// Takes an answer to a survey of this node (`payload` names it in `id`, and the
    /// answering node in `node`); answers to surveys no longer waiting are dropped.
    func receive(_ payload: JSON) {
        guard case let .string(id)? = payload["id"], case let .string(node)? = payload["node"] else { return }
        let complete = waiting.withLock { waiting -> Bool in
            guard waiting[id]?.expected.contains(node) == true else { return false }
            waiting[id]?.answers[node] = payload
            return waiting[id].map { $0.answers.count == $0.expected.count } ?? false
        }
        if complete { finish(id) }
    }

    private func finish(_ id: String) {
        guard let done = waiting.withLock({ $0.removeValue(forKey: id) }) else { return }
        done.timer?.cancel()
        done.continuation.resume(returning: Outcome(answers: done.answers, unanswered: done.expected.subtracting(done.answers.keys)))
    }
}
