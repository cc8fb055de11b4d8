import Foundation
import GondolaHub
import GondolaProtocol
import GondolaServer
import GondolaServices
import GondolaTestSupport
import GondolaTravel
import HummingbirdWSClient
import HummingbirdWSCompression
import Logging
import Synchronization

/// A connected WebSocket client that stays open: commands are sent one by one and
/// their replies awaited by id; publications are collected per channel.
final class LiveClient: Sendable {
    /// A command waiting for its reply, and the timer that gives up on it.
    struct Waiter {
        let continuation: CheckedContinuation<Reply, Error>
        let timer: Task<Void, Never>
    }

    struct State {
        var waiting: [UInt32: Waiter] = [:]
        var publications: [String: [JSON]] = [:]
        var payloads: [String: [Payload]] = [:]
        var offsets: [String: [UInt64]] = [:]
        var nextID: UInt32 = 1
        var closed = false
    }

    final class Box: Sendable {
        let state = Mutex(State())

        /// Fails the command `id` with `error` if it is still waiting.
        func giveUp(on id: UInt32, error: any Error) {
            state.withLock { $0.waiting.removeValue(forKey: id) }?.continuation.resume(throwing: error)
        }

        /// Marks the connection closed and fails every command still waiting.
        func closeWaiters() {
            let waiters = state.withLock { state in
                state.closed = true
                defer { state.waiting = [:] }
                return Array(state.waiting)
            }
            for (id, waiter) in waiters {
                waiter.timer.cancel()
                waiter.continuation.resume(throwing: HarnessError("connection closed before reply \(id)"))
            }
        }
    }

    private let box = Box()
    /// The encoding this client speaks.
    let encoding: ProtocolEncoding
    private let outbound: AsyncStream<[UInt8]>.Continuation
    private let task: Task<Void, Error>

    private init(
        url: String, encoding: ProtocolEncoding, compressed: Bool, noContextTakeover: Bool, commands: AsyncStream<[UInt8]>,
        continuation: AsyncStream<[UInt8]>.Continuation
    ) {
        outbound = continuation
        self.encoding = encoding
        let box = self.box
        let url = encoding == .protobuf ? url + "?format=protobuf" : url
        task = Task {
            var logger = Logger(label: "live-client")
            logger.logLevel = .critical
            let extensions: [WebSocketExtensionFactory] =
                compressed ? [.perMessageDeflate(noContextTakeover: noContextTakeover, maxDecompressedFrameSize: 1 << 22)] : []
            _ = try await WebSocketClient.connect(url: url, configuration: .init(maxFrameSize: 1 << 22, extensions: extensions), logger: logger) {
                inbound, writer, _ in
                let reader = Task {
                    defer { box.closeWaiters() }
                    for try await message in inbound.messages(maxSize: 1 << 24) {
                        let frame: [UInt8]
                        switch message {
                        case let .text(text): frame = Array(text.utf8)
                        case let .binary(buffer): frame = Array(buffer.readableBytesView)
                        }
                        let messages = try encoding.serverMessages(in: frame)
                        // The server's pings are answered, as the SDKs do, so that a client idle for
                        // longer than the ping interval stays connected.
                        if messages.contains(.ping) { continuation.yield(encoding.encode(Command(id: 0, .pong))) }
                        let answered = box.state.withLock { state in
                            var answered: [(Waiter, Reply)] = []
                            for message in messages {
                                switch message {
                                case let .reply(reply):
                                    if let waiter = state.waiting.removeValue(forKey: reply.id) { answered.append((waiter, reply)) }
                                case let .push(push):
                                    if case let .publication(publication) = push.body {
                                        state.publications[push.channel, default: []].append(publication.data.value)
                                        state.payloads[push.channel, default: []].append(publication.data)
                                        state.offsets[push.channel, default: []].append(publication.offset)
                                    }
                                default: continue
                                }
                            }
                            return answered
                        }
                        for (waiter, reply) in answered {
                            waiter.timer.cancel()
                            waiter.continuation.resume(returning: reply)
                        }
                    }
                }
                for await frame in commands {
                    if encoding.isBinary {
                        try await writer.write(.binary(.init(bytes: frame)))
                    } else {
                        try await writer.write(.text(String(decoding: frame, as: UTF8.self)))
                    }
                }
                try? await writer.close(.normalClosure, reason: nil)
                _ = try? await reader.value
            }
        }
    }

