import Foundation
import GondolaDomain
import GondolaServices
import Logging
import Synchronization

/// Notifications waiting for APNs or FCM, in the database (`PushQueue`), sent by one lane
/// per service. A lane keeps a window of requests open at once on the service's HTTP/2
/// connection: as many as the service takes streams at once (its
/// `SETTINGS_MAX_CONCURRENT_STREAMS`), at most `maxInFlight`; it claims more due rows as
/// answers free a quarter of the window, so a request the service leaves unanswered holds
/// one slot of its own lane until the answer timeout, never the other service's
/// notifications nor the rest of its own. Each claim is sent as one batch on one task: the
/// connection calls back with each answer, so no notification has a task of its own.
///
/// Accepted notifications are recorded in batches (`GroupCommit`: the answers that arrive
/// while one batch is written go in the next transaction), and a request's slot frees only
/// once its answer is recorded, so a restart sends again only what was in flight or
/// answered and not yet recorded when the process died (after a kill -9 of a single node its claims
/// are freed at start; in a cluster they lapse after `lease`). A failure worth retrying
/// (429, 5xx, network, credentials) waits with exponential back-off from 1 s to at most 30
/// minutes, ±20% jitter, never less than the service's `Retry-After`, and is given up after
/// `maxAttempts` or at its expiry (a day after the news). An unregistered token's device is
/// removed and its waiting notifications given up. A user over the per-user rate waits for
/// the next window. At most `maxPending` notifications wait; more are dropped and counted
/// (`gondola_push_failed_total{reason="outbox_full"}`). Sent and given-up rows are kept a
/// day, then deleted. A claim is one transaction for many rows, not one per answer; on a single
/// SQLite node it writes nothing (`HeldClaims`). Texts are rendered through `RenderedTexts`.
final class PushOutbox: Sendable {
    static let maxPending = 1_000_000
    static let maxAttempts = 12
    static let batchSize = 500
    static let maxInFlight = 1_000
    /// The most accepted notifications recorded in one transaction.
    static let maxRecordedAtOnce = 500
    /// How often the depth gauge is refreshed at most (counting the waiting rows reads all of them).
    static let depthInterval: Int64 = 1_000
    static let lease: Int64 = 60_000
    static let keepDone: Int64 = 86_400_000
    /// How often rows done for more than `keepDone` are deleted.
    static let tidyInterval: Int64 = 60_000
    static let timeToLive: Int64 = 86_400_000
    static let retryBase: Int64 = 1_000
    static let retryCap: Int64 = 1_800_000

    /// A new row's id (see `OutboxIDs`).
    static func newID(now: Int64 = unixMilliseconds()) -> String {
        var ids = OutboxIDs(expected: 1)
        return ids.next(now: now)
    }

    let queue: any PushQueue
    let senders: [PushPlatform: any PushSender]
    let devices: any DeviceRepository
    let rate: UserPushRate
    let metrics: PushMetrics
    let logger: Logger
    /// This run's id on the claims it takes.
    let runner = newID()
    /// Each service's lane pacing: kicked when its notifications are queued, and when a
    /// slot frees while more may be due.
    private let wakeups = Dictionary(uniqueKeysWithValues: PushPlatform.allCases.map { ($0, DeliveryWakeups()) })
    private let lastTidy = Mutex<Int64>(0)
    private let lastDepth = Mutex<Int64>(0)
    private let texts = RenderedTexts()
    /// Records accepted notifications in batches; an item's outcome is the error, if any.
    private let sentRecords: GroupCommit<String, (any Error)?>

    init(
        queue: any PushQueue, senders: [PushPlatform: any PushSender], devices: any DeviceRepository, rate: UserPushRate,
        metrics: PushMetrics, logger: Logger
    ) {
        self.queue = queue
        self.senders = senders
        self.devices = devices
        self.rate = rate
        self.metrics = metrics
        self.logger = logger
        sentRecords = GroupCommit(maxBatch: Self.maxRecordedAtOnce) { [queue] ids in
            do {
                try await queue.markSent(ids, at: unixMilliseconds())
                return ids.map { _ in nil }
            } catch {
                return ids.map { _ in error }
            }
        }
    }

    /// Queues `pushes` and wakes the worker; failures are logged and counted, never thrown
    /// (the news itself is already published).
    @discardableResult
    func enqueue(_ pushes: [OutgoingPush], now: Int64 = unixMilliseconds()) async -> EnqueueOutcome {
        guard !pushes.isEmpty else { return EnqueueOutcome() }
        do {
            let outcome = try await queue.enqueue(pushes, now: now, maxPending: Self.maxPending)
            if outcome.dropped > 0 {
                logger.error("push outbox full: notifications dropped", metadata: ["dropped": "\(outcome.dropped)", "limit": "\(Self.maxPending)"])
                for push in pushes.suffix(outcome.dropped) { metrics.failed(push.platform, "outbox_full") }
            }
            for platform in Set(pushes.map(\.platform)) { wakeups[platform]?.kick() }
            return outcome
        } catch {
            logger.error("push outbox: cannot queue", metadata: ["error": "\(error)", "notifications": "\(pushes.count)"])
            return EnqueueOutcome(dropped: pushes.count)
        }
    }

