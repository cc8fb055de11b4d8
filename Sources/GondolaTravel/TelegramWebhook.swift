import GondolaDomain
import GondolaHub
import GondolaProtocol
import GondolaServices
import Logging

/// Handles the Telegram bot's webhook updates. A button press whose data is
/// `rsvp:<eventId>:<response>`, from the Telegram account a user signed in with,
/// answers exactly like that user's `event.rsvp`, and the press is answered with a
/// short confirmation. Anything else — unknown accounts or events, malformed data,
/// other kinds of update — is logged and changes nothing; the caller acknowledges
/// every update with 200, since Telegram retries any other answer. The RSVP is recorded
/// before the webhook answers; the button's answer (`answerCallbackQuery`) is queued on
/// `calls` and made after, so a slow or unreachable Bot API never delays the webhook.
public struct TelegramWebhook: Sendable {
    /// What an update led to.
    public enum Outcome: Sendable, Equatable {
        case answered(event: String, user: String, response: String)
        case ignored(String)
    }

    let events: EventService
    let calls: OutboundCalls
    let logger: Logger

    public func handle(_ update: JSON) async -> Outcome {
        let outcome = await outcome(of: update)
        switch outcome {
        case let .answered(event, user, response):
            logger.info("telegram rsvp", metadata: ["event": "\(event)", "user": "\(user)", "response": "\(response)"])
        case let .ignored(reason):
            logger.notice("telegram update ignored", metadata: ["reason": "\(reason)", "update_id": "\(update["update_id"]?.text ?? "-")"])
        }
        return outcome
    }

    private func outcome(of update: JSON) async -> Outcome {
        guard let query = update["callback_query"] else { return .ignored("not a callback query") }
        guard case let .string(data)? = query["data"] else { return .ignored("callback query without data") }
        let parts = data.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, parts[0] == "rsvp", !parts[1].isEmpty, let response = RSVP(rawValue: parts[2]) else {
            return .ignored("malformed callback data \(data.prefix(64))")
        }
        guard case let .int(from)? = query["from"]?["id"] else { return .ignored("callback query without a sender id") }
        let user: String?
        do {
            user = try await events.repository.user(forTelegramID: from)
        } catch {
            return .ignored("user lookup failed: \(error)")
        }
        guard let user else { return .ignored("Telegram account \(from) is not linked to a user") }
        let reply: String
        let outcome: Outcome
        do {
            _ = try await events.respond(user, to: parts[1], response)
            (reply, outcome) = ("Got it: \(response.rawValue)", .answered(event: parts[1], user: user, response: response.rawValue))
        } catch {
            (reply, outcome) = ("This invitation is not yours or no longer exists", .ignored("rsvp refused: \(error)"))
        }
        if case let .string(id)? = query["id"] {
            await calls.submit("answerCallbackQuery", TelegramCalls.answer(callback: id, text: reply))
        }
        return outcome
    }
}
