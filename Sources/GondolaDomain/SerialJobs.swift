import GondolaHub
import Logging

/// Runs a domain's background jobs one at a time, in the order they were submitted: what
/// another node of a cluster changed is read again from the database, and two reads of the
/// same rows must not land in memory out of order. At most `limit` jobs wait; a job past
/// it is dropped and logged (memory then stays behind until the next change or the next
/// resynchronisation, and every domain reads the database before it refuses a request).
public final class SerialJobs: Sendable {
    /// One queued job.
    public typealias Job = @Sendable () async -> Void

    private let jobs: AsyncStream<Job>.Continuation
    private let name: String
    private let logger: Logger

    /// Jobs named `name` in the log; the worker task lives as long as this value.
    public init(name: String, limit: Int = 10_000, logger: Logger) {
        let (stream, jobs) = AsyncStream.makeStream(of: Job.self, bufferingPolicy: .bufferingOldest(limit))
        self.jobs = jobs
        self.name = name
        self.logger = logger
        Task {
            for await job in stream { await job() }
        }
    }

    deinit {
        jobs.finish()
    }

    /// Queues `job` after every job submitted before it.
    public func submit(_ job: @escaping Job) {
        if case .dropped = jobs.yield(job) {
            logger.error("background job dropped: too many waiting", metadata: ["jobs": "\(name)"])
        }
    }
}

extension NodeRegistrations {
    /// Reloads what a domain keeps in memory (a catalog) when another node of a cluster
    /// changed it, one reload at a time through `reads`, and when the node (re)gains the bus.
    /// `payload` is what the changing node sends (any change reloads everything), and
    /// `effect` names what is reloaded, for the catalog.
    public mutating func reloadOnChange<Payload: ReplicaPayload>(
        topic: String, _ payload: Payload.Type, effect: String, through reads: SerialJobs, _ reload: @escaping @Sendable () async -> Void
    ) {
        onReplica(topic: topic, payload, effect: effect) { _ in reads.submit(reload) }
        onResynchronize(reload)
    }
}
