import GondolaHub
import Synchronization

/// News a domain wants on its users' phones when their app is not watching: who it is for,
/// the channel that carried it (a user with a live subscription to that channel has seen it
/// and gets no notification), what kind of news it is (users can turn each kind off), the
/// text's key and values (each phone gets it in its own language), and the ids the app needs
/// to open the right screen.
public struct Notice: Sendable, Equatable {
    /// The kinds of news a user can turn off one by one (`notifications.settings`).
    public enum Category: String, Sendable, Equatable {
        /// Chat messages.
        case chat
        /// Trip broadcasts, announcements and the other domains' notices to many users.
        case broadcast
        /// Event invitations and the answers to one's own events.
        case invite
        /// What happens to the user's own things in the other domains (a detected crash, a
        /// rental about to start, an assigned assessment).
        case update
    }

    /// Who the notice is for.
    public enum Audience: Sendable, Equatable {
        case users([String])
        /// Every user with a registered device.
        case everyone
    }

    public let audience: Audience
    /// The channel that carried the news.
    public let channel: String
    public let category: Category
    /// The text's key in the notifications' catalog (`chat.message`, `event.invite` …).
    public let text: String
    /// The values the text names (`sender`, `title` …).
    public let values: [String: String]
    /// What the app opens (`screen` and the ids it needs), sent as the notification's data.
    public let link: [String: String]
    /// Notices with the same thread for one user collapse into one notification with a count
    /// (a chat's messages); nil: each notice stands alone.
    public let thread: String?
    /// When the news happened, in milliseconds since 1970.
    public let at: Int64

    public init(
        audience: Audience, channel: String, category: Category, text: String, values: [String: String] = [:],
        link: [String: String] = [:], thread: String? = nil, at: Int64 = unixMilliseconds()
    ) {
        self.audience = audience
        self.channel = channel
        self.category = category
        self.text = text
        self.values = values
        self.link = link
        self.thread = thread
        self.at = at
    }
}

/// Where domains post `Notice`s and the push module takes them. A notice posted while no
/// receiver is attached (the push domain is not enabled) goes nowhere. Posting never blocks
/// and never fails: the receiver queues what it is given.
public final class NoticeBoard: Sendable {
    private let receiver = Mutex<(@Sendable (Notice) -> Void)?>(nil)

    public init() {}

    /// Hands `notice` to the receiver, if one is attached.
    public func post(_ notice: Notice) {
        receiver.withLock { $0 }?(notice)
    }

    /// Makes `handler` the receiver of every notice posted from now on.
    public func attach(_ handler: @escaping @Sendable (Notice) -> Void) {
        receiver.withLock { $0 = handler }
    }
}
