import CoreMetrics
import Foundation
import Logging
import Synchronization

/// Calls to one service outside the process (the Telegram Bot API, an SMS gateway), made
/// in the background: a request hands its call here and answers at once, so no request
/// ever waits on the service.
///
/// Calls run in the order they were handed in, at most `concurrency` at once. Each attempt
/// gets `timeout`; a failed or timed-out attempt is tried again after an exponential
/// back-off from `retryBase` (±20% jitter), up to `maxAttempts` attempts in all. At most
/// `maxPending` calls wait: `submit` refuses more (answers false), and the refusal is
/// logged and counted. Calls still waiting when the process stops are not made (what
/// they were about is already stored).
///
/// Metrics: `gondola_outbound_calls_total{service, outcome}` with outcome `sent`, `failed`
/// (given up), `retried` or `dropped` (the queue was full), and
/// `gondola_outbound_call_seconds{service}`, the time from `submit` to the answer.
public final class OutboundCalls: Sendable {
    /// What the queue holds per call.
    struct Call: Sendable {
        let label: String
        let submittedAt: ContinuousClock.Instant
        let body: @Sendable () async throws -> Void
    }

    /// How many attempts, how long each and how far apart.
    public struct Policy: Sendable {
        public var timeout: Duration
        public var maxAttempts: Int
        public var retryBase: Duration
        public var maxPending: Int
        public var concurrency: Int

        public init(
            timeout: Duration = .seconds(10), maxAttempts: Int = 3, retryBase: Duration = .seconds(1), maxPending: Int = 10_000,
            concurrency: Int = 8
        ) {
            self.timeout = timeout
            self.maxAttempts = maxAttempts
            self.retryBase = retryBase
            self.maxPending = maxPending
            self.concurrency = concurrency
        }
    }

    /// An attempt that did not end within the policy's timeout.
    public struct TimedOut: Error, CustomStringConvertible {
        public let timeout: Duration
        public var description: String { "no answer within \(timeout)" }
    }

    public let service: String
    public let policy: Policy
    private let logger: Logger
    private let calls: AsyncStream<Call>
    private let queue: AsyncStream<Call>.Continuation
    private let pending = Atomic<Int>(0)
    private let consumed = Atomic<Bool>(false)
    private let sent: Counter
    private let failed: Counter
    private let retried: Counter
    private let dropped: Counter
    private let latency: CoreMetrics.Timer

    /// A queue of calls to `service` (its name in logs and metrics).
    public init(service: String, policy: Policy = Policy(), metrics: any MetricsFactory = NOOPMetricsHandler.instance, logger: Logger) {
        self.service = service
        self.policy = policy
        self.logger = logger
        (calls, queue) = AsyncStream.makeStream(of: Call.self, bufferingPolicy: .unbounded)
        func counter(_ outcome: String) -> Counter {
            Counter(label: "gondola_outbound_calls_total", dimensions: [("service", service), ("outcome", outcome)], factory: metrics)
        }
        sent = counter("sent")
        failed = counter("failed")
        retried = counter("retried")
        dropped = counter("dropped")
        latency = CoreMetrics.Timer(label: "gondola_outbound_call_seconds", dimensions: [("service", service)], factory: metrics)
    }

    /// Calls waiting or running.
    public var pendingCount: Int { pending.load(ordering: .relaxed) }

    /// Queues `call`; false (logged and counted) when `maxPending` calls already wait.
    @discardableResult
    public func submit(_ label: String, _ call: @escaping @Sendable () async throws -> Void) -> Bool {
        let admitted = pending.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue <= policy.maxPending
        guard admitted else {
            pending.wrappingSubtract(1, ordering: .acquiringAndReleasing)
            dropped.increment()
            logger.error(
                "outbound queue full: call dropped", metadata: ["service": "\(service)", "call": "\(label)", "limit": "\(policy.maxPending)"])
            return false
        }
        queue.yield(Call(label: label, submittedAt: .now, body: call))
        return true
    }

    /// Makes the queued calls until cancelled. Only the first caller runs them.
    public func run() async {
        guard consumed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            for await call in calls {
                if running >= policy.concurrency {
                    await group.next()
                    running -= 1
                }
                group.addTask { await self.make(call) }
                running += 1
            }
        }
    }

    /// Tries `call` until it succeeds, its attempts run out or the task is cancelled.
    private func make(_ call: Call) async {
        defer { pending.wrappingSubtract(1, ordering: .acquiringAndReleasing) }
        for attempt in 1...max(1, policy.maxAttempts) {
            do {
                try await Self.attempt(call.body, within: policy.timeout)
                sent.increment()
                latency.recordNanoseconds(Int64((ContinuousClock.now - call.submittedAt) / .nanoseconds(1)))
                return
            } catch {
                guard attempt < policy.maxAttempts, !Task.isCancelled else {
                    failed.increment()
                    logger.warning(
                        "outbound call given up",
                        metadata: [
                            "service": "\(service)", "call": "\(call.label)", "attempts": "\(attempt)", "error": "\(error)",
                        ])
                    return
                }
                retried.increment()
                let base = Int64(policy.retryBase / .milliseconds(1))
                let wait = RetryBackOff.delay(attempt: attempt, base: base, cap: base * 64)
                do { try await Task.sleep(for: .milliseconds(wait)) } catch { return }
            }
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
