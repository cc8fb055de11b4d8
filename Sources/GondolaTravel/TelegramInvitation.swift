import Foundation
import GondolaServices

extension TelegramMessage {
    /// An event invitation as sent through the Telegram bot: a text and one button per
    /// response, whose callback data is `rsvp:<eventId>:<response>`.
    static func invitation(to event: TravelEvent, creatorName: String) -> TelegramMessage {
        let when = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(event.startsAt) / 1000))
        var text = "\(creatorName) invites you: \(event.title)\n\(when)"
        if let place = event.place?.name { text += "\n\(place)" }
        let buttons = [("Going", RSVP.going), ("Maybe", .maybe), ("Can't go", .declined)].map {
            Button(text: $0.0, data: "rsvp:\(event.id):\($0.1.rawValue)")
        }
        return TelegramMessage(text: text, buttons: buttons)
    }
}
