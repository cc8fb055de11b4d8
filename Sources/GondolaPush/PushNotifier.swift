import GondolaDomain
import GondolaHub
import Logging

/// Turns domains' notices into notifications in the outbox. A notice goes to each device of
/// its audience whose user has no live connection subscribed to the notice's channel (they
/// saw the news), has not turned the notice's kind off, and whose service has credentials.
/// In the user's quiet hours it arrives without sound. Notices wait in memory for this work
/// in a buffer of `maxWaiting`; a notice arriving when it is full is dropped and counted
/// (`gondola_push_notices_dropped_total`): the news itself is in its channel already.
final class PushNotifier: Sendable {
    static let maxWaiting = 10_000

    let node: Node
    let devices: any DeviceRepository
    let outbox: PushOutbox
    let logger: Logger
    private let notices: AsyncStream<Notice>
    private let waiting: AsyncStream<Notice>.Continuation

    init(node: Node, devices: any DeviceRepository, outbox: PushOutbox, logger: Logger) {
        self.node = node
        self.devices = devices
        self.outbox = outbox
        self.logger = logger
        (notices, waiting) = AsyncStream.makeStream(of: Notice.self, bufferingPolicy: .bufferingOldest(Self.maxWaiting))
    }

    /// Takes `notice` for the worker (never blocks), counting it in `gondola_push_notices_total`.
    func post(_ notice: Notice) {
        switch waiting.yield(notice) {
        case .dropped:
            outbox.metrics.droppedNotices.increment()
            logger.warning("push: notice dropped, the buffer is full", metadata: ["channel": "\(notice.channel)", "limit": "\(Self.maxWaiting)"])
        case .enqueued:
            outbox.metrics.takenNotices.increment()
        default:
            break  // the notifier has stopped: the hub is shutting down
        }
    }

    /// Handles notices until cancelled.
    func run() async {
        await withTaskCancellationHandler {
            for await notice in notices { await notify(notice) }
        } onCancel: { [waiting] in
            waiting.finish()
        }
    }

    /// Queues the notifications `notice` calls for; answers what the outbox did.
    @discardableResult
    func notify(_ notice: Notice, now: Int64 = unixMilliseconds()) async -> EnqueueOutcome {
        guard PushTexts.knows(notice.text) else {
            logger.error("push: notice with a text the catalog does not have", metadata: ["text": "\(notice.text)"])
            return EnqueueOutcome()
        }
        let audience: [String]? =
            switch notice.audience {
            case let .users(users): users
            case .everyone: nil
            }
        if audience?.isEmpty == true { return EnqueueOutcome() }
        let recipients: [PushRecipient]
        do {
            recipients = try await devices.recipients(among: audience)
        } catch {
            logger.error("push: cannot read the devices", metadata: ["error": "\(error)"])
            return EnqueueOutcome()
        }
        if recipients.isEmpty { return EnqueueOutcome() }
        let watching = await node.usersSubscribed(to: notice.channel)
        let pushes = recipients.compactMap { recipient -> OutgoingPush? in
            let device = recipient.device
            let settings = recipient.settings
            guard outbox.senders[device.platform] != nil, !watching.contains(device.user), settings.wants(notice.category) else { return nil }
            let content = PushContent(
                category: notice.category, textKey: notice.text, values: notice.values, locale: device.locale, link: notice.link,
                collapseKey: notice.thread, count: 1, silent: settings.quietHours?.contains(now) ?? false, eventAt: notice.at,
                expiresAt: notice.at + PushOutbox.timeToLive)
            return OutgoingPush(token: device.token, platform: device.platform, user: device.user, content: content)
        }
        return await outbox.enqueue(pushes, now: now)
    }
}

extension NotificationSettings {
    /// Whether the user wants notices of `category` (their own things' updates always).
    func wants(_ category: Notice.Category) -> Bool {
        switch category {
        case .chat: chats
        case .broadcast: broadcasts
        case .invite: invites
        case .update: true
        }
    }
}
