import GondolaDomain
import GondolaHub
import GondolaProtocol
import GondolaServices

/// The travel domain's Telegram calls as the durable queue keeps them (`OutboundCalls`): a
/// message to a chat, `{"kind": "message", "chat", "text", "buttons": [{"text", "data"}]}`,
/// or the answer to a pressed button, `{"kind": "answer", "callback", "text"}`.
enum TelegramCalls {
    static func message(_ message: TelegramMessage, to chat: Int64) -> JSON {
        [
            "kind": "message", "chat": .int(chat), "text": .string(message.text),
            "buttons": .array(message.buttons.map { ["text": .string($0.text), "data": .string($0.data)] }),
        ]
    }

    static func answer(callback id: String, text: String) -> JSON {
        ["kind": "answer", "callback": .string(id), "text": .string(text)]
    }

    /// Makes the call `payload` describes.
    static func perform(_ payload: JSON, with telegram: any TelegramNotifier) async throws {
        switch try payload.callString("kind") {
        case "message":
            guard case let .array(buttons)? = payload["buttons"] else { throw HubError.internalError("a queued Telegram message without buttons") }
            let message = TelegramMessage(
                text: try payload.callString("text"),
                buttons: try buttons.map { TelegramMessage.Button(text: try $0.callString("text"), data: try $0.callString("data")) })
            try await telegram.send(message, to: try payload.callInteger("chat"))
        case "answer":
            try await telegram.answerCallback(id: try payload.callString("callback"), text: try payload.callString("text"))
        case let kind:
            throw HubError.internalError("a queued Telegram call of unknown kind '\(kind)'")
        }
    }
}
