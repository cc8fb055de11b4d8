import AsyncHTTPClient
import CoreMetrics
import Crypto
import Foundation
import GondolaDomain
import GondolaHub
import GondolaServices
import Logging
import NIOCore

/// How fence webhooks are posted and retried (`fence_webhook_timeout`,
/// `fence_webhook_retry_base`, `fence_webhook_max_attempts`), and the outbox's limits.
public struct FenceWebhookPolicy: Sendable {
    /// How long one attempt may take.
    public var timeout: Duration = .seconds(5)
    /// Attempts before an event is given up.
    public var maxAttempts = 20
    /// The wait after the first failure; it doubles with each one, up to `retryCap`.
    public var retryBase: Duration = .seconds(1)
    public var retryCap: Duration = .seconds(600)
    /// Most events waiting in the outbox.
    public var maxPending = 100_000
    var batchSize = 50
    /// How long a claimed event is left to its worker before another may take it.
    var lease: Duration = .seconds(60)
    /// How long delivered events are kept.
    var keepDelivered: Duration = .seconds(86_400)

    public init() {}
}

/// Delivers fence events to their trips' webhooks from the durable outbox
/// (`FenceRepository`), never on a request's path: an event is queued with the others of
/// its position, then posted by this worker.
///
/// Each delivery is a `POST` of the event's JSON with `X-Gondola-Event` (its id, the same
/// on every retry) and `X-Gondola-Signature: t=<unix ms>,v1=<hex HMAC-SHA256 of "<t>.<body>"
/// with the trip's webhook secret>`; any 2xx answer delivers it. An attempt gets
/// `policy.timeout`; a failed one is retried after an exponential back-off (from
/// `policy.retryBase`, at most `policy.retryCap`, ±20% jitter) until `policy.maxAttempts`,
/// then given up (logged). A stop between the receiver's answer and the row's update
/// delivers the event again: at least once, with the id to drop repeats. Each worker
/// claims the events it posts for `lease`, so the nodes of a cluster never post one event
/// at once. At most `policy.maxPending` events wait; beyond, new events are not queued
/// for webhooks (counted and logged), and the channels still get them.
///
/// Metrics: `gondola_fence_webhook_deliveries_total{outcome}` (`delivered`, `failed`,
/// `given_up`, `dropped`) and `gondola_fence_webhook_seconds`, the time of each attempt.
final class FenceWebhooks: Sendable {
    /// The outbox holds `maxPending` events.
    struct Full: Error {}

    let repository: any FenceRepository
    let policy: FenceWebhookPolicy
    let logger: Logger
    private let wakeups = DeliveryWakeups()
    private let delivered: Counter
    private let failed: Counter
    private let givenUp: Counter
    private let dropped: Counter
    private let latency: CoreMetrics.Timer

    init(repository: any FenceRepository, policy: FenceWebhookPolicy = FenceWebhookPolicy(), metrics: any MetricsFactory, logger: Logger) {
        self.repository = repository
        self.policy = policy
        self.logger = logger
        func counter(_ outcome: String) -> Counter {
            Counter(label: "gondola_fence_webhook_deliveries_total", dimensions: [("outcome", outcome)], factory: metrics)
        }
        delivered = counter("delivered")
        failed = counter("failed")
        givenUp = counter("given_up")
        dropped = counter("dropped")
        latency = CoreMetrics.Timer(label: "gondola_fence_webhook_seconds", factory: metrics)
    }

    /// Queues `events` of `trip` when the trip has a webhook, and wakes the worker.
    func queue(_ events: [QueuedFenceEvent], of trip: String) async {
        do {
            guard try await repository.webhook(of: trip) != nil else { return }
            try await repository.enqueue(events, limit: policy.maxPending, now: unixMilliseconds())
            wakeups.kick()
        } catch is Full {
            dropped.increment(by: events.count)
            logger.error("fence webhook outbox full: events not queued", metadata: ["trip": "\(trip)", "limit": "\(policy.maxPending)"])
        } catch {
            dropped.increment(by: events.count)
            logger.error("fence webhook outbox: cannot queue", metadata: ["trip": "\(trip)", "error": "\(String(reflecting: error))"])
        }
    }

    /// Delivers due events until cancelled: at once when kicked, else every second.
    func run() async {
        await wakeups.run(every: .seconds(1)) { await deliverDue() }
    }

