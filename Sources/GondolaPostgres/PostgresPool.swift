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
/// firewall, a frozen process) holds no caller for long: every statement is bounded by
/// `statementTimeout` (`PostgresConnection.run`), past which its connection is closed and
/// `PostgresPoolError.timedOut` thrown; the pool opens a new connection for the next borrower.
public final class PostgresPool: Sendable {
    public let location: PostgresLocation
    public let size: Int
    public let maxWaiting: Int
    /// The longest one statement may wait for its answer.
    public let statementTimeout: Duration
    /// A statement's bound when the pool is not told another: ten seconds, far above what a
    /// statement of Gondola's takes on a database a few hundred milliseconds away.
    public static let defaultStatementTimeout = Duration.seconds(10)
    public let logger: Logger
    private let group: MultiThreadedEventLoopGroup
    /// Runs a task on the pool's event loop, where its connections' futures complete (see
    /// `EventLoopTaskExecutor`); for work that does little but wait for this pool.
    public let taskExecutor: EventLoopTaskExecutor
    private let configuration: PostgresConnection.Configuration
    private let state = Mutex(State())
    private let nextID = Atomic<Int>(1)
    /// The last connection check's round trip in microseconds; -1 before the first.
    private let checkedRoundTrip = Atomic<Int64>(-1)

    private struct State {
        var idle: [PostgresConnection] = []
        var open = 0
        var waiting: [EventLoopPromise<PostgresConnection>] = []
        var closed = false
    }

    /// A pool for `location`; nothing connects until the first borrow.
    public init(
        location: PostgresLocation, size: Int = 8, maxWaiting: Int = 1000, statementTimeout: Duration = PostgresPool.defaultStatementTimeout,
        logger: Logger = Logger(label: "gondola.postgres")
    ) throws {
        precondition(size > 0)
        self.location = location
        self.size = size
        self.maxWaiting = maxWaiting
        self.statementTimeout = statementTimeout
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

    /// Runs `body` with a connection.
    public func withConnection<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let connection = try await acquire().get()
        defer { release(connection) }
        return try await body(connection)
    }

    /// Checks `connection` (one held for good, as `LISTEN`'s) every `interval` with `SELECT 1`,
    /// bounded by `statementTimeout`: a server gone silent gets the connection closed, which ends
    /// what waits on it, so that its owner connects again. A check that fails is logged even
    /// when its owner, seeing the connection end, has cancelled the watch meanwhile. Ends when
    /// the connection closes or the task is cancelled.
    public func watch(_ connection: PostgresConnection, every interval: Duration = .seconds(2)) async {
        while !connection.isClosed {
            do {
                try await Task.sleep(for: interval)
            } catch {
                return
            }
            do {
                let started = ContinuousClock.now
                try await run("SELECT 1", on: connection)
                let took = ContinuousClock.now - started
                checkedRoundTrip.store(took.components.seconds * 1_000_000 + took.components.attoseconds / 1_000_000_000_000, ordering: .relaxed)
            } catch PostgresPoolError.connectionClosed {
                // Its owner closed it (a loss already logged, or the node stopping): nothing to check.
                return
            } catch {
                logger.error("PostgreSQL connection check failed", metadata: ["database": "\(location)", "error": "\(error)"])
                Self.closeInBackground(connection)
                return
            }
        }
    }

    /// How long the last connection check (`watch`'s `SELECT 1`) took to be answered: what a
    /// statement pays for the network and the server before any work; nil before the first.
    public var roundTrip: Duration? {
        let microseconds = checkedRoundTrip.load(ordering: .relaxed)
        return microseconds < 0 ? nil : .microseconds(microseconds)
    }

    /// Runs one statement and returns its rows.
    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> PostgresQueryResult {
        try await withConnection { connection in try await run(query, on: connection) }
    }

    /// Runs one statement on `connection` (one of this pool's, inside `withConnection`
    /// or `transaction`), within `statementTimeout`.
    @discardableResult
    public func run(_ query: PostgresQuery, on connection: PostgresConnection) async throws -> PostgresQueryResult {
        try await connection.run(query, within: statementTimeout, logger: logger)
    }

    /// Runs `body` in a transaction on one connection.
    public func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await withConnection { connection in
            try await run("BEGIN", on: connection)
            do {
                let value = try await body(connection)
                try await run("COMMIT", on: connection)
                return value
            } catch {
                _ = try? await run("ROLLBACK", on: connection)
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

    /// Gives `connection` back (or, closed, its place, to the next borrower).
    func release(_ connection: PostgresConnection) {
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
            if connection.isClosed {
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

/// Why the pool gave no connection.
public enum PostgresPoolError: Error, Sendable, CustomStringConvertible {
    /// Every connection is in use and `maxWaiting` borrowers already wait.
    case busy(waiting: Int)
    /// The pool was closed.
    case closed
    /// The server did not answer a statement within its bound: its connection was closed.
    case timedOut(Duration)
    /// A statement was sent on a connection already closed (by the server, the network or a bound).
    case connectionClosed

    public var description: String {
        switch self {
        case let .busy(waiting): "every PostgreSQL connection is in use and \(waiting) requests wait"
        case .closed: "the PostgreSQL pool is closed"
        case let .timedOut(timeout): "PostgreSQL did not answer within \(timeout): the connection was closed"
        case .connectionClosed: "the PostgreSQL connection is closed"
        }
    }
}
