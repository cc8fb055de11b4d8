import GondolaProtocol
import Synchronization

/// Who calls an RPC method, and how it may answer early.
public struct RPCContext: Sendable {
    public let user: String
    public let client: String
    /// Answers the call before the method returns; nil where nobody waits for a reply.
    public let answer: RPCAnswer?

    public init(user: String, client: String, answer: RPCAnswer? = nil) {
        self.user = user
        self.client = client
        self.answer = answer
    }
}

/// The reply of one RPC call, sent at most once. A method that learns its result on
/// another thread (e.g. right after a database commit) sends it from there, so the
/// reply does not wait until the calling task is scheduled again; what the method
/// returns or throws afterwards is not sent.
public final class RPCAnswer: Sendable {
    private let sent = Atomic<Bool>(false)
    private let send: @Sendable (RawJSON) -> Void

    /// An answer that hands its result to `send` (the first time only).
    public init(_ send: @escaping @Sendable (RawJSON) -> Void) {
        self.send = send
    }

    /// Sends `result` as the reply unless one was sent already.
    public func callAsFunction(_ result: JSON) {
        guard claim() else { return }
        send(RawJSON(result))
    }

    /// Whether the reply was sent (what the method returns is then dropped).
    public var wasSent: Bool { sent.load(ordering: .acquiring) }

    /// True for the first caller only: that caller sends the reply.
    public func claim() -> Bool {
        sent.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }
}

/// An RPC method's implementation: takes the call's `data` (nil when absent) and
/// answers a JSON value; throwing a `HubError` answers that error's code.
public typealias RPCHandler = @Sendable (RPCContext, JSON?) async throws -> JSON

/// The table of RPC methods a client may call with the `rpc` command.
public final class RPCRouter: Sendable {
    private let handlers = Mutex<[String: RPCHandler]>([:])

    public init() {}

    /// Adds the handler of `method` (`Node.install` has checked that no one else claimed it).
    func register(_ method: String, _ handler: @escaping RPCHandler) {
        handlers.withLock { $0[method] = handler }
    }

    /// Whether a handler is registered for `method`.
    public func serves(_ method: String) -> Bool { handlers.withLock { $0[method] != nil } }

    /// Names of the registered methods.
    public var methods: [String] { handlers.withLock { Array($0.keys).sorted() } }

    /// Runs `method`; unknown methods fail with 104, non-hub errors with 100.
    public func call(_ method: String, context: RPCContext, data: JSON?) async throws(HubError) -> RawJSON {
        guard let handler = handlers.withLock({ $0[method] }) else { throw .methodNotFound(method) }
        do {
            return RawJSON(try await handler(context, data))
        } catch let error as HubError {
            throw error
        } catch {
            throw .internalError("rpc \(method): \(error)")
        }
    }
}
