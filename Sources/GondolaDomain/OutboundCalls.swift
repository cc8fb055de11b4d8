import CoreMetrics
import Foundation
import GondolaHub
import GondolaProtocol
import GondolaServices
import Logging
import Synchronization

/// Calls to one service outside the process (the Telegram Bot API, an SMS gateway), made in
/// the background from a durable queue: a request writes its call to the queue
/// (`OutboundCallStore`, the `outbound_call` table) and answers, so no request ever waits on
/// the service, and a call still waiting when the process stops — even killed — is made
/// after the restart, by this node or another of the cluster.
///
/// A call is the service's JSON (`payload`), which `perform` sends. Each attempt gets
/// `timeout`; a failed or timed-out attempt is tried again after an exponential back-off from
/// `retryBase` (±20% jitter, at most `retryCap`), up to `maxAttempts` attempts in all, then
/// given up (logged). A call is claimed for `timeout` and a margin while it is tried, so that
/// no other worker makes it meanwhile; a stop between the service's answer and the queue's
/// update makes it once more (at least once). At most `maxPending` calls to a service wait:
/// `submit` refuses more (answers false), and the refusal is logged and counted. At most
/// `concurrency` calls run at once.
///
/// Metrics: `gondola_outbound_calls_total{service, outcome}` with outcome `sent`, `failed`
/// (given up), `retried` or `dropped` (the queue was full, or could not be written), and
/// `gondola_outbound_call_seconds{service}`, the time from `submit` to the answer.
public final class OutboundCalls: Sendable {
    /// How many attempts, how long each and how far apart.
    public struct Policy: Sendable {
        public var timeout: Duration
        public var maxAttempts: Int
        public var retryBase: Duration
        public var retryCap: Duration
        public var maxPending: Int
        public var concurrency: Int

        public init(
            timeout: Duration = .seconds(10), maxAttempts: Int = 8, retryBase: Duration = .seconds(1), retryCap: Duration = .seconds(60),
            maxPending: Int = 10_000, concurrency: Int = 8
        ) {
            self.timeout = timeout
            self.maxAttempts = maxAttempts
            self.retryBase = retryBase
            self.retryCap = retryCap
            self.maxPending = maxPending
            self.concurrency = concurrency
        }

        /// How long a worker holds the calls it claimed: an attempt and a margin.
        var lease: Duration { timeout + .seconds(5) }
    }

    /// An attempt that did not end within the policy's timeout.
    public struct TimedOut: Error, CustomStringConvertible {
        public let timeout: Duration
        public var description: String { "no answer within \(timeout)" }
    }

    public let service: String
    public let policy: Policy
    private let store: any OutboundCallStore
    private let perform: @Sendable (JSON) async throws -> Void
    private let logger: Logger
    private let wakeups = DeliveryWakeups()
    private let sent: Counter
    private let failed: Counter
    private let retried: Counter
    private let dropped: Counter
    private let latency: CoreMetrics.Timer

    /// A queue of calls to `service` (its name in the queue, logs and metrics: letters,
    /// digits, `_` and `-`) kept in `store`; `perform` makes one call from its payload.
    public init(
        service: String, store: any OutboundCallStore, policy: Policy = Policy(), metrics: any MetricsFactory = NOOPMetricsHandler.instance,
        logger: Logger, perform: @escaping @Sendable (JSON) async throws -> Void
    ) {
        self.service = service
        self.store = store
        self.policy = policy
        self.perform = perform
        self.logger = logger
        func counter(_ outcome: String) -> Counter {
            Counter(label: "gondola_outbound_calls_total", dimensions: [("service", service), ("outcome", outcome)], factory: metrics)
        }
        sent = counter("sent")
        failed = counter("failed")
        retried = counter("retried")
        dropped = counter("dropped")
        latency = CoreMetrics.Timer(label: "gondola_outbound_call_seconds", dimensions: [("service", service)], factory: metrics)
    }

