/// Why a Redis command did not get its answer.
public enum RedisError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server answered with an error (`ERR …`, `NOSCRIPT …`, a script's `error_reply`).
    case server(String)
    /// No connection to the server now; the client is reconnecting.
    case unavailable(String)
    /// The connection closed before the answer came; the command may or may not have run.
    case connectionLost(String)
    /// More commands wait for their answers than the connection allows.
    case overloaded(limit: Int)
    /// The server sent bytes that are not RESP; the connection was closed.
    case protocolError(String)
    /// The answer had another shape than the caller expected.
    case unexpectedReply(String)

    public var description: String {
        switch self {
        case let .server(message): "Redis refused the command: \(message)"
        case let .unavailable(reason): "Redis is unavailable: \(reason)"
        case let .connectionLost(reason): "the connection to Redis was lost: \(reason)"
        case let .overloaded(limit): "more than \(limit) Redis commands are waiting for their answers"
        case let .protocolError(message): "Redis sent something that is not RESP: \(message)"
        case let .unexpectedReply(message): "unexpected answer from Redis: \(message)"
        }
    }
}

/// A Redis server's address: `host:port` (the port defaults to 6379).
public struct RedisAddress: Sendable, Hashable, CustomStringConvertible {
    public let host: String
    public let port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `host:port`, `host`, or `redis://host:port`; nil when the port is not a number in 1...65535.
    public init?(_ text: String) {
        var rest = Substring(text)
        if rest.hasPrefix("redis://") { rest = rest.dropFirst("redis://".count) }
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty else { return nil }
        if let colon = rest.lastIndex(of: ":") {
            guard let port = Int(rest[rest.index(after: colon)...]), (1...65535).contains(port), colon > rest.startIndex else { return nil }
            self.init(host: String(rest[..<colon]), port: port)
        } else {
            self.init(host: String(rest), port: 6379)
        }
    }

    public var description: String { "\(host):\(port)" }
}
