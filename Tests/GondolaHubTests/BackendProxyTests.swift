import Foundation
@testable import GondolaHub
import GondolaProtocol
import Synchronization
import Testing

/// The hub's side of the proxy, with a transport that answers what each test sets: the
/// request bodies, and how each kind of answer reaches the client.
@Suite(.timeLimit(.minutes(1))) struct BackendProxyTests {
    /// Answers every request with `answer` and keeps the bodies it was given.
    final class CannedBackend: ProxyTransport {
        let answer: Mutex<JSON>
        let bodies = Mutex<[(ProxyKind, JSON)]>([])

        init(_ answer: JSON) { self.answer = Mutex(answer) }

        func handles(_ kind: ProxyKind) -> Bool { true }

        func post(_ kind: ProxyKind, body: JSON, headers: [(name: String, value: String)]) async throws(HubError) -> JSON {
            bodies.withLock { $0.append((kind, body)) }
            return answer.withLock { $0 }
        }
    }

    static func node(_ backend: CannedBackend) async throws -> Node {
        Node(configuration: testConfiguration(), tokens: try await ConnectionTokens(secret: testSecret), proxy: backend)
    }

    @Test(arguments: [
        (["result": ["data": ["ok": true]]], nil),
        (["error": ["code": 1002, "message": "no"]], 1002),
        (["error": ["code": 5, "message": "out of range"]], 100),
        (["result": "not an object"], 100),
        (["disconnect": ["code": 99]], 100),
    ] as [(JSON, UInt32?)])
    func anRPCAnswerReachesTheClientAsCentrifugoWould(_ answer: JSON, _ code: UInt32?) async throws {
        let backend = CannedBackend(answer)
        var alice = try await TestClient.connected(try await Self.node(backend), user: "alice")
        let reply = try await alice.call(.rpc(method: "app.thing", data: ["n": 1]))
        #expect(reply.errorCode == code)
        if code == nil { #expect(reply.body == .rpc(data: RawJSON(["ok": true]))) }
        let (kind, body) = try #require(backend.bodies.withLock { $0.last })
        #expect(kind == .rpc && body["method"] == "app.thing" && body["user"] == "alice" && body["data"] == ["n": 1])
        #expect(try await alice.call(.ping).body == .ping, "the connection goes on")
    }

    @Test func aDisconnectAnswerClosesWithItsCode() async throws {
        let backend = CannedBackend(["disconnect": ["code": 4501, "reason": "banned"]])
        var alice = try await TestClient.connected(try await Self.node(backend), user: "alice")
        _ = await alice.send(.rpc(method: "app.thing", data: nil))
        #expect(try await alice.closeCode() == DisconnectCode(code: 4501, reason: "banned"))
    }

    @Test func aConnectWithoutATokenIsAnsweredByTheBackend() async throws {
        let backend = CannedBackend(["result": ["user": "bob", "expire_at": .int(Int64(Date().timeIntervalSince1970) + 600),
                                                 "info": ["n": 1], "meta": ["plan": "gold"], "data": ["hi": "bob"]]])
        let node = try await Self.node(backend)
        var client = TestClient(node: node)
        let reply = try await client.call(.connect(ConnectRequest(data: RawJSON(["device": "phone"]))))
        guard case let .connect(result) = reply.body else { Issue.record("\(reply)"); return }
        #expect(result.data == RawJSON(["hi": "bob"]) && result.expires && result.ttl > 590)
        #expect(client.session.user == "bob")
        let (_, body) = try #require(backend.bodies.withLock { $0.first })
        #expect(body["user"] == nil && body["data"] == ["device": "phone"] && body["transport"] == "websocket")
        // meta stays on the server and goes with the next proxy request.
        backend.answer.withLock { $0 = ["result": [:]] }
        _ = try await client.call(.rpc(method: "app.thing", data: nil))
        #expect(backend.bodies.withLock { $0.last?.1["meta"] } == ["plan": "gold"])
    }

    @Test func aConnectAnswerWithoutAUserIsTheBackendsFault() async throws {
        let node = try await Self.node(CannedBackend(["result": ["info": [:]]]))
        var client = TestClient(node: node)
        #expect(try await client.call(.connect(ConnectRequest())).errorCode == 100)
        #expect(client.session.user == nil && node.stats.clients == 0)
    }
}
