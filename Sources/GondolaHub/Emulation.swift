import Foundation
import GondolaProtocol

/// What became of a command frame posted to `/emulation`.
public enum EmulationOutcome: Sendable, Equatable {
    /// Queued for the session, which handles it in order.
    case accepted
    /// No live node has that name (or it did not answer within the survey timeout).
    case unknownNode(String)
    /// The node holds no open session with that key: never opened, or closed since.
    case noSession
    /// The commands cannot be read in the session's encoding.
    case badRequest(String)
    /// The session already has this many frames waiting (`EmulatedSessions.maxWaitingFrames`).
    case tooManyWaiting(Int)
    /// The engine could not carry the request to the session's node.
    case unavailable(String)
}

/// Carries an `/emulation` request to the node that holds its session, over the engine
/// (`hub.emulation`, answered like a survey), so that a request may reach any node.
enum Emulation {
    static let topic = "hub.emulation"
}

extension Node {
    /// Delivers the commands of an `/emulation` request to its session: here when this
    /// node holds it, else on the node it names, asked over the engine and waited for at
    /// most `surveyTimeout`.
    public func emulate(_ request: EmulationRequest) async -> EmulationOutcome {
        if request.node == uid { return Self.outcome(emulated.deliver(request)) }
        guard cluster != nil else { return .unknownNode(request.node) }
        let id = UUID().uuidString.lowercased()
        var question: [(key: String, value: JSON)] = [
            ("id", .string(id)), ("target", .string(request.node)), ("session", .string(request.session)),
        ]
        switch request.data {
        case let .text(text): question.append(("text", .string(text)))
        case let .bytes(bytes): question.append(("b64", .string(Data(bytes).base64EncodedString())))
        }
        let outcome: Surveys.Outcome
        do {
            outcome = try await surveys.collect(id: id, expected: [request.node], timeout: configuration.surveyTimeout) {
                post(.domain(topic: Emulation.topic, origin: uid, payload: .object(question)), what: "emulation request")
            }
        } catch {
            return .unavailable(error.protocolError.message)
        }
        guard let answer = outcome.answers[request.node], case let .string(delivery)? = answer["delivery"] else {
            return .unknownNode(request.node)
        }
        switch delivery {
        case "accepted": return .accepted
        case "full": return .tooManyWaiting(EmulatedSessions.maxWaitingFrames)
        case "bad_request":
            if case let .string(message)? = answer["message"] { return .badRequest(message) }
            return .badRequest("the commands cannot be read")
        default: return .noSession
        }
    }

    /// Answers another node's emulation request when it names this node.
    func answerEmulation(_ question: JSON) {
        guard case let .string(id)? = question["id"], question["target"] == .string(uid), case let .string(session)? = question["session"]
        else { return }
        var delivery = EmulatedSessions.Delivery.badRequest("the emulation request carries no commands")
        if case let .string(text)? = question["text"] {
            delivery = emulated.deliver(EmulationRequest(node: uid, session: session, data: .text(text)))
        } else if case let .string(encoded)? = question["b64"], let bytes = Data(base64Encoded: encoded) {
            delivery = emulated.deliver(EmulationRequest(node: uid, session: session, data: .bytes(Array(bytes))))
        }
        var answer: [(key: String, value: JSON)] = [("id", .string(id)), ("node", .string(uid))]
        switch delivery {
        case .accepted: answer.append(("delivery", "accepted"))
        case .noSession: answer.append(("delivery", "no_session"))
        case .full: answer.append(("delivery", "full"))
        case let .badRequest(message): answer += [("delivery", "bad_request"), ("message", .string(message))]
        }
        post(.domain(topic: Surveys.answerTopic, origin: uid, payload: .object(answer)), what: "emulation answer")
    }

    private static func outcome(_ delivery: EmulatedSessions.Delivery) -> EmulationOutcome {
        switch delivery {
        case .accepted: .accepted
        case .noSession: .noSession
        case let .badRequest(message): .badRequest(message)
        case .full: .tooManyWaiting(EmulatedSessions.maxWaitingFrames)
        }
    }
}