    /// Connects in `encoding` (offering permessage-deflate when `compressed`, asking for no context
    /// takeover either way when `noContextTakeover`) and sends `connect` with `token`.
    static func connect(
        _ url: String, token: String, encoding: ProtocolEncoding = .json, compressed: Bool = false, noContextTakeover: Bool = false
    ) async throws -> LiveClient {
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .unbounded)
        let client = LiveClient(
            url: url, encoding: encoding, compressed: compressed, noContextTakeover: noContextTakeover, commands: stream, continuation: continuation)
        let reply = try await client.call(.connect(ConnectRequest(token: token)))
        guard case .connect = reply.body else { throw HarnessError("connect failed: \(reply)") }
        return client
    }

    /// Sends a command and waits for its reply, which resumes the caller as it arrives;
    /// gives up after 15 s or when the connection closes first.
    func call(_ method: Command.Method) async throws -> Reply {
        let limit = Duration.seconds(15)
        return try await withCheckedThrowingContinuation { continuation in
            let registered = box.state.withLock { state -> UInt32? in
                guard !state.closed else { return nil }
                let id = state.nextID
                state.nextID += 1
                let timer = Task { [box] in
                    guard (try? await Task.sleep(for: limit)) != nil else { return }
                    box.giveUp(on: id, error: HarnessError("no reply to command \(id) within \(limit)"))
                }
                state.waiting[id] = Waiter(continuation: continuation, timer: timer)
                return id
            }
            guard let id = registered else {
                continuation.resume(throwing: HarnessError("the connection is closed"))
                return
            }
            outbound.yield(encoding.encode(Command(id: id, method)))
        }
    }

    /// Calls an RPC method; answers its result data or throws the error reply.
    func rpc(_ method: String, _ data: JSON = [:]) async throws -> JSON {
        let reply = try await call(.rpc(method: method, data: data))
        switch reply.body {
        case let .rpc(data): return data?.value ?? .null
        case let .error(error): throw RPCFailure(code: error.code, message: error.message)
        default: throw HarnessError("unexpected reply \(reply)")
        }
    }

    /// The error code of an RPC call, or nil when it succeeded (0 when no reply came).
    func rpcErrorCode(_ method: String, _ data: JSON = [:]) async -> UInt32? {
        do {
            _ = try await rpc(method, data)
            return nil
        } catch let failure as RPCFailure {
            return failure.code
        } catch {
            return 0
        }
    }

    /// Subscribes; answers the reply's `data` or throws the error.
    @discardableResult
    func subscribe(_ channel: String, data: JSON? = nil) async throws -> JSON? {
        let reply = try await call(.subscribe(SubscribeRequest(channel: channel, data: data.map(RawJSON.init))))
        switch reply.body {
        case let .subscribe(result): return result.data?.value
        case let .error(error): throw RPCFailure(code: error.code, message: error.message)
        default: throw HarnessError("unexpected reply \(reply)")
        }
    }

    /// Subscribes with a full request (recovery); answers the result or throws the error.
    func subscribe(_ request: SubscribeRequest) async throws -> SubscribeResult {
        let reply = try await call(.subscribe(request))
        switch reply.body {
        case let .subscribe(result): return result
        case let .error(error): throw RPCFailure(code: error.code, message: error.message)
        default: throw HarnessError("unexpected reply \(reply)")
        }
    }

    /// Offsets of the publications received on `channel` so far.
    func offsets(_ channel: String) -> [UInt64] { box.state.withLock { $0.offsets[channel] ?? [] } }

    /// Publications received on `channel` so far, read as JSON (once, on arrival).
    func publications(_ channel: String) -> [JSON] { box.state.withLock { $0.publications[channel] ?? [] } }

    /// The payloads of the publications received on `channel` so far, as they came.
    func payloads(_ channel: String) -> [Payload] { box.state.withLock { $0.payloads[channel] ?? [] } }

    /// Waits until `channel` has at least `count` publications (or 5 s pass).
    func awaitPublications(_ channel: String, count: Int) async throws -> [JSON] {
        _ = try await awaitPayloads(channel, count: count)
        return publications(channel)
    }

    /// Waits until `channel` has at least `count` publications (or 5 s pass); answers the payloads
    /// there are, which the caller checks.
    func awaitPayloads(_ channel: String, count: Int) async throws -> [Payload] {
        try? await eventually("\(count) publications on \(channel)", within: .seconds(5), every: .milliseconds(5)) {
            payloads(channel).count >= count
        }
        return payloads(channel)
    }

    var isClosed: Bool { box.state.withLock { $0.closed } }

    func close() async {
        outbound.finish()
        _ = try? await task.value
    }
}

