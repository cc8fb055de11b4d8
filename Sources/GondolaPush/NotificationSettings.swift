import GondolaHub
import GondolaProtocol

/// What a user wants pushed to their phones: each kind of news on or off, and quiet
/// hours during which notifications arrive without sound.
public struct NotificationSettings: Sendable, Equatable, ResponseContract, AnswerObject {
    /// Chat messages.
    public var chats = true
    /// A trip's broadcasts and announcements, and the other domains' notices to everyone.
    public var broadcasts = true
    /// Event invitations and the answers to one's own events.
    public var invites = true
    public var quietHours: QuietHours?

    public init() {}

    /// The settings as `notifications.settings` answers them.
    public static let members: [AnswerMember<Self>] = [
        .boolean("chats") { $0.chats }, .boolean("broadcasts") { $0.broadcasts }, .boolean("invites") { $0.invites },
        .object("quiet_hours", "null without them", orNull: { $0.quietHours }),
    ]

    /// These settings with what `change` gives changed.
    func updated(by change: SettingsChange) -> NotificationSettings {
        var settings = self
        if let chats = change.chats { settings.chats = chats }
        if let broadcasts = change.broadcasts { settings.broadcasts = broadcasts }
        if let invites = change.invites { settings.invites = invites }
        if let quietHours = change.quietHours { settings.quietHours = quietHours }
        return settings
    }
}

/// `notifications.settings`: the settings to change, each left as it is when absent;
/// `quiet_hours: null` clears the quiet hours.
struct SettingsChange: RequestContract {
    let chats: Bool?
    let broadcasts: Bool?
    let invites: Bool?
    /// nil: keep them; `.some(nil)`: clear them.
    let quietHours: QuietHours??

    init(_ fields: RequestFields) throws(HubError) {
        chats = try fields.optionalBool("chats")
        broadcasts = try fields.optionalBool("broadcasts")
        invites = try fields.optionalBool("invites")
        if fields.has("quiet_hours") {
            quietHours = .some(try QuietHours(try fields.noting("null clears them").object("quiet_hours")))
        } else if fields.isNull("quiet_hours") {
            quietHours = .some(nil)
        } else {
            quietHours = nil
        }
    }
}

/// A daily span in the user's local time, `start` to `end` in minutes after midnight,
/// wrapping past midnight when `end` is earlier than `start` (22:00–07:00).
public struct QuietHours: Sendable, Equatable {
    public let start: Int
    public let end: Int
    /// The user's offset from UTC, in minutes (-720…840).
    public let utcOffsetMinutes: Int

    public init(start: Int, end: Int, utcOffsetMinutes: Int) {
        self.start = start
        self.end = end
        self.utcOffsetMinutes = utcOffsetMinutes
    }

    init(_ fields: RequestFields) throws(HubError) {
        let start = try fields.noting("HH:MM").string("start", maxLength: 5)
        let end = try fields.noting("HH:MM, not equal to start").string("end", maxLength: 5)
        utcOffsetMinutes = Int(try fields.integer("utc_offset_minutes", in: -720...840, default: 0))
        self.start = try Self.minutes(start, at: fields.path(of: "start"))
        self.end = try Self.minutes(end, at: fields.path(of: "end"))
        guard start != end else { throw .badRequest("\(fields.path(of: "end")): quiet hours must not start and end at the same time") }
    }

    /// Whether the moment `milliseconds` (since 1970, UTC) falls in the span.
    public func contains(_ milliseconds: Int64) -> Bool {
        let minutesPerDay: Int64 = 1440
        let local = Int(((milliseconds / 60_000 + Int64(utcOffsetMinutes)) % minutesPerDay + minutesPerDay) % minutesPerDay)
        return start < end ? (start <= local && local < end) : (local >= start || local < end)
    }

    /// `text` (the member at `path`), "HH:MM" from 00:00 to 23:59, as minutes after midnight.
    private static func minutes(_ text: String, at path: String) throws(HubError) -> Int {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.count == 2 }), let hours = Int(parts[0]), let minutes = Int(parts[1]),
            (0...23).contains(hours), (0...59).contains(minutes)
        else {
            throw .badRequest("\(path): expected a time as HH:MM from 00:00 to 23:59, got '\(text)'")
        }
        return hours * 60 + minutes
    }

    private static func clock(_ minutes: Int) -> String {
        let hours = minutes / 60
        let rest = minutes % 60
        return (hours < 10 ? "0" : "") + "\(hours):" + (rest < 10 ? "0" : "") + "\(rest)"
    }
}

extension QuietHours: AnswerObject {
    public static let members: [AnswerMember<Self>] = [
        .string("start", "HH:MM") { clock($0.start) }, .string("end", "HH:MM") { clock($0.end) },
        .integer("utc_offset_minutes") { Int64($0.utcOffsetMinutes) },
    ]
}
