import GondolaRESP
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// One connection to a Redis server, speaking RESP3 (`HELLO 3` at connect, with `AUTH` when
/// the address has a password, then `SELECT` when it names a database other than 0), over
/// TLS (swift-nio-ssl) when the address asks for it.
/// Commands are pipelined: each is written at once and answers are matched in the
/// order the server sends them, at most `maxPending` waiting (more are refused with
/// `RedisError.overloaded`). Out-of-band pushes (Pub/Sub messages) go to `pushes`,
/// on the connection's event loop; the push confirming a (un)subscription answers
/// its command. When the connection closes, every waiting
/// command fails with `connectionLost` and `closed` is called once.
///
/// A server that stops answering without closing the socket (a partition, a blackholing
/// firewall, a frozen process) is found by `RedisLiveness`: a connection idle for its
/// `interval` sends `PING`, and one whose oldest command has waited past its `timeout` for an
/// answer is closed, so that every command is answered within that bound (the waiting ones
/// with `connectionLost`) and the owner reconnects.
public final class RedisConnection: RedisCommands {
    /// Commands waiting for their answers on one connection before more are refused.
    public static let defaultMaxPending = 10_000

    let channel: Channel
    public let address: RedisAddress
    /// Why the connection closed, once it has: what a command sent after that is told.
    private let closeReason: NIOLockedValueBox<String?>

    private init(channel: Channel, address: RedisAddress, closeReason: NIOLockedValueBox<String?>) {
        self.channel = channel
        self.address = address
        self.closeReason = closeReason
    }

