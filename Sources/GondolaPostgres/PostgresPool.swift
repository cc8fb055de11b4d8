import GondolaHub
import GondolaRuntime
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// A fixed number of PostgreSQL connections on an event loop of their own.
///
/// Every call is asynchronous: a borrower that waits for a connection or a query is a
/// suspended task, never a blocked thread. Connections open lazily up to `size`; one that
/// closes (the server restarted, the network broke) is replaced on the next borrow.
/// At most `maxWaiting` borrowers wait for a free connection; more are refused with
/// `PostgresPoolError.busy`.
///
/// A server that stops answering without closing the socket (a partition, a blackholing
/// firewall) holds no caller for long: a borrow that has not finished within `callTimeout`
/// closes its connection, which fails the statement under way, and throws
/// `PostgresPoolError.timedOut`; the pool opens a new connection for the next borrower.
public final class PostgresPool: Sendable {
    public let location: PostgresLocation
    public let size: Int
    public let maxWaiting: Int
    /// The longest a borrow (`withConnection`, `query`, `transaction`) may take.
    public let callTimeout: Duration
    /// A borrow's bound when the pool is not told another: ten seconds, far above what a
    /// statement of Gondola's takes on a database a few hundred milliseconds away.
    public static let defaultCallTimeout = Duration.seconds(10)
    public let logger: Logger
    private let group: MultiThreadedEventLoopGroup
    /// Runs a task on the pool's event loop, where its connections' futures complete (see
    /// `EventLoopTaskExecutor`); for work that does little but wait for this pool.
    public let taskExecutor: EventLoopTaskExecutor
    private let configuration: PostgresConnection.Configuration
    private let state = Mutex(State())
    private let nextID = Atomic<Int>(1)

    private struct State {
        var idle: [PostgresConnection] = []
        var open = 0
        var waiting: [EventLoopPromise<PostgresConnection>] = []
        var closed = false
    }

    /// A pool for `location`; nothing connects until the first borrow.
    public init(
        location: PostgresLocation, size: Int = 8, maxWaiting: Int = 1000, callTimeout: Duration = PostgresPool.defaultCallTimeout,
        logger: Logger = Logger(label: "gondola.postgres")
    ) throws {
        precondition(size > 0)
        self.location = location
        self.size = size
        self.maxWaiting = maxWaiting
        self.callTimeout = callTimeout
        self.logger = logger
        self.configuration = try location.configuration()
        self.group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.taskExecutor = EventLoopTaskExecutor(group.next())
    }

    deinit {
        // Connections must be closed before they go; each stays referenced until it is.
        for connection in state.withLock({ $0.idle }) { Self.closeInBackground(connection) }
        group.shutdownGracefully { _ in }
    }

    // MARK: Borrowing

