import Foundation
import GondolaDomain
import GondolaHub
import GondolaProtocol
import GondolaServer
import GondolaServices
import GondolaTestSupport
import GondolaTravel
import HTTPTypes
import Hummingbird
import HummingbirdWSClient
import Logging
import NIOWebSocket
import ServiceLifecycle
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A real server on 127.0.0.1 and an ephemeral port, with its own data folder.
final class RunningServer: Sendable {
    let server: GondolaServer
    let port: Int
    private let group: ServiceGroup
    private let task: Task<Void, Error>

    static let apiKey = "test-api-key"
    static let secret = "test-secret-of-at-least-32-bytes-long"

    static func configuration(folder: String? = nil) -> ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.listenPort = 0
        let folder = folder ?? FileManager.default.temporaryDirectory.appendingPathComponent("gondola-e2e-\(UUID().uuidString)").path
        configuration.database = folder + "/gondola.sqlite"
        configuration.tokenHMACSecret = secret
        configuration.apiKey = apiKey
        configuration.maxFrameBytes = 4096
        // Hummingbird's WebSocket client announces `Origin: ws://127.0.0.1` (without the port),
        // which the same-origin default would refuse.
        configuration.allowedOrigins = try! OriginCheck(allowed: ["ws://127.0.0.1"])
        var room = NamespaceOptions(name: "room")
        room.historySize = 10
        room.historyTTL = .seconds(300)
        room.presence = true
        room.joinLeave = true
        room.allowSubscribeForClient = true
        room.allowPublishForSubscriber = true
        room.allowHistoryForSubscriber = true
        room.allowPresenceForSubscriber = true
        configuration.hub.namespaces["room"] = room
        var board = room
        board.name = "board"
        board.historyDurable = true
        configuration.hub.namespaces["board"] = board
        return configuration
    }

    /// What a test server logs with unless told otherwise: warnings and errors.
    static var quietLogger: Logger {
        var logger = Logger(label: "gondola-test")
        logger.logLevel = .warning
        return logger
    }

    static func start(
        _ configuration: ServerConfiguration = configuration(), telegram: (any TelegramNotifier)? = nil,
        additionalDomains: [any Domain] = [],
        onInternalServerRunning: @escaping @Sendable (Int) async -> Void = { _ in },
        onGRPCServerRunning: @escaping @Sendable (Int) async -> Void = { _ in },
        onUniGRPCServerRunning: @escaping @Sendable (Int) async -> Void = { _ in },
        logger: Logger = RunningServer.quietLogger
    ) async throws -> RunningServer {
        let server = try await GondolaServer(configuration: configuration, telegram: telegram, additionalDomains: additionalDomains, logger: logger)
        let ports = AsyncStream.makeStream(of: Int.self)
        let group = server.serviceGroup(
            signals: [], onServerRunning: { port in ports.continuation.yield(port) },
            onInternalServerRunning: onInternalServerRunning, onGRPCServerRunning: onGRPCServerRunning,
            onUniGRPCServerRunning: onUniGRPCServerRunning)
        let task = Task { try await group.run() }
        var iterator = ports.stream.makeAsyncIterator()
        guard let port = await iterator.next() else { throw HarnessError("server did not start") }
        return RunningServer(server: server, port: port, group: group, task: task)
    }

    private init(server: GondolaServer, port: Int, group: ServiceGroup, task: Task<Void, Error>) {
        self.server = server
        self.port = port
        self.group = group
        self.task = task
    }

    func stop() async throws {
        await group.triggerGracefulShutdown()
        try await task.value
    }

    var webSocketURL: String { "ws://127.0.0.1:\(port)/connection/websocket" }

    func token(_ user: String, ttl: Duration? = nil) async throws -> String {
        try await ConnectionTokens(secret: Self.secret).mint(user: user, ttl: ttl)
    }

    /// POSTs JSON (or raw text) and returns the status and the parsed body.
    func post(_ path: String, body: String, apiKey: String? = RunningServer.apiKey, headers: [String: String] = [:]) async throws -> (Int, JSON) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let apiKey { request.setValue(apiKey, forHTTPHeaderField: "X-API-Key") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return try await send(request)
    }

    func get(_ path: String) async throws -> (Int, String) {
        let (data, response) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        return ((response as! HTTPURLResponse).statusCode, String(decoding: data, as: UTF8.self))
    }

    private func send(_ request: URLRequest) async throws -> (Int, JSON) {
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as! HTTPURLResponse).statusCode, try JSONParser.parse(Array(data)))
    }
}

/// What a WebSocket client session saw: every message in order and the close frame.
struct Conversation {
    var messages: [ServerMessage] = []
    var closeCode: Int?
    var closeReason: String?

    var replies: [Reply] { messages.compactMap { if case let .reply(reply) = $0 { return reply } else { return nil } } }
    var pushes: [Push] { messages.compactMap { if case let .push(push) = $0 { return push } else { return nil } } }
}

/// One step of a scripted WebSocket client.
enum Step {
    case text(String)
    case binary([UInt8])
    /// Reads until `count` messages have arrived in all.
    case awaitMessages(Int)
    /// Reads until the server closes the connection (at most 10 s).
    case awaitClose
}

