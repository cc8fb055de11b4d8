import GondolaDomain
import GondolaProtocol

/// One notification for one device, as it waits in the outbox. The text is kept as its
/// catalog key and values and rendered in the device's language when it is sent, so that a
/// chat's collapsed notification can say how many messages it stands for.
struct PushContent: Sendable, Equatable {
    let category: Notice.Category
    let textKey: String
    var values: [String: String]
    let locale: String?
    var link: [String: String]
    /// Notifications with the same key for one device collapse into one (`apns-collapse-id`,
    /// FCM's `collapse_key` and `tag`).
    let collapseKey: String?
    /// How many notices this notification stands for (more than 1 only when collapsed).
    var count: Int
    /// Delivered without sound (the user's quiet hours).
    var silent: Bool
    /// When the (first) news happened, in milliseconds since 1970.
    let eventAt: Int64
    /// After this moment the notification is dropped instead of sent.
    var expiresAt: Int64
}

/// A notification addressed to one device.
struct OutgoingPush: Sendable, Equatable {
    let token: String
    let platform: PushPlatform
    let user: String
    var content: PushContent
}

/// A notification claimed from the outbox for sending.
struct QueuedPush: Sendable, Equatable {
    let id: String
    let push: OutgoingPush
    /// Deliveries tried before this one.
    let attempts: Int
}

/// What enqueueing a batch did.
struct EnqueueOutcome: Sendable, Equatable {
    /// New rows.
    var queued = 0
    /// Notices folded into a waiting notification of the same thread.
    var collapsed = 0
    /// Refused because the outbox held `PushOutbox.maxPending` notifications.
    var dropped = 0
}

/// The string maps of the outbox rows (text values, link) as JSON text, and back.
enum StringMapJSON {
    static func text(_ map: [String: String]) -> String {
        JSON.object(map.sorted { $0.key < $1.key }.map { ($0.key, JSON.string($0.value)) }).text
    }

    static func map(_ text: String) -> [String: String] {
        guard case let .object(members)? = try? JSONParser.parse(text) else { return [:] }
        var map: [String: String] = [:]
        for (key, value) in members { if case let .string(string) = value { map[key] = string } }
        return map
    }
}

/// A content's values and link as the outbox's columns store them (JSON text) and back, the
/// last of each direction remembered: the notifications of one notice share their values
/// and link, so queueing or claiming an announcement's rows encodes and parses them once,
/// not once per row.
struct ContentMapColumns {
    private var lastWritten: (values: [String: String], link: [String: String], texts: (values: String, link: String))?
    private var lastRead: (texts: (values: String, link: String), maps: (values: [String: String], link: [String: String]))?

    /// `content`'s values and link as the outbox stores them.
    mutating func texts(of content: PushContent) -> (values: String, link: String) {
        if let lastWritten, lastWritten.values == content.values, lastWritten.link == content.link { return lastWritten.texts }
        let texts = (values: StringMapJSON.text(content.values), link: StringMapJSON.text(content.link))
        lastWritten = (content.values, content.link, texts)
        return texts
    }

    /// The values and link a row stores as `values` and `link`.
    mutating func maps(values: String, link: String) -> (values: [String: String], link: [String: String]) {
        if let lastRead, lastRead.texts == (values, link) { return lastRead.maps }
        let maps = (values: StringMapJSON.map(values), link: StringMapJSON.map(link))
        lastRead = ((values, link), maps)
        return maps
    }
}

extension QueuedPush {
    /// A notification as an outbox row stores it (both engines' columns); nil when the row names
    /// a platform or a category this build does not know.
    init?(
        id: String, token: String, platform: String, user: String, category: String, textKey: String, values: String, locale: String?,
        link: String, collapseKey: String?, count: Int, silent: Bool, eventAt: Int64, expiresAt: Int64, attempts: Int,
        reading columns: inout ContentMapColumns
    ) {
        guard let platform = PushPlatform(rawValue: platform), let category = Notice.Category(rawValue: category) else { return nil }
        let maps = columns.maps(values: values, link: link)
        let content = PushContent(
            category: category, textKey: textKey, values: maps.values, locale: locale, link: maps.link,
            collapseKey: collapseKey, count: count, silent: silent, eventAt: eventAt, expiresAt: expiresAt)
        self.init(id: id, push: OutgoingPush(token: token, platform: platform, user: user, content: content), attempts: attempts)
    }
}
