import Foundation
import GondolaDomain
import GondolaProtocol
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// A push service reached over one HTTP/2 connection (TLS with ALPN `h2`; cleartext HTTP/2
/// for an `http://` address), every request a stream of it. Requests are written by the
/// connection's event loop in batches: the requests queued while it was busy go out
/// together with one flush. The connection opens on the first request and again on the
/// first request after it closed or the service sent GOAWAY (the streams already sent on
/// it still get their answers); callers wait on one opening, never one each.
///
/// Limits: streams beyond the service's `SETTINGS_MAX_CONCURRENT_STREAMS` wait in the
/// HTTP/2 handler's buffer until a stream ends (the outbox keeps at most its window in
/// flight); an answer that does not come within `answerTimeout` fails its request (the
/// stream is reset); an answer's body is at most one stream window (65,535 bytes: the
/// window is never raised, so a longer body stalls and times out); opening waits at most
/// `connectTimeout`.
final class ServiceConnection: Sendable {
    static let answerTimeout: TimeAmount = .seconds(30)
    static let connectTimeout: TimeAmount = .seconds(10)
    /// The streams a service is taken to allow before its SETTINGS say (RFC 9113 advises at least 100).
    static let assumedConcurrentStreams = 100

    /// Where the service is, from its base address.
    struct Address: Sendable {
        let host: String
        let port: Int
        let secure: Bool
        /// The address's path, put before each request's (empty, or starting with `/`).
        let pathPrefix: String

        /// `https://host[:port][/path]` or `http://…`; nil for anything else.
        init?(baseURL: String) {
            guard let url = URL(string: baseURL), let scheme = url.scheme, ["https", "http"].contains(scheme), let host = url.host, !host.isEmpty
            else {
                return nil
            }
            self.host = host
            secure = scheme == "https"
            port = url.port ?? (secure ? 443 : 80)
            pathPrefix = url.path.hasSuffix("/") ? String(url.path.dropLast()) : url.path
        }

        /// True when the host is an IP address, not a name.
        var hostIsAddress: Bool { (try? SocketAddress(ipAddress: host, port: port)) != nil }

        /// `:authority`: the host, with the port when it is not the scheme's own.
        var authority: String { port == (secure ? 443 : 80) ? host : "\(host):\(port)" }
    }

    private enum State {
        case closed
        case opening(waiting: [CheckedContinuation<Result<ConnectionRequests, ServiceAnswer.Unreachable>, Never>])
        case open(ConnectionRequests)
        case shutDown
    }

    let address: Address
    private let nextRequestID = Atomic<UInt64>(0)
    private let tls: NIOSSLContext?
    private let group: any EventLoopGroup
    private let state = Mutex(State.closed)

    /// A connection to `address`, trusting `tls`'s roots (an `http://` address is reached in cleartext).
    init(address: Address, tls: TLSConfiguration, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) throws {
        var tls = tls
        tls.applicationProtocols = ["h2"]
        self.address = address
        self.tls = address.secure ? try NIOSSLContext(configuration: tls) : nil
        self.group = group
    }

    /// POSTs each of `posts` and calls `answered` with its index and its answer as that answer
    /// arrives (on the connection's event loop, or on the calling task when the connection
    /// cannot be had; it must not block); returns once every one is answered. The batch waits
    /// on one opening of the connection, and its requests are queued for the event loop at
    /// once. Cancelling the calling task fails the unanswered ones as cancelled and resets
    /// their streams.
    func post(_ posts: [ServicePost], answered: @escaping @Sendable (Int, Result<ServiceAnswer, ServiceAnswer.Unreachable>) -> Void) async {
        let batch = PostBatch(count: posts.count)
        await withTaskCancellationHandler {
            await submit(Array(posts.indices), of: posts, retried: false, batch: batch, answered: answered)
            await batch.answers.allDone()
        } onCancel: {
            batch.cancel()
        }
    }

