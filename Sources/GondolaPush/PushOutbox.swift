import Foundation
import GondolaDomain
import GondolaServices
import Logging
import Synchronization

/// Notifications waiting for APNs or FCM, in the database (`PushQueue`), sent by a worker
/// that claims due rows in batches and keeps up to `maxInFlight` requests open at once (they
/// share the services' HTTP/2 connections).
///
/// An answer is recorded as soon as it arrives, so a restart sends again only what was in
/// flight and unanswered when the process died (after a kill -9 of a single node its claims
/// are freed at start; in a cluster they lapse after `lease`). A failure worth retrying
/// (429, 5xx, network, credentials) waits with exponential back-off from 1 s to at most 30
/// minutes, ±20% jitter, never less than the service's `Retry-After`, and is given up after
/// `maxAttempts` or at its expiry (a day after the news). An unregistered token's device is
/// removed and its waiting notifications given up. A user over the per-user rate waits for
/// the next window. At most `maxPending` notifications wait; more are dropped and counted
/// (`gondola_push_failed_total{reason="outbox_full"}`). Sent and given-up rows are kept a
/// day, then deleted.
final class PushOutbox: Sendable {
    static let maxPending = 1_000_000
    static let maxAttempts = 12
    static let batchSize = 500
    static let maxInFlight = 200
    static let lease: Int64 = 60_000
    static let keepDone: Int64 = 86_400_000
    /// How often rows done for more than `keepDone` are deleted.
    static let tidyInterval: Int64 = 60_000
    static let timeToLive: Int64 = 86_400_000
    static let retryBase: Int64 = 1_000
    static let retryCap: Int64 = 1_800_000

    /// A new row's id, a UUID: APNs takes it as `apns-id`.
    static func newID() -> String { UUID().uuidString.lowercased() }

    let queue: any PushQueue
    let senders: [PushPlatform: any PushSender]
    let devices: any DeviceRepository
    let rate: UserPushRate
    let metrics: PushMetrics
    let logger: Logger
    /// This run's id on the claims it takes.
    let runner = newID()
    private let wakeups = DeliveryWakeups()
    private let lastTidy = Mutex<Int64>(0)

    init(queue: any PushQueue, senders: [PushPlatform: any PushSender], devices: any DeviceRepository, rate: UserPushRate,
         metrics: PushMetrics, logger: Logger) {
        self.queue = queue
        self.senders = senders
        self.devices = devices
        self.rate = rate
        self.metrics = metrics
        self.logger = logger
    }

    /// Queues `pushes` and wakes the worker; failures are logged and counted, never thrown
    /// (the news itself is already published).
    @discardableResult
    func enqueue(_ pushes: [OutgoingPush], now: Int64 = unixMilliseconds()) -> EnqueueOutcome {
        guard !pushes.isEmpty else { return EnqueueOutcome() }
        do {
            let outcome = try queue.enqueue(pushes, now: now, maxPending: Self.maxPending)
            if outcome.dropped > 0 {
                logger.error("push outbox full: notifications dropped", metadata: ["dropped": "\(outcome.dropped)", "limit": "\(Self.maxPending)"])
                for push in pushes.suffix(outcome.dropped) { metrics.failed(push.platform, "outbox_full") }
            }
            wakeups.kick()
            return outcome
        } catch {
            logger.error("push outbox: cannot queue", metadata: ["error": "\(error)", "notifications": "\(pushes.count)"])
            return EnqueueOutcome(dropped: pushes.count)
        }
    }

    /// Notifications not yet sent nor given up.
    func pendingCount() throws -> Int { try queue.pendingCount() }

    /// Frees the claims a previous run left, then sends due notifications until cancelled:
    /// at once when some are queued, else at least every second.
    func run() async {
        do {
            let freed = try queue.releaseClaims(except: runner)
            if freed > 0 { logger.notice("push outbox: claims of a previous run freed", metadata: ["notifications": "\(freed)"]) }
        } catch {
            logger.error("push outbox: cannot free old claims", metadata: ["error": "\(error)"])
        }
        await wakeups.run(every: .seconds(1)) { await deliverDue() }
    }