    /// Notifications not yet sent nor given up.
    func pendingCount() async throws -> Int { try await queue.pendingCount() }

    /// Frees the claims a previous run left, then sends due notifications until cancelled,
    /// one lane per service: at once when some are queued, else at least every second.
    func run() async {
        do {
            let freed = try await queue.releaseClaims(except: runner)
            if freed > 0 { logger.notice("push outbox: claims of a previous run freed", metadata: ["notifications": "\(freed)"]) }
        } catch {
            logger.error("push outbox: cannot free old claims", metadata: ["error": "\(error)"])
        }
        await withDiscardingTaskGroup { group in
            for platform in PushPlatform.allCases {
                group.addTask { await self.lane(platform) }
            }
        }
    }

    /// How many requests a lane has open, and whether its last claim was full (more may be due).
    private final class LaneState: Sendable {
        let inFlight = Atomic<Int>(0)
        let mayHaveMore = Atomic<Bool>(false)
    }

    /// How many requests a lane keeps open for `sender`: the service's stream limit, at most
    /// `maxInFlight` (all of it for a platform without credentials, whose rows are given up).
    private static func window(_ sender: (any PushSender)?) -> Int {
        min(maxInFlight, max(1, sender?.concurrentStreams ?? maxInFlight))
    }

    /// True when a lane with `inFlight` requests open in `window` may claim more: a quarter
    /// of the window is free, or nothing is in flight.
    private static func mayClaim(inFlight: Int, window: Int) -> Bool {
        inFlight == 0 || window - inFlight >= max(1, window / 4)
    }

    /// Sends `platform`'s due notifications until cancelled, keeping its window of requests
    /// open and claiming again whenever answers free a quarter of it while more may be due.
    /// A platform without credentials gives up what it claims (rows queued under an earlier
    /// configuration).
    private func lane(_ platform: PushPlatform) async {
        guard let wakeups = wakeups[platform] else { return }
        let state = LaneState()
        let sender = senders[platform]
        await withDiscardingTaskGroup { group in
            await wakeups.run(every: .seconds(1)) {
                while !Task.isCancelled {
                    let inFlight = state.inFlight.load(ordering: .acquiring)
                    let window = Self.window(sender)
                    guard Self.mayClaim(inFlight: inFlight, window: window) else { break }
                    let room = window - inFlight
                    let limit = min(room, Self.batchSize)
                    let due: [QueuedPush]
                    do {
                        due = try await queue.claimDue(now: unixMilliseconds(), limit: limit, lease: Self.lease, runner: runner, platform: platform)
                    } catch {
                        logger.error("push outbox: cannot read", metadata: ["platform": "\(platform.rawValue)", "error": "\(error)"])
                        break
                    }
                    state.mayHaveMore.store(due.count == limit, ordering: .releasing)
                    guard !due.isEmpty else { break }
                    state.inFlight.wrappingAdd(due.count, ordering: .acquiringAndReleasing)
                    group.addTask {
                        await self.deliver(due, through: sender) {
                            let left = state.inFlight.wrappingSubtract(1, ordering: .acquiringAndReleasing).newValue
                            if state.mayHaveMore.load(ordering: .acquiring), Self.mayClaim(inFlight: left, window: Self.window(sender)) {
                                wakeups.kick()
                            }
                        }
                    }
                    if due.count < limit { break }
                }
                await finishRound()
            }
        }
    }

    /// Sends a claimed batch through `sender` and records each answer; `recorded` is called
    /// once per notification, when its outcome is written (a slot of the lane frees). The
    /// batch is one task: its answers come as callbacks, accepted ones are recorded in
    /// batches, and the rare others each on a task of their own.
    private func deliver(_ claimed: [QueuedPush], through sender: (any PushSender)?, recorded: @escaping @Sendable () -> Void) async {
        let now = unixMilliseconds()
        var sendable: [PushToSend] = []
        for queued in claimed {
            if await refuseBeforeSending(queued, sender: sender, now: now) {
                recorded()
            } else {
                sendable.append(PushToSend(queued: queued, text: texts.text(of: queued.push.content)))
            }
        }
        guard let sender, !sendable.isEmpty else { return }
        let batch = sendable
        let unrecorded = Countdown(batch.count)
        await sender.send(batch) { index, outcome in
            self.record(outcome, of: batch[index].queued) {
                recorded()
                unrecorded.done()
            }
        }
        await unrecorded.allDone()
    }