    /// Queues `posts[indices]` on the open connection. A request whose connection closes
    /// before it is written is queued once more on the next connection; a second closing is
    /// its answer.
    private func submit(
        _ indices: [Int], of posts: [ServicePost], retried: Bool, batch: PostBatch,
        answered: @escaping @Sendable (Int, Result<ServiceAnswer, ServiceAnswer.Unreachable>) -> Void
    ) async {
        let finish: @Sendable (Int, Result<ServiceAnswer, ServiceAnswer.Unreachable>) -> Void = { index, result in
            answered(index, result)
            batch.answers.done()
        }
        let requests: ConnectionRequests
        switch await openRequests() {
        case let .success(opened): requests = opened
        case let .failure(unreachable): return indices.forEach { finish($0, .failure(unreachable)) }
        }
        let closedTwice = ServiceAnswer.Unreachable(detail: "the connection to \(address.authority) closed before the request was sent")
        let made = indices.map { index in
            let post = posts[index]
            return ServiceRequest(
                id: nextRequestID.wrappingAdd(1, ordering: .relaxed).newValue, path: address.pathPrefix + post.path,
                headers: post.headers, unindexed: post.unindexed, body: post.body
            ) { result in
                if let result {
                    finish(index, result)
                } else if retried {
                    finish(index, .failure(closedTwice))
                } else {
                    Task { await self.submit([index], of: posts, retried: true, batch: batch, answered: answered) }
                }
            }
        }
        guard batch.track(made.map(\.id), on: requests) else {
            return indices.forEach { finish($0, .failure(PostBatch.cancelled)) }
        }
        if !requests.submit(made) { return made.forEach { $0.answer(nil) } }
        // Cancelled between being tracked and being queued: the cancellation found nothing to fail.
        if batch.isCancelled { requests.cancel(made.map(\.id)) }
    }

    /// How many streams the service takes at once: its last `SETTINGS_MAX_CONCURRENT_STREAMS`
    /// on this connection, `assumedConcurrentStreams` before it said.
    var concurrentStreams: Int {
        state.withLock { state in
            guard case let .open(requests) = state else { return nil }
            return requests.concurrentStreams.load(ordering: .relaxed)
        } ?? Self.assumedConcurrentStreams
    }

    /// Closes the connection; later requests fail.
    func shutdown() async {
        let (current, waiting) = state.withLock {
            state -> (ConnectionRequests?, [CheckedContinuation<Result<ConnectionRequests, ServiceAnswer.Unreachable>, Never>]) in
            defer { state = .shutDown }
            switch state {
            case let .open(requests): return (requests, [])
            case let .opening(waiting): return (nil, waiting)
            case .closed, .shutDown: return (nil, [])
            }
        }
        for continuation in waiting { continuation.resume(returning: .failure(.init(detail: "the push sender is shut down"))) }
        try? await current?.channel.close()
    }

    /// The open connection's request queue, opening one when there is none or it no longer
    /// takes requests; why not when it cannot be opened.
    private func openRequests() async -> Result<ConnectionRequests, ServiceAnswer.Unreachable> {
        await withCheckedContinuation { continuation in
            enum Step {
                case use(Result<ConnectionRequests, ServiceAnswer.Unreachable>)
                case wait, open
            }
            let step = state.withLock { state -> Step in
                switch state {
                case let .open(requests) where requests.takesRequests: return .use(.success(requests))
                case var .opening(waiting):
                    waiting.append(continuation)
                    state = .opening(waiting: waiting)
                    return .wait
                case .shutDown: return .use(.failure(.init(detail: "the push sender is shut down")))
                case .open, .closed:
                    state = .opening(waiting: [continuation])
                    return .open
                }
            }
            switch step {
            case let .use(requests): continuation.resume(returning: requests)
            case .wait: break
            case .open: open()
            }
        }
    }

