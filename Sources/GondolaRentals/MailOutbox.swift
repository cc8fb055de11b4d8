import Foundation
import GondolaDomain
import GondolaHub
import GondolaServices
import Logging

/// Where the outbox hands mails: `.eml` files in a folder (the default) or an SMTP server.
enum MailRoute: Sendable {
    case folder(MailFolder)
    case smtp(SMTPMailer)

    /// Delivers one mail; answers where it went.
    func deliver(_ message: MailMessage, id: String) async throws -> String {
        switch self {
        case let .folder(folder): return try folder.deliver(message, id: id)
        case let .smtp(mailer):
            try await mailer.deliver(message, id: id)
            return "SMTP"
        }
    }
}

/// Mails waiting to be sent, in the database (`MailQueue`): a mail is queued in the same
/// transaction as what it is about (an account and its key), so it is never lost across a
/// restart. A failed delivery is retried with exponential back-off (5 s doubling to at
/// most an hour, ±20% jitter) and given up after `maxAttempts` (about a day); a stop
/// between the server's acceptance and the row's update sends the mail again (at least
/// once). Each worker claims the mails it sends for `lease` (10 minutes), so the outboxes
/// of several cluster nodes never send one mail twice at once. At most `maxPending` mails
/// wait; queueing more fails, and the request that wanted it fails with it. Sent mails
/// are forgotten after a week.
final class MailOutbox: Sendable {
    static let maxPending = 10_000
    static let maxAttempts = 25
    static let batchSize = 20
    static let keepSent: Int64 = 7 * 86_400_000
    static let lease: Int64 = 600_000

    let queue: any MailQueue
    let route: MailRoute
    let logger: Logger
    private let wakeups = DeliveryWakeups()

    init(queue: any MailQueue, route: MailRoute, logger: Logger) {
        self.queue = queue
        self.route = route
        self.logger = logger
    }

    /// The outbox is full.
    struct Full: Error {}

    /// Tells the delivery loop that a mail was queued.
    func kick() { wakeups.kick() }

    /// Mails not yet sent nor given up.
    func pendingCount() async throws -> Int { try await queue.pendingCount() }

    /// Delivers due mails until cancelled: at once when kicked, else when the next one is due
    /// (checked at least every second).
    func run() async {
        await wakeups.run(every: .seconds(1)) { await deliverDue() }
    }

    /// Sends every mail that is due now; answers how many were sent.
    @discardableResult
    func deliverDue(now: Int64 = unixMilliseconds()) async -> Int {
        var sent = 0
        while !Task.isCancelled {
            let due: [QueuedMail]
            do {
                due = try await queue.claimDue(now: now, limit: Self.batchSize, lease: Self.lease)
            } catch {
                logger.error("mail outbox: cannot read", metadata: ["error": "\(error)"])
                return sent
            }
            if due.isEmpty { break }
            for mail in due {
                if await deliver(id: mail.id, message: mail.message, attempts: mail.attempts) { sent += 1 }
            }
            if due.count < Self.batchSize { break }
        }
        await forgetSent(now: now)
        return sent
    }

    private func deliver(id: String, message: MailMessage, attempts: Int) async -> Bool {
        do {
            let place = try await route.deliver(message, id: id)
            try await queue.markSent(id, at: unixMilliseconds())
            logger.info("mail sent", metadata: ["mail": "\(id)", "to": "\(message.to)", "subject": "\(message.subject)", "via": "\(place)"])
            return true
        } catch {
            let tried = attempts + 1
            let givingUp = tried >= Self.maxAttempts
            let next = unixMilliseconds() + Self.backOff(attempt: tried)
            do {
                try await queue.markFailed(id, attempts: tried, error: "\(error)", next: next, givenUpAt: givingUp ? unixMilliseconds() : nil)
            } catch {
                logger.error("mail outbox: cannot record a failure", metadata: ["mail": "\(id)", "error": "\(error)"])
            }
            if givingUp {
                logger.error("mail given up", metadata: ["mail": "\(id)", "to": "\(message.to)", "attempts": "\(tried)", "error": "\(error)"])
            } else {
                logger.warning(
                    "mail delivery failed, will retry",
                    metadata: [
                        "mail": "\(id)", "to": "\(message.to)", "attempt": "\(tried)", "retry_at_ms": "\(next)", "error": "\(error)",
                    ])
            }
            return false
        }
    }

    /// The wait after the `attempt`-th failure: 5 s doubling per attempt, at most an
    /// hour, with ±20% jitter so that mails failing together do not retry together.
    static func backOff(attempt: Int) -> Int64 {
        RetryBackOff.delay(attempt: attempt, base: 5_000, cap: 3_600_000)
    }

    private func forgetSent(now: Int64) async {
        do {
            try await queue.forgetSent(before: now - Self.keepSent)
        } catch {
            logger.error("mail outbox: cannot forget sent mails", metadata: ["error": "\(error)"])
        }
    }
}
