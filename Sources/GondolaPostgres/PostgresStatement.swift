import Logging
import NIOCore
import PostgresNIO

extension PostgresConnection {
    /// Runs one statement: the way every statement of Gondola's goes, for two guarantees
    /// postgres-nio's own `query` lacks.
    ///
    /// - It fails at once with `PostgresPoolError.connectionClosed` on a closed connection.
    ///   postgres-nio writes a statement to its channel without a promise, and a channel that
    ///   has closed drops the write, so its caller would wait for good. The check and the write
    ///   happen together on the connection's event loop, where a channel still open takes the
    ///   write into postgres-nio's handler, which answers it even if the connection closes next.
    /// - An answer that has not come within `timeout` (a partition, a blackholing firewall, a
    ///   frozen server: the socket stays open and nothing comes back) closes the connection,
    ///   which fails whatever else waits on it, and the statement fails with
    ///   `PostgresPoolError.timedOut`. The deadline runs on the event loop, from the write to
    ///   the answer, so a caller's task that is slow to resume does not count against it.
    public func run(_ query: PostgresQuery, within timeout: Duration, logger: Logger) -> EventLoopFuture<PostgresQueryResult> {
        // The bus writer already runs on the connection's event loop: no hop for it.
        guard eventLoop.inEventLoop else { return eventLoop.flatSubmit { self.run(query, within: timeout, logger: logger) } }
        guard !isClosed else { return eventLoop.makeFailedFuture(PostgresPoolError.connectionClosed) }
        let answer = eventLoop.makePromise(of: PostgresQueryResult.self)
        let expired = NIOLoopBoundBox(false, eventLoop: eventLoop)
        let deadline = eventLoop.scheduleTask(in: TimeAmount(timeout)) {
            expired.value = true
            // Failed once the connection is closed, so that the pool, given the connection back,
            // sees it closed and never hands it out again.
            self.closeFuture.whenComplete { _ in answer.fail(PostgresPoolError.timedOut(timeout)) }
            let closing: EventLoopFuture<Void> = self.close()
            _ = closing
        }
        self.query(query, logger: logger).whenComplete { outcome in
            deadline.cancel()
            // Past the deadline the statement's own failure (the connection closed) is not the reason.
            if !expired.value { answer.completeWith(outcome) }
        }
        return answer.futureResult
    }

    /// `run(_:within:logger:)`, awaited.
    @discardableResult
    public func run(_ query: PostgresQuery, within timeout: Duration, logger: Logger) async throws -> PostgresQueryResult {
        try await run(query, within: timeout, logger: logger).get()
    }
}