    /// Connects and switches to RESP3 within `connectTimeout` (the TCP connection, and again
    /// the handshake); throws `unavailable` when the server cannot be reached.
    public static func connect(
        to address: RedisAddress, on group: any EventLoopGroup, connectTimeout: TimeAmount = .seconds(2),
        maxPending: Int = defaultMaxPending, liveness: RedisLiveness = RedisLiveness(),
        pushes: @escaping @Sendable (RESPValue) -> Void = { _ in },
        closed: @escaping @Sendable (String) -> Void = { _ in }
    ) async throws(RedisError) -> RedisConnection {
        let tls: NIOSSLContext?
        do {
            tls = try address.tls.map(Self.context)
        } catch {
            throw .unavailable("cannot set up TLS for \(address): \(error)")
        }
        // A host name is checked against the certificate and sent as SNI; an IP address is only checked.
        let isIPAddress = (try? SocketAddress(ipAddress: address.host, port: 0)) != nil
        let serverName = address.tls?.serverName ?? (isIPAddress ? nil : address.host)
        let channel: Channel
        let closeReason = NIOLockedValueBox<String?>(nil)
        do {
            channel = try await ClientBootstrap(group: group)
                .connectTimeout(connectTimeout)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let tls {
                            try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverName))
                        }
                        try channel.pipeline.syncOperations.addHandler(
                            RESPChannelHandler(
                                peer: "\(address)", maxPending: maxPending, liveness: liveness, pushes: pushes,
                                closed: { reason in
                                    closeReason.withLockedValue { $0 = reason }
                                    closed(reason)
                                }))
                    }
                }
                .connect(host: address.host, port: address.port).get()
        } catch {
            throw .unavailable("cannot connect to \(address): \(error)")
        }
        let connection = RedisConnection(channel: channel, address: address, closeReason: closeReason)
        // A server that accepted the connection but does not answer (one being killed or
        // started) must not hold the caller: past the timeout the connection is closed,
        // which fails the handshake, and the caller tries again. The answer and the timeout
        // both run on the connection's event loop, so an answer that came first always wins.
        let answered = NIOLockedValueBox(false)
        let timedOut = NIOLockedValueBox(false)
        let handshakeTimeout = channel.eventLoop.scheduleTask(in: connectTimeout) {
            guard !answered.withLockedValue({ $0 }) else { return }
            timedOut.withLockedValue { $0 = true }
            connection.close()
        }
        defer { handshakeTimeout.cancel() }
        do throws(RedisError) {
            var helloCommand = [Array("HELLO".utf8), Array("3".utf8)]
            if let password = address.password {
                helloCommand += [Array("AUTH".utf8), Array((address.username ?? "default").utf8), Array(password.utf8)]
            }
            let handshake = helloCommand
            let hello: RESPValue
            do throws(RedisError) {
                hello = try await withCheckedContinuation { continuation in
                    connection.send(bytes: handshake) { result in
                        answered.withLockedValue { $0 = true }
                        continuation.resume(returning: result)
                    }
                }.get()
            } catch let .server(message) {
                // NOAUTH (a password is needed), WRONGPASS, or a server older than RESP3.
                throw RedisError.unavailable("\(address) refused the handshake: \(message)")
            } catch let .connectionLost(reason) {
                // A TLS handshake that failed (a certificate refused either way), or a server going away.
                if timedOut.withLockedValue({ $0 }) {
                    throw RedisError.unavailable("\(address) did not answer the handshake within \(connectTimeout.nanoseconds / 1_000_000) ms")
                }
                let why = Self.tlsFailure(reason, tls: address.tls).map { "\($0) (\(reason))" } ?? reason
                throw RedisError.unavailable("\(address) closed the connection during the handshake: \(why)")
            }
            guard case .map = hello else { throw RedisError.unexpectedReply("HELLO 3 answered \(hello)") }
            if address.database != 0 {
                _ = try await connection.send(["SELECT", "\(address.database)"])
            }
        } catch {
            connection.close()
            throw error
        }
        return connection
    }

    /// What an operator should read for a TLS handshake that failed with `reason` (BoringSSL's
    /// words), or nil when the reason is not a certificate's.
    static func tlsFailure(_ reason: String, tls: RedisTLS?) -> String? {
        if reason.contains("CERTIFICATE_VERIFY_FAILED") {
            return "the server's certificate is not trusted by " + (tls?.caFile.map { "the CA in \($0)" } ?? "the system's trust roots")
        }
        if reason.contains("CERTIFICATE_REQUIRED") { return "the server asks for a client certificate and none is configured" }
        if reason.contains("UNKNOWN_CA") || reason.contains("BAD_CERTIFICATE") { return "the server refused the client certificate" }
        return nil
    }

    /// The TLS client context of `tls`: its CA (else the system's roots) and client identity.
    /// The server's certificate is checked against the host (an IP address as well).
    static func context(_ tls: RedisTLS) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let caFile = tls.caFile {
            configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
        }
        if let certificateFile = tls.certificateFile, let keyFile = tls.keyFile {
            configuration.certificateChain = try NIOSSLCertificate.fromPEMFile(certificateFile).map { .certificate($0) }
            configuration.privateKey = .privateKey(try NIOSSLPrivateKey(file: keyFile, format: .pem))
        }
        return try NIOSSLContext(configuration: configuration)
    }

    /// Writes a command now (commands sent one after another by a caller reach the
    /// server in that order) and calls `completion` with its answer on the
    /// connection's event loop; an error answer is `RedisError.server`.
    public func send(bytes arguments: [[UInt8]], completion: @escaping @Sendable (Result<RESPValue, RedisError>) -> Void) {
        send(batch: [RedisCommand(arguments: arguments, completion: completion)])
    }

    /// Writes the commands in order and flushes once (one system call for the lot),
    /// on the connection's event loop.
    public func send(batch: [RedisCommand]) {
        let (channel, closeReason, address) = (channel, closeReason, address)
        let write = {
            // A closed channel has no handler left to answer: its commands fail here.
            guard channel.isActive else {
                let reason = closeReason.withLockedValue { $0 } ?? "\(address): the connection is closed"
                for command in batch { command.completion(.failure(.connectionLost(reason))) }
                return
            }
            for command in batch {
                let promise = channel.eventLoop.makePromise(of: RESPValue.self)
                channel.write(RESPChannelHandler.Command(arguments: command.arguments, promise: promise), promise: nil)
                promise.futureResult.whenComplete { result in
                    switch result {
                    case let .success(.error(message)): command.completion(.failure(.server(message)))
                    case let .success(value): command.completion(.success(value))
                    case let .failure(error as RedisError): command.completion(.failure(error))
                    case let .failure(error): command.completion(.failure(.connectionLost("\(error)")))
                    }
                }
            }
            channel.flush()
        }
        if channel.eventLoop.inEventLoop { write() } else { channel.eventLoop.execute(write) }
    }

    /// Runs `body` on the connection's event loop.
    public func execute(_ body: @escaping @Sendable () -> Void) {
        channel.eventLoop.execute(body)
    }

    /// Whether the connection is still open.
    public var isActive: Bool { channel.isActive }

    /// Closes the connection; waiting commands fail with `connectionLost`.
    public func close() {
        channel.close(promise: nil)
    }
}

