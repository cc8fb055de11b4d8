import Foundation

/// An event invitation as sent through the Telegram bot: a text and one button
/// per response, whose callback data is `rsvp:<eventId>:<response>`.
public struct TelegramInvitation: Sendable, Equatable {
    /// An inline button: its label and the callback data Telegram sends back when pressed.
    public struct Button: Sendable, Equatable {
        public let text: String
        public let data: String
    }

    public let eventID: String
    public let text: String
    public let buttons: [Button]

    init(event: TravelEvent, creatorName: String) {
        eventID = event.id
        let when = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(event.startsAt) / 1000))
        var text = "\(creatorName) invites you: \(event.title)\n\(when)"
        if let place = event.place?.name { text += "\n\(place)" }
        self.text = text
        buttons = [("Going", RSVP.going), ("Maybe", .maybe), ("Can't go", .declined)].map { Button(text: $0.0, data: "rsvp:\(event.id):\($0.1.rawValue)") }
    }
}

/// Sends the travel domain's Telegram messages. The server's implementation calls
/// the Bot API; without a bot token nothing is sent.
public protocol TelegramNotifier: Sendable {
    /// Sends an invitation to the Telegram chat of a user (their Telegram id).
    func sendInvitation(_ invitation: TelegramInvitation, to chatID: Int64) async throws

    /// Answers a pressed button; Telegram shows `text` to the user for a moment.
    func answerCallback(id: String, text: String) async throws
}

/// The notifier of a hub without a Telegram bot: sends nothing.
public struct NoTelegramBot: TelegramNotifier {
    public init() {}
    public func sendInvitation(_ invitation: TelegramInvitation, to chatID: Int64) async throws {}
    public func answerCallback(id: String, text: String) async throws {}
}
