import Foundation

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
    /// The ACL user to authenticate as; nil with a password alone is Redis's `default` user.
    public let username: String?
    /// The password (`requirepass`, or the ACL user's); nil: no authentication.
    public let password: String?
    /// The logical database the connection selects (`SELECT`); 0 is Redis's default.
    public let database: Int
    /// How the connection is encrypted (`rediss://`); nil: plain TCP.
    public var tls: RedisTLS?

    public init(host: String, port: Int, username: String? = nil, password: String? = nil, database: Int = 0, tls: RedisTLS? = nil) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
    }

    /// Parses `host:port`, `host`, or a URL `redis://[[user]:password@]host[:port][/db]` (user
    /// and password percent-encoded; `rediss://` for TLS, with the system's trust roots until
    /// `tls` says otherwise); nil when the port is not a number in 1...65535 or the database
    /// not one in 0...15 (Redis's default number of databases).
    public init?(_ text: String) {
        var rest = Substring(text)
        var username: String?
        var password: String?
        var database = 0
        var tls: RedisTLS?
        if rest.hasPrefix("rediss://") {
            rest = "redis://" + rest.dropFirst("rediss://".count)
            tls = RedisTLS()
        }
        if rest.hasPrefix("redis://") {
            rest = rest.dropFirst("redis://".count)
            if let at = rest.lastIndex(of: "@") {
                let credentials = rest[..<at]
                rest = rest[rest.index(after: at)...]
                if let colon = credentials.firstIndex(of: ":") {
                    let user = credentials[..<colon]
                    username = user.isEmpty ? nil : String(user).removingPercentEncoding
                    password = String(credentials[credentials.index(after: colon)...]).removingPercentEncoding
                    guard password != nil, user.isEmpty || username != nil else { return nil }
                } else {
                    guard let user = String(credentials).removingPercentEncoding, !user.isEmpty else { return nil }
                    username = user
                }
            }
            if let slash = rest.firstIndex(of: "/") {
                let path = rest[rest.index(after: slash)...].drop { $0 == "/" }
                rest = rest[..<slash]
                if !path.isEmpty {
                    guard let number = Int(path), (0...15).contains(number) else { return nil }
                    database = number
                }
            }
        }
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty else { return nil }
        if let colon = rest.lastIndex(of: ":") {
            guard let port = Int(rest[rest.index(after: colon)...]), (1...65535).contains(port), colon > rest.startIndex else { return nil }
            self.init(host: String(rest[..<colon]), port: port, username: username, password: password, database: database, tls: tls)
        } else {
            self.init(host: String(rest), port: 6379, username: username, password: password, database: database, tls: tls)
        }
    }

    /// Whether `text` (as `init` reads it) gives a port.
    public static func namesPort(_ text: String) -> Bool {
        var rest = Substring(text)
        if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        return rest.prefix { $0 != "/" }.contains(":")
    }

    /// `text` with the password of a `redis://` URL replaced by `***`, for messages about it.
    public static func redacted(_ text: String) -> String {
        guard let scheme = ["redis://", "rediss://"].first(where: text.hasPrefix), let at = text.lastIndex(of: "@") else { return text }
        let credentials = text[text.index(text.startIndex, offsetBy: scheme.count)..<at]
        guard let colon = credentials.firstIndex(of: ":") else { return text }
        return scheme + credentials[..<colon] + ":***" + text[at...]
    }

    /// `host:port` (and `/db` when not 0, ` (TLS)` when encrypted): what logs and `/health`
    /// show, never the credentials.
    public var description: String {
        (database == 0 ? "\(host):\(port)" : "\(host):\(port)/\(database)") + (tls == nil ? "" : " (TLS)")
    }
}

/// A TLS connection's trust and identity, as files: the CA that signed the server's
/// certificate (the system's trust roots when nil), and the client's certificate and key for
/// a server that asks for one (`tls-auth-clients yes`). The server's certificate must name
/// the host the address connects to (or `serverName`).
public struct RedisTLS: Sendable, Hashable {
    public var caFile: String?
    public var certificateFile: String?
    public var keyFile: String?
    public var serverName: String?

    public init(caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil, serverName: String? = nil) {
        self.caFile = caFile
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.serverName = serverName
    }
}