    /// Queues a call with `payload` (`label` names it in logs); false (logged and counted)
    /// when `maxPending` calls already wait or the queue cannot be written.
    @discardableResult
    public func submit(_ label: String, _ payload: JSON) async -> Bool {
        let queued: Bool
        do {
            queued = try await store.enqueue(
                service: service, id: RandomID.make("call-"), label: label, payload: payload, now: unixMilliseconds(), limit: policy.maxPending)
        } catch {
            dropped.increment()
            logger.error(
                "outbound queue cannot be written: call dropped", metadata: ["service": "\(service)", "call": "\(label)", "error": "\(error)"])
            return false
        }
        guard queued else {
            dropped.increment()
            logger.error(
                "outbound queue full: call dropped", metadata: ["service": "\(service)", "call": "\(label)", "limit": "\(policy.maxPending)"])
            return false
        }
        wakeups.kick()
        return true
    }

    /// Makes the queued calls until cancelled: at once when one is submitted, else every second.
    public func run() async {
        await wakeups.run(every: .seconds(1)) { await makeDue() }
    }

    /// Makes every call due at `now`, `concurrency` at a time; answers how many were sent.
    @discardableResult
    func makeDue(now: Int64 = unixMilliseconds()) async -> Int {
        var count = 0
        while !Task.isCancelled {
            let due: [QueuedCall]
            do {
                due = try await store.claimDue(service: service, now: now, limit: policy.concurrency, lease: policy.lease.milliseconds)
            } catch {
                logger.error("outbound queue cannot be read", metadata: ["service": "\(service)", "error": "\(error)"])
                return count
            }
            await withTaskGroup(of: Bool.self) { group in
                for call in due { group.addTask { await self.make(call, at: now) } }
                for await made in group where made { count += 1 }
            }
            if due.count < policy.concurrency { return count }
        }
        return count
    }

    /// One attempt at `call`, in the round of `now`; then the queue forgets it (sent, or given
    /// up) or schedules the next attempt after the back-off, counted from when this one failed.
    private func make(_ call: QueuedCall, at now: Int64) async -> Bool {
        let tried = call.attempts + 1
        do {
            try await Self.attempt({ [perform] in try await perform(call.payload) }, within: policy.timeout)
            sent.increment()
            latency.recordMilliseconds(max(0, unixMilliseconds() - call.createdAt))
            await forget(call)
            return true
        } catch {
            guard tried < policy.maxAttempts else {
                failed.increment()
                logger.warning(
                    "outbound call given up",
                    metadata: ["service": "\(service)", "call": "\(call.label)", "attempts": "\(tried)", "error": "\(error)"])
                await forget(call)
                return false
            }
            retried.increment()
            let base = policy.retryBase.milliseconds
            let failedAt = max(now, unixMilliseconds())
            let next = failedAt + RetryBackOff.delay(attempt: tried, base: base, cap: max(base, policy.retryCap.milliseconds))
            do {
                try await store.retry(call.id, attempts: tried, at: next)
            } catch {
                logger.error(
                    "outbound queue cannot record a failure", metadata: ["service": "\(service)", "call": "\(call.label)", "error": "\(error)"])
            }
            return false
        }
    }

    private func forget(_ call: QueuedCall) async {
        do {
            try await store.remove(call.id)
        } catch {
            logger.error("outbound queue cannot forget a call", metadata: ["service": "\(service)", "call": "\(call.label)", "error": "\(error)"])
        }
    }

    /// Runs `body`, throwing `TimedOut` when it has not ended within `timeout`. The body is
    /// cancelled then and no longer awaited: one that ignores cancellation cannot hold the
    /// queue.
    static func attempt(_ body: @escaping @Sendable () async throws -> Void, within timeout: Duration) async throws {
        let outcome = Mutex<CheckedContinuation<Void, any Error>?>(nil)
        let finish = { @Sendable (result: Result<Void, any Error>) in
            outcome.withLock { waiting in
                waiting?.resume(with: result)
                waiting = nil
            }
        }
        let timer = Mutex<Task<Void, Never>?>(nil)
        defer { timer.withLock { $0?.cancel() } }
        try await withCheckedThrowingContinuation { continuation in
            outcome.withLock { $0 = continuation }
            let work = Task {
                do {
                    try await body()
                    finish(.success(()))
                } catch { finish(.failure(error)) }
            }
            timer.withLock {
                $0 = Task {
                    do { try await Task.sleep(for: timeout) } catch { return }
                    work.cancel()
                    finish(.failure(TimedOut(timeout: timeout)))
                }
            }
        }
    }
}
