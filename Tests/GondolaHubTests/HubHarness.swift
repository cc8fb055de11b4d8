import Foundation
import GondolaProtocol
import Testing

@_spi(Engine) @testable import GondolaHub

/// A node with short timings and a `room` namespace that has every feature on.
func makeNode(durableHistory: (any LocalHistoryStore)? = nil, _ adjust: (inout HubConfiguration) -> Void = { _ in }) async throws -> Node {
    Node(configuration: testConfiguration(adjust), tokens: try await ConnectionTokens(secret: testSecret), durableHistory: durableHistory)
}

/// The hub tests' namespaces: `room` (history, presence, join/leave, open to clients),
/// `locked` and `personal` (not subscribable by clients), and the default namespace
/// configured open to subscribing and publishing (channels such as `plain`), changed by `adjust`.
func testConfiguration(_ adjust: (inout HubConfiguration) -> Void = { _ in }) -> HubConfiguration {
    var configuration = HubConfiguration()
    var open = NamespaceOptions(name: "")
    open.allowSubscribeForClient = true
    open.allowPublishForSubscriber = true
    configuration.namespaces[""] = open
    var room = NamespaceOptions(name: "room")
    room.historySize = 5
    room.historyTTL = .seconds(300)
    room.presence = true
    room.joinLeave = true
    room.allowSubscribeForClient = true
    room.allowPublishForSubscriber = true
    room.allowHistoryForSubscriber = true
    room.allowPresenceForSubscriber = true
    configuration.namespaces["room"] = room
    var locked = NamespaceOptions(name: "locked")
    locked.allowSubscribeForClient = false
    configuration.namespaces["locked"] = locked
    var personal = NamespaceOptions(name: "personal")
    personal.allowSubscribeForClient = false
    configuration.namespaces["personal"] = personal
    adjust(&configuration)
    return configuration
}

let testSecret = "test-secret-of-at-least-32-bytes!!"

/// A client driving a session directly, reading what its writer would write.
struct TestClient {
    let node: Node
    let session: ClientSession
    private var nextID: UInt32 = 1

    init(node: Node, encoding: ProtocolEncoding = .json) {
        self.node = node
        self.session = node.accept(encoding: encoding)
    }

    /// A client on a session the test accepted itself (with forwarded headers, say).
    init(node: Node, session: ClientSession) {
        self.node = node
        self.session = session
    }

    static func connected(_ node: Node, user: String, info: JSON? = nil, encoding: ProtocolEncoding = .json) async throws -> TestClient {
        var client = TestClient(node: node, encoding: encoding)
        let token = try await ConnectionTokens(secret: testSecret).mint(user: user, info: info)
        let reply = try await client.call(.connect(ConnectRequest(token: token)))
        guard case .connect = reply.body else { throw HarnessError("connect failed: \(reply)") }
        return client
    }

    /// Sends raw text as one frame.
    func sendFrame(_ text: String) async {
        await session.handle(frame: Array(text.utf8))
    }

    mutating func send(_ method: Command.Method) async -> UInt32 {
        let id = nextID
        nextID += 1
        await session.handle(frame: session.encoding.encode(Command(id: id, method)))
        return id
    }

    /// Sends a command and returns its reply; messages before it stay readable with `next`.
    mutating func call(_ method: Command.Method) async throws -> Reply {
        let id = await send(method)
        var skipped: [ServerMessage] = []
        while true {
            let message = try await next()
            if case let .reply(reply) = message, reply.id == id {
                pending.putFirst(skipped)
                return reply
            }
            skipped.append(message)
        }
    }

    /// The next message the server sends; fails after `timeout`. The default deadline is
    /// generous because suites run side by side on two cores: CPU-heavy tests of other
    /// modules can hold both of the cooperative pool's threads for seconds.
    func next(timeout: Duration = .seconds(15)) async throws -> ServerMessage {
        if let message = pending.take() { return message }
        let item = try await withThrowingTaskGroup(of: OutboundQueue.Item?.self) { group in
            group.addTask { await session.queue.next() }
            group.addTask { [session] in
                try await Task.sleep(for: timeout)
                // Releases the waiting reader so the group can end.
                session.queue.close(DisconnectCode(code: 4999, reason: "test timeout"))
                throw HarnessError("no message within \(timeout)")
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
        switch item {
        case let .frame(bytes)?:
            let messages = try session.encoding.serverMessages(in: bytes)
            pending.put(Array(messages.dropFirst()))
            return messages[0]
        case let .close(code)?:
            throw Closed(code: code)
        case nil:
            throw HarnessError("queue finished")
        }
    }

    /// The close code, once everything queued before it was read.
    func closeCode() async throws -> DisconnectCode {
        while true {
            do {
                _ = try await next()
            } catch let closed as Closed {
                return closed.code
            }
        }
    }

    private let pending = Pending()
}

/// Messages of a frame not handed out yet.
final class Pending: @unchecked Sendable {
    private var messages: [ServerMessage] = []
    func take() -> ServerMessage? { messages.isEmpty ? nil : messages.removeFirst() }
    func put(_ more: [ServerMessage]) { messages.append(contentsOf: more) }
    func putFirst(_ more: [ServerMessage]) { messages.insert(contentsOf: more, at: 0) }
}

struct Closed: Error { let code: DisconnectCode }

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension Reply {
    var error: ProtocolError? {
        if case let .error(error) = body { return error }
        return nil
    }

    var errorCode: UInt32? { error?.code }
}

extension ServerMessage {
    var publication: Publication? {
        if case let .push(push) = self, case let .publication(publication) = push.body { return publication }
        return nil
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
