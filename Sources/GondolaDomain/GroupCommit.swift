import Synchronization

/// Writes items in batches (group commit): while one batch is written, the items that
/// arrive wait; when it ends, everything waiting (at most `maxBatch`) is written in one
/// call, and each caller resumes with its item's outcome once that call returns. One write
/// runs at a time, on a task of its own (on `executor` when given, for writes that block
/// their thread). What waits is bounded by the callers: each waits for its own item, or,
/// given a callback, counts the items it has not heard back about.
///
/// Its methods are inlinable, so a module that uses it with concrete types gets them
/// specialised rather than looking up the generic types' metadata on every call.
public final class GroupCommit<Item: Sendable, Outcome: Sendable>: Sendable {
    /// Writes a batch and gives one outcome per item, in order.
    public typealias Write = @Sendable ([Item]) async -> [Outcome]

    @usableFromInline
    struct Waiting: Sendable {
        @usableFromInline let item: Item
        @usableFromInline let done: @Sendable (Outcome) -> Void

        @inlinable init(item: Item, done: @escaping @Sendable (Outcome) -> Void) {
            self.item = item
            self.done = done
        }
    }

    @usableFromInline let maxBatch: Int
    @usableFromInline let executor: (any TaskExecutor)?
    @usableFromInline let write: Write
    @usableFromInline let waiting = Mutex<(entries: [Waiting], writing: Bool)>(([], false))

    public init(maxBatch: Int, executor: (any TaskExecutor)? = nil, write: @escaping Write) {
        precondition(maxBatch > 0, "a batch holds at least one item")
        self.maxBatch = maxBatch
        self.executor = executor
        self.write = write
    }

    /// Items waiting for a write to take them (not counting the batch being written).
    @inlinable public var waitingCount: Int { waiting.withLock { $0.entries.count } }

    /// Writes `item` with the batch it joins and returns its outcome.
    @inlinable public func commit(_ item: Item) async -> Outcome {
        await withCheckedContinuation { continuation in
            commit(item) { continuation.resume(returning: $0) }
        }
    }

    /// Writes `item` with the batch it joins and calls `done` with its outcome, on the
    /// writing task, once that batch is written: for callers that do not wait in a task.
    @inlinable public func commit(_ item: Item, then done: @escaping @Sendable (Outcome) -> Void) {
        let start = waiting.withLock { waiting -> Bool in
            waiting.entries.append(Waiting(item: item, done: done))
            guard !waiting.writing else { return false }
            waiting.writing = true
            return true
        }
        if start { Task(executorPreference: executor) { await self.drain() } }
    }

    @inlinable func drain() async {
        while true {
            let batch = waiting.withLock { waiting -> [Waiting] in
                let batch = Array(waiting.entries.prefix(maxBatch))
                waiting.entries.removeFirst(batch.count)
                if batch.isEmpty { waiting.writing = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            let outcomes = await write(batch.map(\.item))
            precondition(outcomes.count == batch.count, "a group commit's write gives one outcome per item")
            for (entry, outcome) in zip(batch, outcomes) { entry.done(outcome) }
        }
    }
}