    private func open() {
        let address = address
        let tls = tls
        ClientBootstrap(group: group)
            .connectTimeout(Self.connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let tls {
                        // An address is not a server name: no SNI, and the certificate is checked against the trust roots.
                        try pipeline.addHandler(NIOSSLClientHandler(context: tls, serverHostname: address.hostIsAddress ? nil : address.host))
                    }
                    try pipeline.addHandler(NIOHTTP2Handler(mode: .client))
                    try pipeline.addHandler(ServiceExchangeHandler(address: address))
                }
            }
            .connect(host: address.host, port: address.port)
            .flatMapThrowing { channel in
                try channel.pipeline.syncOperations.handler(type: ServiceExchangeHandler.self).requests(on: channel)
            }
            .whenComplete { result in
                let opened = result.mapError { ServiceAnswer.Unreachable(detail: "cannot connect to \(address.authority): \($0)") }
                let waiting = self.state.withLock { state -> [CheckedContinuation<Result<ConnectionRequests, ServiceAnswer.Unreachable>, Never>]? in
                    guard case let .opening(waiting) = state else { return nil }
                    state = (try? opened.get()).map { .open($0) } ?? .closed
                    return waiting
                }
                // Shut down while it opened: nobody waits for it any more.
                guard let waiting else { return (try? opened.get())?.channel.close(promise: nil) ?? () }
                for continuation in waiting { continuation.resume(returning: opened) }
            }
    }
}

/// A request to POST: its path (after the address's own), fields and JSON body.
struct ServicePost: Sendable {
    let path: String
    let headers: [(String, String)]
    /// The fields (`:path` included) that differ from request to request: they are sent
    /// without entering the connection's HPACK table, where they would only push out the
    /// fields every request repeats (the provider token).
    var unindexed: Set<String> = []
    let body: ByteBuffer
}

/// One request waiting to be written, with what takes its answer: nil when the connection
/// closed before writing it.
struct ServiceRequest: Sendable {
    /// Names the request to cancel it.
    let id: UInt64
    let path: String
    let headers: [(String, String)]
    /// The fields sent without indexing (see `ServicePost`).
    let unindexed: Set<String>
    let body: ByteBuffer
    let answer: @Sendable (Result<ServiceAnswer, ServiceAnswer.Unreachable>?) -> Void
}

/// One caller's batch of requests: how many are unanswered, and which connection's queue
/// took which of them, to cancel them there.
private final class PostBatch: Sendable {
    static let cancelled = ServiceAnswer.Unreachable(detail: "cancelled")

    let answers: Countdown
    private let queued = Mutex<(cancelled: Bool, on: [(requests: ConnectionRequests, ids: [UInt64])])>((false, []))

    init(count: Int) {
        answers = Countdown(count)
    }

    var isCancelled: Bool { queued.withLock { $0.cancelled } }

    /// Notes that `ids` go to `requests`; false when the batch is already cancelled.
    func track(_ ids: [UInt64], on requests: ConnectionRequests) -> Bool {
        queued.withLock { queued in
            guard !queued.cancelled else { return false }
            queued.on.append((requests, ids))
            return true
        }
    }

    /// Fails every request of the batch not yet answered, as cancelled.
    func cancel() {
        let on = queued.withLock { queued in
            queued.cancelled = true
            return queued.on
        }
        for (requests, ids) in on { requests.cancel(ids) }
    }
}

/// The requests queued for one connection's event loop: any thread submits, the loop takes
/// them all at once; one wake-up of the loop serves everything queued before it ran.
final class ConnectionRequests: Sendable {
    let channel: any Channel
    private let handler: NIOLoopBound<ServiceExchangeHandler>
    private let queue = Mutex<(requests: [ServiceRequest], scheduled: Bool, closed: Bool)>(([], false, false))
    /// The service's `SETTINGS_MAX_CONCURRENT_STREAMS` on this connection.
    let concurrentStreams = Atomic(ServiceConnection.assumedConcurrentStreams)

    init(channel: any Channel, handler: ServiceExchangeHandler) {
        self.channel = channel
        self.handler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
    }

    /// False once the connection closed or the service said it is going away.
    var takesRequests: Bool { queue.withLock { !$0.closed } }

    /// Queues `requests` for the loop; false when the connection takes no more.
    func submit(_ requests: [ServiceRequest]) -> Bool {
        let wake = queue.withLock { queue -> Bool? in
            guard !queue.closed else { return nil }
            queue.requests.append(contentsOf: requests)
            defer { queue.scheduled = true }
            return !queue.scheduled
        }
        guard let wake else { return false }
        if wake { channel.eventLoop.execute { [handler] in handler.value.writeQueued() } }
        return true
    }