    /// Runs `body` with a connection, within `callTimeout`; a connection whose call ran past it is
    /// closed and never handed out again (its close may still be under way when the call returns).
    public func withConnection<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let connection = try await acquire().get()
        do {
            let value = try await Self.bounded(connection, within: callTimeout) { try await body(connection) }
            release(connection)
            return value
        } catch let error as PostgresPoolError {
            if case .timedOut = error { release(connection, discarding: true) } else { release(connection) }
            throw error
        } catch {
            release(connection)
            throw error
        }
    }

    /// Runs `body` on `connection`; when it has not finished within `timeout` the connection
    /// is closed (failing what it was doing) and `PostgresPoolError.timedOut` is thrown.
    public static func bounded<T: Sendable>(
        _ connection: PostgresConnection, within timeout: Duration, _ body: () async throws -> T
    ) async throws -> T {
        let expired = ExpiryFlag()
        let deadline = connection.eventLoop.scheduleTask(in: .milliseconds(timeout.milliseconds)) {
            expired.raised.store(true, ordering: .releasing)
            closeInBackground(connection)
        }
        defer { deadline.cancel() }
        do {
            return try await body()
        } catch {
            if expired.raised.load(ordering: .acquiring) { throw PostgresPoolError.timedOut(timeout) }
            throw error
        }
    }

    /// Checks `connection` (one held for good, as `LISTEN`'s) every `interval` with `SELECT 1`,
    /// bounded by `callTimeout`: a server gone silent gets the connection closed, which ends
    /// what waits on it, so that its owner connects again. Ends when the connection closes or
    /// the task is cancelled.
    public func watch(_ connection: PostgresConnection, every interval: Duration = .seconds(2)) async {
        while !Task.isCancelled, !connection.isClosed {
            do {
                try await Task.sleep(for: interval)
                try await Self.bounded(connection, within: callTimeout) { _ = try await connection.query("SELECT 1", logger: logger).get() }
            } catch {
                if !Task.isCancelled, !connection.isClosed {
                    logger.error("PostgreSQL connection check failed", metadata: ["database": "\(location)", "error": "\(error)"])
                    Self.closeInBackground(connection)
                }
                return
            }
        }
    }

    /// Runs one statement and returns its rows.
    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> PostgresQueryResult {
        try await withConnection { connection in try await connection.query(query, logger: logger).get() }
    }

    /// Runs one statement on `connection` (one of this pool's, inside `withConnection`
    /// or `transaction`).
    @discardableResult
    public func run(_ query: PostgresQuery, on connection: PostgresConnection) async throws -> PostgresQueryResult {
        try await connection.query(query, logger: logger).get()
    }

    /// Runs `body` in a transaction on one connection.
    public func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await withConnection { connection in
            try await connection.query("BEGIN", logger: logger).get()
            do {
                let value = try await body(connection)
                try await connection.query("COMMIT", logger: logger).get()
                return value
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger).get()
                throw error
            }
        }
    }

    /// A connection of its own, outside the pool (for `LISTEN`, which holds one for good).
    public func dedicatedConnection() async throws -> PostgresConnection {
        try await PostgresConnection.connect(
            on: group.next(), configuration: configuration, id: nextID.add(1, ordering: .relaxed).oldValue, logger: logger)
    }

    /// Closes `connection` without waiting; it stays referenced until it is closed.
    public static func closeInBackground(_ connection: PostgresConnection) {
        connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// Closes every idle connection; borrowers after this are refused.
    public func close() async {
        let (idle, waiting) = state.withLock { state in
            state.closed = true
            defer {
                state.idle = []
                state.waiting = []
            }
            return (state.idle, state.waiting)
        }
        for promise in waiting { promise.fail(PostgresPoolError.closed) }
        for connection in idle { try? await connection.close() }
    }

    // MARK: The pool

    private enum Grant {
        case connection(PostgresConnection)
        case open
        case wait(EventLoopPromise<PostgresConnection>)
        case refuse(PostgresPoolError)
    }

    func acquire() -> EventLoopFuture<PostgresConnection> {
        let eventLoop = group.next()
        let grant = state.withLock { state -> Grant in
            guard !state.closed else { return .refuse(.closed) }
            while let connection = state.idle.popLast() {
                if !connection.isClosed { return .connection(connection) }
                state.open -= 1
            }
            if state.open < size {
                state.open += 1
                return .open
            }
            guard state.waiting.count < maxWaiting else { return .refuse(.busy(waiting: state.waiting.count)) }
            let promise = eventLoop.makePromise(of: PostgresConnection.self)
            state.waiting.append(promise)
            return .wait(promise)
        }
        switch grant {
        case let .connection(connection): return eventLoop.makeSucceededFuture(connection)
        case .open: return connect(on: eventLoop)
        case let .wait(promise): return promise.futureResult
        case let .refuse(error): return eventLoop.makeFailedFuture(error)
        }
    }

    private func connect(on eventLoop: any EventLoop) -> EventLoopFuture<PostgresConnection> {
        let id = nextID.add(1, ordering: .relaxed).oldValue
        return PostgresConnection.connect(on: eventLoop, configuration: configuration, id: id, logger: logger)
            .flatMapErrorThrowing { [self] error in
                state.withLock { $0.open -= 1 }
                logger.error("cannot connect to PostgreSQL", metadata: ["database": "\(location)", "error": "\(String(reflecting: error))"])
                throw error
            }
    }

    /// Gives `connection` back (or, closed or `discarding`, its place, to the next borrower).
    func release(_ connection: PostgresConnection, discarding: Bool = false) {
        enum Next {
            case give(EventLoopPromise<PostgresConnection>, PostgresConnection)
            case open(EventLoopPromise<PostgresConnection>)
            case none, close
        }
        let next = state.withLock { state -> Next in
            if state.closed {
                state.open -= 1
                return .close
            }
            if connection.isClosed || discarding {
                state.open -= 1
                guard !state.waiting.isEmpty else { return .none }
                state.open += 1
                return .open(state.waiting.removeFirst())
            }
            if !state.waiting.isEmpty { return .give(state.waiting.removeFirst(), connection) }
            state.idle.append(connection)
            return .none
        }
        switch next {
        case let .give(promise, connection): promise.succeed(connection)
        case let .open(promise): promise.completeWith(connect(on: promise.futureResult.eventLoop))
        case .close: Self.closeInBackground(connection)
        case .none: break
        }
    }
}

/// Whether a bounded call's deadline passed (set on the connection's event loop, read by the caller).
private final class ExpiryFlag: Sendable {
    let raised = Atomic<Bool>(false)
}

/// Why the pool gave no connection.
public enum PostgresPoolError: Error, Sendable, CustomStringConvertible {
    /// Every connection is in use and `maxWaiting` borrowers already wait.
    case busy(waiting: Int)
    /// The pool was closed.
    case closed
    /// The server did not finish the call within the pool's `callTimeout`: its connection was closed.
    case timedOut(Duration)

    public var description: String {
        switch self {
        case let .busy(waiting): "every PostgreSQL connection is in use and \(waiting) requests wait"
        case .closed: "the PostgreSQL pool is closed"
        case let .timedOut(timeout): "PostgreSQL did not answer within \(timeout): the connection was closed"
        }
    }
}