/// The connection's channel handler: encodes commands, decodes answers with
/// `RESPParser` as bytes arrive, and matches answers to waiting commands in order.
final class RESPChannelHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = Command
    typealias OutboundOut = ByteBuffer

    struct Command {
        let arguments: [[UInt8]]
        let promise: EventLoopPromise<RESPValue>

        /// In RESP3 the server confirms a (un)subscription with a push, not a reply:
        /// the push's kind that answers this command, if it is one of those.
        var confirmingPush: String? {
            guard let name = arguments.first.map({ String(decoding: $0, as: UTF8.self).lowercased() }) else { return nil }
            return ["subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe"].contains(name) ? name : nil
        }
    }

    private let parser = RESPParser()
    /// The server as reasons name it (`host:port`, never a credential).
    private let peer: String
    private let maxPending: Int
    private let liveness: RedisLiveness
    private let pushes: @Sendable (RESPValue) -> Void
    private let closed: @Sendable (String) -> Void
    private var waiting = CircularBuffer<(promise: EventLoopPromise<RESPValue>, confirmingPush: String?, sentAt: NIODeadline)>()
    private var received: ByteBuffer?
    private var closeReason: String?
    /// When the server last sent anything (or the connection opened).
    private var lastHeard = NIODeadline.now()
    private var watchdog: RepeatedTask?

    init(
        peer: String, maxPending: Int, liveness: RedisLiveness, pushes: @escaping @Sendable (RESPValue) -> Void,
        closed: @escaping @Sendable (String) -> Void
    ) {
        self.peer = peer
        self.maxPending = maxPending
        self.liveness = liveness
        self.pushes = pushes
        self.closed = closed
    }

    func channelActive(context: ChannelHandlerContext) {
        lastHeard = .now()
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        watchdog = context.eventLoop.scheduleRepeatedTask(initialDelay: liveness.interval, delay: liveness.interval) { _ in
            bound.value.handler.check(context: bound.value.context)
        }
        context.fireChannelActive()
    }

    /// The watchdog's round: closes a connection whose oldest command has waited too long for
    /// its answer, and pings one that has been quiet for an interval.
    private func check(context: ChannelHandlerContext) {
        guard closeReason == nil else { return }
        let now = NIODeadline.now()
        if let oldest = waiting.first, now - oldest.sentAt > liveness.timeout {
            let reason = "no answer within \(liveness.timeout.nanoseconds / 1_000_000) ms"
            return fail(context: context, reason: reason)
        }
        guard waiting.isEmpty, now - lastHeard >= liveness.interval else { return }
        var bytes: [UInt8] = []
        RESPCommand.encode([Array("PING".utf8)], into: &bytes)
        waiting.append((context.eventLoop.makePromise(of: RESPValue.self), nil, now))
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let command = unwrapOutboundIn(data)
        if let closeReason {
            command.promise.fail(RedisError.connectionLost(closeReason))
            return
        }
        guard waiting.count < maxPending else {
            command.promise.fail(RedisError.overloaded(limit: maxPending))
            return
        }
        var bytes: [UInt8] = []
        RESPCommand.encode(command.arguments, into: &bytes)
        waiting.append((command.promise, command.confirmingPush, .now()))
        context.write(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastHeard = .now()
        var incoming = unwrapInboundIn(data)
        if received == nil || received!.readableBytes == 0 {
            received = incoming
        } else {
            received!.writeBuffer(&incoming)
        }
        while var buffer = received, buffer.readableBytes > 0 {
            let parsed: (value: RESPValue, length: Int)?
            do {
                parsed = try buffer.withUnsafeReadableBytes { bytes in try parser.parse(bytes) }
            } catch {
                fail(context: context, reason: "\(error)", error: RedisError.protocolError("\(error)"))
                return
            }
            guard let (value, length) = parsed else { break }
            buffer.moveReaderIndex(forwardBy: length)
            received = buffer
            if case let .push(items) = value {
                if let kind = items.first?.string, let first = waiting.first, first.confirmingPush == kind {
                    waiting.removeFirst().promise.succeed(value)
                } else {
                    pushes(value)
                }
            } else if let command = waiting.popFirst() {
                command.promise.succeed(value)
            } else {
                fail(context: context, reason: "an answer no command waited for", error: RedisError.protocolError("unexpected answer \(value)"))
                return
            }
        }
        if let buffer = received, buffer.readableBytes == 0 { received = nil } else { received?.discardReadBytes() }
    }

    func channelInactive(context: ChannelHandlerContext) {
        watchdog?.cancel()
        watchdog = nil
        finish(reason: closeReason ?? "closed by the server")
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        fail(context: context, reason: "\(error)")
    }

    /// Closes the connection for `reason`; what waits fails with `error`, or, when nil, with
    /// `connectionLost` naming the server and the reason.
    private func fail(context: ChannelHandlerContext, reason: String, error: RedisError? = nil) {
        if closeReason == nil { closeReason = "\(peer): \(reason)" }
        let error = error ?? RedisError.connectionLost(closeReason!)
        while let command = waiting.popFirst() { command.promise.fail(error) }
        context.close(promise: nil)
    }

    /// Fails what still waits and tells the owner, once.
    private func finish(reason: String) {
        if closeReason == nil { closeReason = "\(peer): \(reason)" }
        let reason = closeReason!
        while let command = waiting.popFirst() { command.promise.fail(RedisError.connectionLost(reason)) }
        guard !notified else { return }
        notified = true
        closed(reason)
    }

    private var notified = false
}

