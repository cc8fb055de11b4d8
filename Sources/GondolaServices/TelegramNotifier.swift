/// A Telegram message with inline buttons, whose callback data Telegram sends back to the
/// bot's webhook when one is pressed.
public struct TelegramMessage: Sendable, Equatable {
    /// An inline button: its label and its callback data.
    public struct Button: Sendable, Equatable {
        public let text: String
        public let data: String

        public init(text: String, data: String) {
            self.text = text
            self.data = data
        }
    }

    public let text: String
    public let buttons: [Button]

    public init(text: String, buttons: [Button]) {
        self.text = text
        self.buttons = buttons
    }
}

/// Sends the domains' Telegram messages. The server's implementation calls the Bot API
/// (`TelegramBotAPI`); without a bot token nothing is sent (`NoTelegramBot`).
public protocol TelegramNotifier: Sendable {
    /// Sends a message to a Telegram chat (a user's Telegram id).
    func send(_ message: TelegramMessage, to chatID: Int64) async throws

    /// Answers a pressed button; Telegram shows `text` to the user for a moment.
    func answerCallback(id: String, text: String) async throws
}

/// The notifier of a hub without a Telegram bot: sends nothing.
public struct NoTelegramBot: TelegramNotifier {
    public init() {}
    public func send(_ message: TelegramMessage, to chatID: Int64) async throws {}
    public func answerCallback(id: String, text: String) async throws {}
}
