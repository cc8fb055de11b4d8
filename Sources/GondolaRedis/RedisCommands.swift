import GondolaRESP

/// A command and who hears its answer (an error answer as `RedisError.server`).
public struct RedisCommand: Sendable {
    public let arguments: [[UInt8]]
    public let completion: @Sendable (Result<RESPValue, RedisError>) -> Void

    public init(arguments: [[UInt8]], completion: @escaping @Sendable (Result<RESPValue, RedisError>) -> Void) {
        self.arguments = arguments
        self.completion = completion
    }
}

/// What sends Redis commands in the order of the calls: a connection, a client, or
/// the cluster bus that shares a client's connection with its own messages.
public protocol RedisCommands: Sendable {
    /// Sends a command at once (after those sent before it) and calls `completion` with its answer.
    func send(bytes arguments: [[UInt8]], completion: @escaping @Sendable (Result<RESPValue, RedisError>) -> Void)
}

extension RedisCommands {
    /// Sends a command and waits for its answer (the task waits, no thread does); an
    /// error answer throws `RedisError.server`.
    public func send(bytes arguments: [[UInt8]]) async throws(RedisError) -> RESPValue {
        try await withCheckedContinuation { continuation in
            send(bytes: arguments) { continuation.resume(returning: $0) }
        }.get()
    }

    /// `send` with text arguments.
    public func send(_ arguments: [String]) async throws(RedisError) -> RESPValue {
        try await send(bytes: arguments.map { Array($0.utf8) })
    }
}