    /// Records and counts why `queued` is not sent now: no credentials for its service, its
    /// expiry passed, or its user is over the rate (it waits for the next window); false when
    /// it may be sent.
    private func refuseBeforeSending(_ queued: QueuedPush, sender: (any PushSender)?, now: Int64) async -> Bool {
        let push = queued.push
        if sender == nil {
            await record(queued, givenUp: "no credentials for \(push.platform.rawValue)", reason: "rejected")
        } else if push.content.expiresAt <= now {
            await record(queued, givenUp: "expired", reason: "expired")
        } else if let windowEnd = rate.take(push.user, now: now) {
            await recordFailure(queued, attempts: queued.attempts, error: "over the user's rate", next: windowEnd, givenUp: false)
            metrics.failed(push.platform, "user_rate")
        } else {
            return false
        }
        return true
    }

    /// Records the service's answer for `queued`, then calls `done`: an accepted one joins
    /// the next batch of sent rows; any other is handled on a task of its own.
    private func record(_ outcome: PushOutcome, of queued: QueuedPush, then done: @escaping @Sendable () -> Void) {
        let push = queued.push
        guard outcome != .accepted else {
            return sentRecords.commit(queued.id) { [logger, metrics] error in
                if let error {
                    logger.error("push outbox: cannot record a delivery", metadata: ["push": "\(queued.id)", "error": "\(error)"])
                }
                metrics.sent(push.platform, latency: unixMilliseconds() - push.content.eventAt)
                done()
            }
        }
        Task {
            await recordNotAccepted(outcome, of: queued)
            done()
        }
    }

    /// Records an answer other than accepted: an unregistered device is removed with its
    /// waiting notifications, a failure worth retrying waits with back-off, a refusal is
    /// given up.
    private func recordNotAccepted(_ outcome: PushOutcome, of queued: QueuedPush) async {
        let push = queued.push
        switch outcome {
        case .accepted:
            return
        case let .unregistered(reason):
            do {
                try await devices.remove(token: push.token)
                try await queue.giveUp(token: push.token, reason: "unregistered: \(reason)", at: unixMilliseconds())
            } catch {
                logger.error("push outbox: cannot remove an unregistered device", metadata: ["push": "\(queued.id)", "error": "\(error)"])
            }
            metrics.failed(push.platform, "unregistered")
            logger.info(
                "push device unregistered by its service",
                metadata: [
                    "user": "\(push.user)", "platform": "\(push.platform.rawValue)",
                    "reason": "\(reason)",
                ])
        case let .retry(reason, detail, after):
            let tried = queued.attempts + 1
            let wait = max(after ?? 0, RetryBackOff.delay(attempt: tried, base: Self.retryBase, cap: Self.retryCap))
            await recordFailure(
                queued, attempts: tried, error: "\(reason): \(detail)", next: unixMilliseconds() + wait, givenUp: tried >= Self.maxAttempts)
            metrics.failed(push.platform, reason)
        case let .rejected(detail):
            await record(queued, givenUp: detail, reason: "rejected")
        }
    }

    /// Gives `queued` up with `error`, then counts it under `reason`.
    private func record(_ queued: QueuedPush, givenUp error: String, reason: String) async {
        await recordFailure(queued, attempts: queued.attempts, error: error, next: unixMilliseconds(), givenUp: true)
        metrics.failed(queued.push.platform, reason)
    }

    private func recordFailure(_ queued: QueuedPush, attempts: Int, error: String, next: Int64, givenUp: Bool) async {
        do {
            try await queue.markFailed(queued.id, attempts: attempts, error: error, next: next, givenUpAt: givenUp ? unixMilliseconds() : nil)
        } catch {
            logger.error("push outbox: cannot record a failure", metadata: ["push": "\(queued.id)", "error": "\(error)"])
        }
        if givenUp {
            logger.warning("push given up", metadata: ["push": "\(queued.id)", "user": "\(queued.push.user)", "error": "\(error)"])
        }
    }

    /// Refreshes the depth gauge once per `depthInterval` and deletes rows done for more than
    /// `keepDone` once per `tidyInterval`.
    private func finishRound() async {
        let now = unixMilliseconds()
        do {
            if Self.isDue(lastDepth, every: Self.depthInterval, now: now) { metrics.depth.record(try await queue.pendingCount()) }
            if Self.isDue(lastTidy, every: Self.tidyInterval, now: now) { try await queue.forget(before: now - Self.keepDone) }
        } catch {
            logger.error("push outbox: cannot tidy", metadata: ["error": "\(error)"])
        }
    }

    /// True, and `last` set to `now`, when `interval` passed since `last`.
    private static func isDue(_ last: borrowing Mutex<Int64>, every interval: Int64, now: Int64) -> Bool {
        last.withLock { last in
            guard now - last >= interval else { return false }
            last = now
            return true
        }
    }
}