extension RedisConnection {
    /// Asks the servers at `addresses` in turn, each on a connection of its own closed after
    /// `question`, until one gives an answer; throws `unavailable` (`whatFor`, then every server's
    /// reason: its refusal, or why it could not be asked) when none does.
    static func askInTurn<Answer>(
        _ addresses: [RedisAddress], on group: any EventLoopGroup, timeout: TimeAmount, whatFor: String,
        _ question: (RedisAddress, RedisConnection) async throws(RedisError) -> Result<Answer, Refusal>
    ) async throws(RedisError) -> Answer {
        var reasons: [String] = []
        for address in addresses {
            do throws(RedisError) {
                let connection = try await connect(to: address, on: group, connectTimeout: timeout)
                defer { connection.close() }
                switch try await question(address, connection) {
                case let .success(answer): return answer
                case let .failure(refusal): reasons.append(refusal.reason)
                }
            } catch {
                reasons.append("\(address): \(error)")
            }
        }
        throw .unavailable("\(whatFor): \(reasons.joined(separator: "; "))")
    }

    /// Why a server asked by `askInTurn` gave no answer.
    struct Refusal: Error, ExpressibleByStringInterpolation {
        let reason: String
        init(stringLiteral reason: String) { self.reason = reason }
        init(stringInterpolation: DefaultStringInterpolation) { reason = String(stringInterpolation: stringInterpolation) }
    }
}

/// How a connection finds a server that went silent: after `interval` without hearing from
/// it, the connection sends `PING`; when the oldest command (a ping among them) has waited
/// longer than `timeout` for its answer, the connection is closed. A silent server is thus
/// found within `interval + timeout`, and no command waits longer than `timeout` plus one
/// `interval`.
public struct RedisLiveness: Sendable {
    public var interval: TimeAmount
    public var timeout: TimeAmount

    /// One second between checks, three seconds for an answer: a silent server is found
    /// within about four seconds; Redis answers in well under a millisecond when it is well.
    public init(interval: TimeAmount = .seconds(1), timeout: TimeAmount = .seconds(3)) {
        self.interval = interval
        self.timeout = timeout
    }
}