/// An error reply.
struct RPCFailure: Error, CustomStringConvertible {
    let code: UInt32
    let message: String
    var description: String { "\(code): \(message)" }
}

/// Starts a server that has the travel domain with fast frames.
func startTravelServer(telegram: (any TelegramNotifier)? = nil, _ adjust: (inout ServerConfiguration) -> Void = { _ in }) async throws
    -> RunningServer
{
    var configuration = RunningServer.configuration()
    configuration.domainSettings.values["location_interval"] = .string("50ms")
    configuration.domainSettings.values["location_rate"] = .int(1000)
    configuration.hub.commandRate = 10_000
    configuration.hub.commandBurst = 10_000
    adjust(&configuration)
    return try await RunningServer.start(configuration, telegram: telegram)
}

extension RunningServer {
    /// Calls a server API method and answers its `result`, or throws the error.
    func api(_ method: String, _ body: JSON) async throws -> JSON {
        let (status, answer) = try await post("/api/\(method)", body: body.text)
        guard status == 200 else { throw HarnessError("\(method): HTTP \(status) \(answer.text)") }
        if let error = answer["error"] {
            throw RPCFailure(code: UInt32(error["code"]?.doubleValue ?? 0), message: error["message"]?.stringValue ?? error.text)
        }
        return answer["result"] ?? .null
    }

    func client(_ user: String, encoding: ProtocolEncoding = .json, compressed: Bool = false) async throws -> LiveClient {
        try await LiveClient.connect(webSocketURL, token: try await token(user), encoding: encoding, compressed: compressed)
    }

    /// Creates a running trip with `hosts` and `travellers`; answers its id.
    func createTrip(hosts: [String], travellers: [String], running: Bool = true) async throws -> String {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let (start, end) = running ? (now - 3_600_000, now + 3_600_000) : (now + 86_400_000, now + 2 * 86_400_000)
        let result = try await api(
            "trip_create",
            [
                "name": "Trip", "resort": "demo", "starts_at": .int(start), "ends_at": .int(end), "hosts": .array(hosts.map(JSON.string)),
            ])
        guard case let .string(id)? = result["trip"]?["id"] else { throw HarnessError("trip_create answered \(result.text)") }
        for traveller in travellers {
            _ = try await api("trip_add_member", ["trip": .string(id), "user": .string(traveller), "role": "traveller"])
        }
        return id
    }
}

extension JSON {
    var doubleValue: Double? {
        switch self {
        case let .int(value): return Double(value)
        case let .double(value): return value
        case let .raw(raw): return raw.value.doubleValue
        default: return nil
        }
    }

    var stringValue: String? {
        if case let .string(text) = self { return text }
        return nil
    }

    var arrayValue: [JSON] {
        if case let .array(items) = self { return items }
        return []
    }
}