    /// Fails requests `ids` as cancelled: at once those still queued, the others on the
    /// loop (their streams are reset).
    func cancel(_ ids: [UInt64]) {
        let wanted = Set(ids)
        let queued = queue.withLock { queue -> [ServiceRequest] in
            let taken = queue.requests.filter { wanted.contains($0.id) }
            if !taken.isEmpty { queue.requests.removeAll { wanted.contains($0.id) } }
            return taken
        }
        for request in queued { request.answer(.failure(PostBatch.cancelled)) }
        guard queued.count < wanted.count else { return }
        channel.eventLoop.execute { [handler] in handler.value.cancel(wanted) }
    }

    /// Everything queued; called by the loop.
    func take() -> [ServiceRequest] {
        queue.withLock { queue in
            defer { queue.requests = [] }
            queue.scheduled = false
            return queue.requests
        }
    }

    /// Takes no more requests; returns those queued and not yet written.
    func close() -> [ServiceRequest] {
        queue.withLock { queue in
            defer { queue.requests = [] }
            queue.closed = true
            return queue.requests
        }
    }
}

/// The HTTP/2 exchanges of one connection, on its event loop: writes each request as a
/// HEADERS and a DATA frame on a new stream, gathers each answer's status, `Retry-After`
/// and body, and answers the waiting task when the stream ends; keeps the connection's
/// receive window open, fails the requests of a stream reset or closed without an answer
/// and of a connection that closed, and resets streams left unanswered past the timeout.
final class ServiceExchangeHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// The connection-level receive window, refilled when half of it is used.
    static let receiveWindow = 65_535

    private struct Exchange {
        let request: ServiceRequest
        let deadline: NIODeadline
        var status: Int?
        var retryAfter: Int64?
        var body = ByteBuffer()
    }

    private let address: ServiceConnection.Address
    private var exchanges: [HTTP2StreamID: Exchange] = [:]
    private var nextStreamID = HTTP2StreamID(1)
    private var requests: ConnectionRequests?
    private var context: ChannelHandlerContext?
    private var sweep: RepeatedTask?

    init(address: ServiceConnection.Address) {
        self.address = address
    }

    /// The queue the loop takes this connection's requests from (made once, when the connection is up).
    func requests(on channel: any Channel) -> ConnectionRequests {
        if let requests { return requests }
        let made = ConnectionRequests(channel: channel, handler: self)
        requests = made
        return made
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        sweep = context.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in handler.value.failLateAnswers() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        sweep?.cancel()
        self.context = nil
    }

    /// Writes every queued request, then flushes once.
    func writeQueued() {
        guard let context, let requests else { return }
        for request in requests.take() {
            guard Int32(nextStreamID) < Int32.max - 2 else {
                // Stream ids ran out: the next requests open a new connection.
                for left in requests.close() { left.answer(nil) }
                request.answer(nil)
                continue
            }
            let streamID = nextStreamID
            nextStreamID = HTTP2StreamID(Int32(streamID) + 2)
            let headers = Self.headerBlock(
                path: request.path, headers: request.headers, unindexed: request.unindexed,
                bodyLength: request.body.readableBytes, to: address)
            exchanges[streamID] = Exchange(request: request, deadline: .now() + ServiceConnection.answerTimeout)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers)))), promise: nil)
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(request.body), endStream: true)))),
                promise: nil)
        }
        context.flush()
        closeWhenDrained()
    }

    /// A request's HEADERS: the fields named in `unindexed`, and the body's length, sent without indexing.
    static func headerBlock(
        path: String, headers fields: [(String, String)], unindexed: Set<String>, bodyLength: Int,
        to address: ServiceConnection.Address
    ) -> HPACKHeaders {
        var headers = HPACKHeaders([(":method", "POST"), (":scheme", address.secure ? "https" : "http"), (":authority", address.authority)])
        headers.add(name: ":path", value: path, indexing: unindexed.contains(":path") ? .nonIndexable : .indexable)
        for (name, value) in fields {
            headers.add(name: name, value: value, indexing: unindexed.contains(name) ? .nonIndexable : .indexable)
        }
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "content-length", value: String(bodyLength), indexing: .nonIndexable)
        return headers
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case let .headers(headers):
            guard var exchange = exchanges[frame.streamID] else { return }
            if exchange.status == nil, let status = headers.headers.first(name: ":status").flatMap({ Int($0) }) {
                if (100..<200).contains(status) { return }
                exchange.status = status
                exchange.retryAfter = headers.headers.first(name: "retry-after").flatMap(ServiceAnswer.milliseconds)
            }
            exchanges[frame.streamID] = exchange
            if headers.endStream { answer(frame.streamID) }
        case let .data(data):
            guard exchanges[frame.streamID] != nil else { return }
            if case let .byteBuffer(bytes) = data.data { exchanges[frame.streamID]?.body.writeImmutableBuffer(bytes) }
            if data.endStream { answer(frame.streamID) }
        case let .rstStream(code):
            fail(frame.streamID, "the service reset the stream (\(code))")
        case let .settings(.settings(settings)):
            if let limit = settings.last(where: { $0.parameter == .maxConcurrentStreams }) {
                requests?.concurrentStreams.store(limit.value, ordering: .relaxed)
            }
        case .goAway:
            // Streams past the service's last one are closed by the HTTP/2 handler (and failed
            // below); the rest are answered before the connection closes.
            for request in requests?.close() ?? [] { request.answer(nil) }
            closeWhenDrained()
        default:
            break
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let closed = event as? StreamClosedEvent {
            fail(closed.streamID, "the stream closed without an answer (\(closed.reason.map { "\($0)" } ?? "no error"))")
            closeWhenDrained()
        } else if let window = event as? NIOHTTP2WindowUpdatedEvent, window.streamID == .rootStream, let inbound = window.inboundWindowSize,
            inbound < Self.receiveWindow / 2
        {
            context.writeAndFlush(
                wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: Self.receiveWindow - inbound))),
                promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            fail(streamError.streamID, "stream error: \(streamError.baseError)")
        } else {
            failAll("connection error: \(error)")
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAll("the connection closed")
        context.fireChannelInactive()
    }

    /// Fails every request of this connection, queued or in flight.
    private func failAll(_ detail: String) {
        for request in requests?.close() ?? [] { request.answer(nil) }
        let failed = exchanges
        exchanges = [:]
        for exchange in failed.values { exchange.request.answer(.failure(.init(detail: detail))) }
    }

    private func answer(_ streamID: HTTP2StreamID) {
        guard let exchange = exchanges.removeValue(forKey: streamID) else { return }
        guard let status = exchange.status else {
            return exchange.request.answer(.failure(.init(detail: "the stream ended without a status")))
        }
        let body = exchange.body.readableBytes == 0 ? nil : try? JSONParser.parse(Array(buffer: exchange.body))
        exchange.request.answer(.success(ServiceAnswer(status: status, body: body, retryAfter: exchange.retryAfter)))
    }

    private func fail(_ streamID: HTTP2StreamID, _ detail: String) {
        exchanges.removeValue(forKey: streamID)?.request.answer(.failure(.init(detail: detail)))
    }

    /// Fails requests `ids` as cancelled and resets their streams, those still waiting.
    func cancel(_ ids: Set<UInt64>) {
        guard let context else { return }
        let streamIDs = exchanges.filter { ids.contains($0.value.request.id) }.map(\.key)
        guard !streamIDs.isEmpty else { return }
        for streamID in streamIDs {
            fail(streamID, "cancelled")
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.cancel))), promise: nil)
        }
        context.flush()
        closeWhenDrained()
    }

    /// Resets the streams whose answer is late and fails their requests.
    fileprivate func failLateAnswers() {
        guard let context else { return }
        let now = NIODeadline.now()
        let late = exchanges.filter { $0.value.deadline <= now }.map(\.key)
        guard !late.isEmpty else { return }
        for streamID in late {
            fail(streamID, "no answer within \(ServiceConnection.answerTimeout.nanoseconds / 1_000_000_000) s")
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.cancel))), promise: nil)
        }
        context.flush()
        closeWhenDrained()
    }

    /// Closes a connection that takes no more requests once its last stream is answered.
    private func closeWhenDrained() {
        guard let context, exchanges.isEmpty, requests.map({ !$0.takesRequests }) ?? false else { return }
        context.close(promise: nil)
    }
}
