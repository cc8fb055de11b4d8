import CLoadSocket
import Foundation

/// What a `SocketPool` reports. Every method is called on the pool's loop thread,
/// one at a time, so an implementation needs no locks for state only it touches.
public protocol SocketPoolHandler: AnyObject {
    /// The handshake of `connection` completed.
    func opened(_ connection: Int)
    /// A whole message arrived; `bytes` is valid only during the call.
    func received(_ connection: Int, _ bytes: UnsafeRawBufferPointer, binary: Bool)
    /// `connection` ended or never opened; `code` is the peer's close code (0 if none).
    func closed(_ connection: Int, code: Int, cause: String)
    /// Called every tick while the loop runs.
    func tick()
}

/// WebSocket client connections on one libwebsockets event loop thread.
///
/// `connect`, `send` and `close` must be called on the loop thread, that is from
/// the handler's methods; `stop` may be called from anywhere.
public final class SocketPool: @unchecked Sendable {
    /// The limits of a pool (see `ls_limits`): beyond `maxMessageBytes` a connection
    /// is closed, beyond `maxQueuedBytes` a send is refused.
    public struct Limits: Sendable {
        public var maxConnections: Int
        public var tick: Duration = .milliseconds(1)
        public var maxMessageBytes = 4 << 20
        public var maxQueuedBytes = 1 << 20
        /// Every connection offers permessage-deflate.
        public var offerCompression = false

        public init(maxConnections: Int) { self.maxConnections = maxConnections }
    }

    /// Why a send was not queued.
    public enum SendRefusal: Error, Sendable {
        case notOpen
        case queueFull
    }

    private var pool: OpaquePointer?
    private let handler: Box

    /// A pool for up to `limits.maxConnections` connections; throws with libwebsockets' reason when it cannot start.
    public init(limits: Limits, handler: SocketPoolHandler) throws {
        self.handler = Box(handler)
        let components = limits.tick.components
        let tickMicroseconds = Int32(clamping: components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000)
        let cLimits = ls_limits(
            max_connections: Int32(limits.maxConnections), tick_microseconds: tickMicroseconds,
            max_message_bytes: limits.maxMessageBytes, max_queued_bytes: limits.maxQueuedBytes,
            offer_compression: limits.offerCompression ? 1 : 0)
        let handlers = ls_handlers(
            context: Unmanaged.passUnretained(self.handler).toOpaque(),
            opened: { context, connection in Box.from(context).handler.opened(Int(connection)) },
            received: { context, connection, data, length, binary in
                Box.from(context).handler.received(Int(connection), UnsafeRawBufferPointer(start: data, count: length), binary: binary != 0)
            },
            closed: { context, connection, code, cause in
                Box.from(context).handler.closed(Int(connection), code: Int(code), cause: cause.map { String(cString: $0) } ?? "unknown")
            },
            tick: { context in Box.from(context).handler.tick() }
        )
        var error = [CChar](repeating: 0, count: 256)
        guard let pool = ls_pool_create(cLimits, handlers, &error, error.count) else {
            throw LoadError(String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        self.pool = pool
    }

    deinit {
        if let pool { ls_pool_destroy(pool) }
    }

    /// Runs the loop on a thread of its own until `stop`, then closes every connection.
    public func run() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread { [self] in
                ls_pool_run(pool)
                continuation.resume()
            }
            thread.name = "gondola-load loop"
            thread.start()
        }
    }

    /// Ends the loop; safe from any thread.
    public func stop() { ls_pool_stop(pool) }

    /// Opens `connection` to `url` (ws://host:port/path only), from `sourceAddress` (a local
    /// IPv4 address) when given, else from whatever address the kernel picks.
    public func connect(_ connection: Int, to url: WebSocketURL, subprotocol: String? = nil, from sourceAddress: String? = nil) -> Bool {
        withOptionalCString(subprotocol) { subprotocol in
            withOptionalCString(sourceAddress) { source in
                url.host.withCString { host in
                    url.path.withCString { path in
                        ls_connect(pool, Int32(connection), host, Int32(url.port), path, subprotocol, source) == 0
                    }
                }
            }
        }
    }

    private func withOptionalCString<Result>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> Result) -> Result {
        guard let text else { return body(nil) }
        return text.withCString(body)
    }

    /// Queues one message on an open connection.
    public func send(_ connection: Int, _ bytes: [UInt8], binary: Bool = false) throws(SendRefusal) {
        let result = bytes.withUnsafeBufferPointer { ls_send(pool, Int32(connection), $0.baseAddress, $0.count, binary ? 1 : 0) }
        switch result {
        case 0: return
        case -1: throw .notOpen
        default: throw .queueFull
        }
    }

    /// Closes an open connection (code 1000) once its queue is written.
    public func close(_ connection: Int) { ls_close(pool, Int32(connection)) }

    /// Gives up `connection`'s handshake (see `ls_abandon_handshake`): its `closed` runs at once with `cause`.
    public func abandonHandshake(_ connection: Int, cause: String) { ls_abandon_handshake(pool, Int32(connection), cause) }

    /// Bytes received on the connection's socket as they travelled (TCP payload: WebSocket
    /// framing included, compressed when compression was negotiated); 0 when it is not open.
    public func receivedBytes(_ connection: Int) -> UInt64 { ls_received_bytes(pool, Int32(connection)) }

    /// Keeps the handler alive for the C side, which holds an unretained pointer to it.
    private final class Box {
        let handler: SocketPoolHandler
        init(_ handler: SocketPoolHandler) { self.handler = handler }
        static func from(_ context: UnsafeMutableRawPointer?) -> Box { Unmanaged<Box>.fromOpaque(context!).takeUnretainedValue() }
    }
}

/// A plain `ws://host:port/path` address (the load generator speaks to loopback servers only, without TLS).
public struct WebSocketURL: Sendable, Equatable, CustomStringConvertible {
    public let host: String
    public let port: Int
    public let path: String

    /// Parses `ws://host:port/path`; the error names what is wrong with `text`.
    public init(_ text: String) throws {
        guard text.hasPrefix("ws://") else { throw LoadError("\(text): only ws:// URLs are supported") }
        let rest = text.dropFirst("ws://".count)
        let authority = rest.prefix { $0 != "/" }
        path = rest.count > authority.count ? String(rest.dropFirst(authority.count)) : "/"
        guard let colon = authority.lastIndex(of: ":"), let port = Int(authority[authority.index(after: colon)...]),
            (1...65535).contains(port), colon > authority.startIndex
        else { throw LoadError("\(text): needs a host and a port, e.g. ws://127.0.0.1:8000/connection/websocket") }
        host = String(authority[..<colon])
        self.port = port
    }

    public var description: String { "ws://\(host):\(port)\(path)" }

    /// The hub's HTTP base on the same address (sign-in and the server API).
    public var httpBase: String { "http://\(host):\(port)" }
}

/// A load run could not be set up; the message names the bad value or step.
public struct LoadError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