    /// Sends every notification that is due; answers how many the services accepted.
    @discardableResult
    func deliverDue() async -> Int {
        var accepted = 0
        while !Task.isCancelled {
            let due: [QueuedPush]
            do {
                due = try queue.claimDue(now: unixMilliseconds(), limit: Self.batchSize, lease: Self.lease, runner: runner)
            } catch {
                logger.error("push outbox: cannot read", metadata: ["error": "\(error)"])
                break
            }
            if due.isEmpty { break }
            accepted += await withTaskGroup(of: Bool.self) { group in
                var sent = 0, started = 0
                for push in due {
                    if started >= Self.maxInFlight, let done = await group.next() { sent += done ? 1 : 0 }
                    group.addTask { await self.deliver(push) }
                    started += 1
                }
                for await done in group { sent += done ? 1 : 0 }
                return sent
            }
            if due.count < Self.batchSize { break }
        }
        finishRound()
        return accepted
    }

    /// Sends one notification and records the answer; true when the service accepted it.
    private func deliver(_ queued: QueuedPush) async -> Bool {
        let push = queued.push, now = unixMilliseconds()
        guard let sender = senders[push.platform] else {
            record(queued, givenUp: "no credentials for \(push.platform.rawValue)", reason: "rejected")
            return false
        }
        guard push.content.expiresAt > now else {
            record(queued, givenUp: "expired", reason: "expired")
            return false
        }
        if let windowEnd = rate.take(push.user, now: now) {
            metrics.failed(push.platform, "user_rate")
            recordFailure(queued, attempts: queued.attempts, error: "over the user's rate", next: windowEnd, givenUp: false)
            return false
        }
        let text = PushTexts.render(push.content.textKey, values: push.content.values, count: push.content.count, locale: push.content.locale)
        switch await sender.send(queued, text: text) {
        case .accepted:
            do {
                try queue.markSent(queued.id, at: unixMilliseconds())
            } catch {
                logger.error("push outbox: cannot record a delivery", metadata: ["push": "\(queued.id)", "error": "\(error)"])
            }
            metrics.sent(push.platform, latency: unixMilliseconds() - push.content.eventAt)
            return true
        case let .unregistered(reason):
            do {
                try devices.remove(token: push.token)
                try queue.giveUp(token: push.token, reason: "unregistered: \(reason)", at: unixMilliseconds())
            } catch {
                logger.error("push outbox: cannot remove an unregistered device", metadata: ["push": "\(queued.id)", "error": "\(error)"])
            }
            metrics.failed(push.platform, "unregistered")
            logger.info("push device unregistered by its service", metadata: ["user": "\(push.user)", "platform": "\(push.platform.rawValue)",
                                                                             "reason": "\(reason)"])
            return false
        case let .retry(reason, detail, after):
            let tried = queued.attempts + 1
            let wait = max(after ?? 0, RetryBackOff.delay(attempt: tried, base: Self.retryBase, cap: Self.retryCap))
            metrics.failed(push.platform, reason)
            recordFailure(queued, attempts: tried, error: "\(reason): \(detail)", next: unixMilliseconds() + wait, givenUp: tried >= Self.maxAttempts)
            return false
        case let .rejected(detail):
            metrics.failed(push.platform, "rejected")
            record(queued, givenUp: detail, reason: nil)
            return false
        }
    }

    private func record(_ queued: QueuedPush, givenUp error: String, reason: String?) {
        if let reason { metrics.failed(queued.push.platform, reason) }
        recordFailure(queued, attempts: queued.attempts, error: error, next: unixMilliseconds(), givenUp: true)
    }

    private func recordFailure(_ queued: QueuedPush, attempts: Int, error: String, next: Int64, givenUp: Bool) {
        do {
            try queue.markFailed(queued.id, attempts: attempts, error: error, next: next, givenUpAt: givenUp ? unixMilliseconds() : nil)
        } catch {
            logger.error("push outbox: cannot record a failure", metadata: ["push": "\(queued.id)", "error": "\(error)"])
        }
        if givenUp {
            logger.warning("push given up", metadata: ["push": "\(queued.id)", "user": "\(queued.push.user)", "error": "\(error)"])
        }
    }

    /// Refreshes the depth gauge and, once per `tidyInterval`, deletes rows done for more than
    /// `keepDone`.
    private func finishRound() {
        let now = unixMilliseconds()
        do {
            metrics.depth.record(try queue.pendingCount())
            let tidy = lastTidy.withLock { last -> Bool in
                guard now - last >= Self.tidyInterval else { return false }
                last = now
                return true
            }
            guard tidy else { return }
            try queue.forget(before: now - Self.keepDone)
        } catch {
            logger.error("push outbox: cannot tidy", metadata: ["error": "\(error)"])
        }
    }
}