    /// Posts every event due now; answers how many were delivered.
    @discardableResult
    func deliverDue(now: Int64 = unixMilliseconds()) async -> Int {
        var count = 0
        while !Task.isCancelled {
            let due: [QueuedFenceEvent]
            do {
                due = try await repository.claimDue(now: now, limit: policy.batchSize, lease: policy.lease.milliseconds)
            } catch {
                logger.error("fence webhook outbox: cannot read", metadata: ["error": "\(String(reflecting: error))"])
                return count
            }
            // Each trip's events go in order; different trips' at once.
            await withTaskGroup(of: Int.self) { group in
                for events in Dictionary(grouping: due, by: \.trip).values {
                    group.addTask { await self.deliver(events) }
                }
                for await delivered in group { count += delivered }
            }
            if due.count < policy.batchSize { break }
        }
        do {
            try await repository.forgetDelivered(before: now - policy.keepDelivered.milliseconds)
        } catch {
            logger.error("fence webhook outbox: cannot forget delivered events", metadata: ["error": "\(error)"])
        }
        return count
    }

    /// Posts one trip's due events in order, its webhook read once; answers how many were
    /// delivered. When the webhook cannot be read, the events are tried again once their
    /// claim lapses.
    private func deliver(_ events: [QueuedFenceEvent]) async -> Int {
        guard let trip = events.first?.trip else { return 0 }
        let webhook: FenceWebhook?
        do {
            webhook = try await repository.webhook(of: trip)
        } catch {
            logger.error(
                "fence webhook outbox: cannot read the trip's webhook", metadata: ["trip": "\(trip)", "error": "\(String(reflecting: error))"])
            return 0
        }
        var delivered = 0
        for event in events where await deliver(event, to: webhook) { delivered += 1 }
        return delivered
    }

    private func deliver(_ event: QueuedFenceEvent, to webhook: FenceWebhook?) async -> Bool {
        do {
            guard let webhook else {
                try await repository.markFailed(
                    event.id, attempts: event.attempts, error: "the trip has no webhook any more", next: 0, givenUpAt: unixMilliseconds())
                return false
            }
            let started = ContinuousClock.now
            defer { latency.recordNanoseconds(Int64((ContinuousClock.now - started) / .nanoseconds(1))) }
            try await post(event, to: webhook)
            try await repository.markDelivered(event.id, at: unixMilliseconds())
            delivered.increment()
            return true
        } catch {
            let tried = event.attempts + 1
            let givingUp = tried >= policy.maxAttempts
            let base = policy.retryBase.milliseconds
            let next = unixMilliseconds() + RetryBackOff.delay(attempt: tried, base: base, cap: max(base, policy.retryCap.milliseconds))
            (givingUp ? givenUp : failed).increment()
            do {
                try await repository.markFailed(
                    event.id, attempts: tried, error: "\(error)", next: next, givenUpAt: givingUp ? unixMilliseconds() : nil)
            } catch {
                logger.error("fence webhook outbox: cannot record a failure", metadata: ["event": "\(event.id)", "error": "\(error)"])
            }
            logger.log(
                level: givingUp ? .error : .warning, givingUp ? "fence webhook given up" : "fence webhook failed, will retry",
                metadata: ["event": "\(event.id)", "trip": "\(event.trip)", "attempt": "\(tried)", "error": "\(error)"])
            return false
        }
    }

    private func post(_ event: QueuedFenceEvent, to webhook: FenceWebhook) async throws {
        var request = HTTPClientRequest(url: webhook.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "X-Gondola-Event", value: event.id)
        request.headers.add(name: "X-Gondola-Signature", value: Self.signature(of: event.body, secret: webhook.secret, at: unixMilliseconds()))
        request.body = .bytes(ByteBuffer(bytes: event.body))
        let response = try await HTTPClient.shared.execute(request, timeout: .nanoseconds(Int64(policy.timeout / .nanoseconds(1))))
        _ = try await response.body.collect(upTo: 64 * 1024)
        guard (200..<300).contains(response.status.code) else { throw WebhookAnswer(status: response.status.code) }
    }

    /// `t=<time>,v1=<hex HMAC-SHA256("<time>.<body>")>`: the header a receiver checks.
    static func signature(of body: [UInt8], secret: String, at time: Int64) -> String {
        var signed = Array("\(time).".utf8)
        signed.append(contentsOf: body)
        let mac = HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: Array(secret.utf8)))
        return "t=\(time),v1=" + mac.map { String(format: "%02x", $0) }.joined()
    }

    /// A receiver's answer that is not 2xx.
    struct WebhookAnswer: Error, CustomStringConvertible {
        let status: UInt
        var description: String { "the webhook answered \(status)" }
    }
}
