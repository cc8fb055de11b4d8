import GondolaProtocol
import Synchronization

/// Who calls an RPC method.
public struct RPCContext: Sendable {
    public let user: String
    public let client: String

    public init(user: String, client: String) {
        self.user = user
        self.client = client
    }
}

/// An RPC method's implementation: takes the call's `data` (nil when absent) and
/// answers a JSON value; throwing a `HubError` answers that error's code.
public typealias RPCHandler = @Sendable (RPCContext, JSON?) async throws -> JSON

/// The table of RPC methods a client may call with the `rpc` command.
public final class RPCRouter: Sendable {
    private let handlers = Mutex<[String: RPCHandler]>([:])

    public init() {}

    /// Adds or replaces the handler of `method`.
    public func register(_ method: String, _ handler: @escaping RPCHandler) {
        handlers.withLock { $0[method] = handler }
    }

    /// Names of the registered methods.
    public var methods: [String] { handlers.withLock { Array($0.keys).sorted() } }

    /// Runs `method`; unknown methods fail with 104, non-hub errors with 100.
    public func call(_ method: String, context: RPCContext, data: RawJSON?) async throws(HubError) -> RawJSON {
        guard let handler = handlers.withLock({ $0[method] }) else { throw .methodNotFound(method) }
        do {
            return RawJSON(try await handler(context, data?.value))
        } catch let error as HubError {
            throw error
        } catch {
            throw .internalError("rpc \(method): \(error)")
        }
    }
}
