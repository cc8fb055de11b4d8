import Foundation
import PostgresNIO

/// Where a PostgreSQL database is, read from a `postgres://` URL:
/// `postgres://user:password@host:port/database` over TCP, or
/// `postgres://user@/database?host=/path/to/folder` over the Unix socket
/// `.s.PGSQL.<port>` in that folder (as libpq reads it). `sslmode=require` asks for
/// TLS; anything else, or nothing, connects without.
public struct PostgresLocation: Sendable, CustomStringConvertible {
    public let username: String
    public let password: String?
    public let database: String
    /// A TCP host and port, or nil with `socketPath` set.
    public let host: String?
    public let port: Int
    /// The Unix socket's path, when the URL names a folder.
    public let socketPath: String?
    public let requiresTLS: Bool

    /// Whether `text` is meant as a PostgreSQL URL rather than a SQLite path.
    public static func isURL(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// Parses `url`; the error names what is wrong with it.
    public init(url text: String) throws(PostgresLocationError) {
        guard Self.isURL(text), let components = URLComponents(string: text) else {
            throw PostgresLocationError("expected postgres://user:password@host:port/database, got '\(Self.redacted(text))'")
        }
        guard let user = components.user, !user.isEmpty else {
            throw PostgresLocationError("'\(Self.redacted(text))' names no user (postgres://USER@host/database)")
        }
        let name = String(components.path.drop(while: { $0 == "/" }))
        guard !name.isEmpty, !name.contains("/") else {
            throw PostgresLocationError("'\(Self.redacted(text))' names no database (postgres://user@host/DATABASE)")
        }
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        let port = components.port ?? query["port"].flatMap(Int.init) ?? 5432
        guard (1...65535).contains(port) else { throw PostgresLocationError("port \(port) is out of range") }
        let queryHost = query["host"].flatMap { $0.isEmpty ? nil : $0 }
        let host = components.host.flatMap { $0.isEmpty ? nil : $0.removingPercentEncoding } ?? queryHost
        guard let host else {
            throw PostgresLocationError("'\(Self.redacted(text))' names no host (a name, or ?host=/socket/folder)")
        }
        self.username = user.removingPercentEncoding ?? user
        self.password = components.password.map { $0.removingPercentEncoding ?? $0 }
        self.database = name.removingPercentEncoding ?? name
        self.port = port
        if host.hasPrefix("/") {
            self.host = nil
            self.socketPath = (host as NSString).appendingPathComponent(".s.PGSQL.\(port)")
        } else {
            self.host = host
            self.socketPath = nil
        }
        switch query["sslmode"] ?? "disable" {
        case "disable", "allow", "prefer": requiresTLS = false
        case "require", "verify-ca", "verify-full": requiresTLS = true
        case let other: throw PostgresLocationError("sslmode '\(other)' is not one of disable, prefer, require")
        }
    }

    /// The connection settings for postgres-nio.
    public func configuration() throws -> PostgresConnection.Configuration {
        if let socketPath {
            return .init(unixSocketPath: socketPath, username: username, password: password, database: database)
        }
        let tls: PostgresConnection.Configuration.TLS =
            requiresTLS
            ? .require(try NIOSSLContext(configuration: .makeClientConfiguration())) : .disable
        return .init(host: host ?? "localhost", port: port, username: username, password: password, database: database, tls: tls)
    }

    /// The location without its password, for logs.
    public var description: String {
        if let socketPath { return "postgres://\(username)@/\(database) (socket \(socketPath))" }
        return "postgres://\(username)@\(host ?? ""):\(port)/\(database)"
    }

    /// `text` (a `postgres://` URL or a file path) with its password, if any, as `***`.
    public static func redacted(_ text: String) -> String {
        guard var components = URLComponents(string: text), components.password != nil else { return text }
        components.password = "***"
        return components.string ?? text
    }
}

/// A `postgres://` URL that cannot be used.
public struct PostgresLocationError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