/// Runs `steps` over a real WebSocket connection, then reads until the server
/// closes or `idle` passes without a message. With `subprotocol`, the handshake
/// offers it; server frames are decoded in `encoding`.
func converse(
    _ url: String, _ steps: [Step], idle: Duration = .milliseconds(500),
    encoding: ProtocolEncoding = .json, subprotocol: String? = nil
) async throws -> Conversation {
    let box = ConversationBox(encoding: encoding)
    var logger = Logger(label: "ws-test")
    logger.logLevel = .warning
    var headers = HTTPFields()
    if let subprotocol { headers[.secWebSocketProtocol] = subprotocol }
    let configuration = WebSocketClientConfiguration(maxFrameSize: 1 << 20, additionalHeaders: headers)
    let close = try await WebSocketClient.connect(url: url, configuration: configuration, logger: logger) { inbound, outbound, _ in
        let reader = Task {
            defer { box.finish() }
            for try await message in inbound.messages(maxSize: 1 << 22) {
                switch message {
                case let .text(text): try box.add(Array(text.utf8))
                case let .binary(buffer): try box.add(Array(buffer.readableBytesView))
                }
            }
        }
        for step in steps {
            guard !box.finished else { break }
            switch step {
            case let .text(text): try? await outbound.write(.text(text))
            case let .binary(bytes): try? await outbound.write(.binary(.init(bytes: bytes)))
            // The caller checks what arrived: a wait that ends without it is not an error here.
            case let .awaitMessages(count):
                try? await eventually(within: .seconds(5), every: .milliseconds(5)) { box.count >= count || box.finished }
            case .awaitClose:
                try? await eventually(within: .seconds(10), every: .milliseconds(5)) { box.finished }
            }
        }
        while !box.finished {
            let seen = box.count
            try await Task.sleep(for: idle)
            if box.count == seen { break }
        }
        if !box.finished { try? await outbound.close(.normalClosure, reason: nil) }
        _ = try? await reader.value
    }
    var conversation = box.conversation
    conversation.closeCode = close.map { Int(UInt16(webSocketErrorCode: $0.closeCode)) }
    conversation.closeReason = close?.reason
    return conversation
}

final class ConversationBox: Sendable {
    private let encoding: ProtocolEncoding
    private let state = Mutex((conversation: Conversation(), finished: false))
    init(encoding: ProtocolEncoding) { self.encoding = encoding }
    var conversation: Conversation { state.withLock { $0.conversation } }
    var count: Int { state.withLock { $0.conversation.messages.count } }
    var finished: Bool { state.withLock { $0.finished } }
    func finish() { state.withLock { $0.finished = true } }
    func add(_ frame: [UInt8]) throws {
        let messages = try encoding.serverMessages(in: frame)
        state.withLock { $0.conversation.messages += messages }
    }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func command(_ id: UInt32, _ method: Command.Method) -> String { Command(id: id, method).json.text }

/// One command as a Protobuf frame (varint length prefix and message).
func protobufCommand(_ id: UInt32, _ method: Command.Method) -> [UInt8] { ProtocolEncoding.protobuf.encode(Command(id: id, method)) }

extension Reply {
    var errorCode: UInt32? {
        if case let .error(error) = body { return error.code }
        return nil
    }
}

/// Starts a local stand-in for an outside HTTP service (a gateway, a bot API) on
/// 127.0.0.1 and a free port; cancel the task to stop it.
func startStandIn(_ router: Router<BasicRequestContext>, name: String) async throws -> (port: Int, task: Task<Void, Error>) {
    var logger = Logger(label: "stand-in")
    logger.logLevel = .critical
    let ports = AsyncStream.makeStream(of: Int.self)
    let app = Application(
        router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
        onServerRunning: { ports.continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
    let task = Task { try await app.runService(gracefulShutdownSignals: []) }
    var iterator = ports.stream.makeAsyncIterator()
    guard let port = await iterator.next() else { throw HarnessError("the \(name) stand-in did not start") }
    return (port, task)
}

/// What a stand-in that does not answer uses: each request waits in `hold()` until the
/// test calls `release()` (or its task is cancelled), and `count` says how many arrived.
final class HeldRequests: Sendable {
    private let state = Mutex<(arrived: Int, released: Bool, waiting: [CheckedContinuation<Void, Never>])>((0, false, []))

    var count: Int { state.withLock { $0.arrived } }

    func hold() async {
        await withCheckedContinuation { continuation in
            let wait = state.withLock { state -> Bool in
                state.arrived += 1
                guard !state.released else { return false }
                state.waiting.append(continuation)
                return true
            }
            if !wait { continuation.resume() }
        }
    }

    func release() {
        let waiting = state.withLock { state in
            state.released = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}

/// A test method's answer: any JSON, without declared members.
struct TestAnswer: JSONAnswer {
    static let fields: [FieldContract] = []
    static let declaresAllMembers = false
    let json: JSON
}

/// A test replica topic's payload: any JSON object, passed as it came.
struct TestReplica: ReplicaPayload {
    let json: JSON
    init(json: JSON) { self.json = json }
    init(_ fields: RequestFields) { json = fields.json }
}
