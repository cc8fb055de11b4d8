import Foundation
import GondolaProtocol
import Synchronization
import Testing

@_spi(Engine) @testable import GondolaHub

@Suite struct ConnectTests {
    @Test func connectAnswersClientIdPingAndPong() async throws {
        let node = try await makeNode()
        var client = TestClient(node: node)
        let token = try await ConnectionTokens(secret: testSecret).mint(user: "alice", ttl: .seconds(120))
        let reply = try await client.call(.connect(ConnectRequest(token: token)))
        guard case let .connect(result) = reply.body else {
            Issue.record("\(reply)")
            return
        }
        #expect(result.client == client.session.id)
        #expect(result.ping == 25)
        #expect(result.pong)
        #expect(result.expires)
        #expect((118...120).contains(result.ttl))
        #expect(client.session.user == "alice")
        #expect(node.stats.clients == 1)
    }

    @Test func badSignatureClosesWith3500() async throws {
        let node = try await makeNode()
        var client = TestClient(node: node)
        let forged = try await ConnectionTokens(secret: "another-secret-of-at-least-32-bytes").mint(user: "alice")
        _ = await client.send(.connect(ConnectRequest(token: forged)))
        #expect(try await client.closeCode().code == 3500)
        #expect(node.stats.clients == 0)
    }

    @Test func malformedTokenClosesWith3500() async throws {
        let node = try await makeNode()
        var client = TestClient(node: node)
        _ = await client.send(.connect(ConnectRequest(token: "not-a-jwt")))
        #expect(try await client.closeCode().code == 3500)
    }

    @Test func expiredTokenGets109AndMayRetry() async throws {
        let node = try await makeNode()
        var client = TestClient(node: node)
        let tokens = try await ConnectionTokens(secret: testSecret)
        let expired = try await tokens.mint(user: "alice", ttl: .seconds(10), now: Date().addingTimeInterval(-60))
        let reply = try await client.call(.connect(ConnectRequest(token: expired)))
        #expect(reply.errorCode == 109)
        let retry = try await client.call(.connect(ConnectRequest(token: try await tokens.mint(user: "alice"))))
        guard case .connect = retry.body else {
            Issue.record("\(retry)")
            return
        }
    }

    @Test func commandBeforeConnectClosesWith3501() async throws {
        let node = try await makeNode()
        var client = TestClient(node: node)
        _ = await client.send(.subscribe(SubscribeRequest(channel: "room:1")))
        let code = try await client.closeCode()
        #expect(code.code == 3501)
        #expect(code.reason.contains("first command must be connect"))
    }

    @Test func invalidJSONClosesWith3501NamingTheByte() async throws {
        let node = try await makeNode()
        let client = try await TestClient.connected(node, user: "alice")
        await client.sendFrame("{\"id\":1,")
        let code = try await client.closeCode()
        #expect(code.code == 3501)
        #expect(code.reason.contains("invalid JSON at byte"))
    }

    @Test func unknownCommandClosesWith3501() async throws {
        let node = try await makeNode()
        let client = try await TestClient.connected(node, user: "alice")
        await client.sendFrame(#"{"id":5,"teleport":{}}"#)
        #expect(try await client.closeCode().reason.contains("teleport"))
    }

    @Test func secondConnectClosesWith3501() async throws {
        let node = try await makeNode()
        var client = try await TestClient.connected(node, user: "alice")
        _ = await client.send(.connect(ConnectRequest(token: try await ConnectionTokens(secret: testSecret).mint(user: "alice"))))
        #expect(try await client.closeCode().reason.contains("already connected"))
    }

    @Test func binaryFrameClosesWith3506() async throws {
        let node = try await makeNode()
        let client = try await TestClient.connected(node, user: "alice")
        client.session.handleFrameOfWrongKind()
        #expect(try await client.closeCode().code == 3506)
    }

    @Test func refreshExtendsAndRefusesAnotherUser() async throws {
        let node = try await makeNode()
        var client = try await TestClient.connected(node, user: "alice")
        let tokens = try await ConnectionTokens(secret: testSecret)
        let reply = try await client.call(.refresh(token: try await tokens.mint(user: "alice", ttl: .seconds(600))))
        guard case let .refresh(result) = reply.body else {
            Issue.record("\(reply)")
            return
        }
        #expect(result.expires && result.ttl > 590)
        _ = await client.send(.refresh(token: try await tokens.mint(user: "mallory")))
        #expect(try await client.closeCode().code == 3500)
    }

    @Test func severalCommandsInOneFrameAreAnsweredInOrder() async throws {
        let node = try await makeNode()
        let client = try await TestClient.connected(node, user: "alice")
        let frame = [
            Command(id: 10, .subscribe(SubscribeRequest(channel: "room:a"))),
            Command(id: 11, .publish(channel: "room:a", data: Payload(["n": 1]))),
            Command(id: 12, .ping),
        ].map(\.json.text).joined(separator: "\n")
        await client.sendFrame(frame)
        var ids: [UInt32] = []
        var pubs = 0
        while ids.count < 3 {
            switch try await client.next() {
            case let .reply(reply): ids.append(reply.id)
            case .push: pubs += 1
            case .ping: break
            }
        }
        #expect(ids == [10, 11, 12])
        #expect(pubs == 1)
    }
}

@Suite struct ChannelTests {
    @Test func publicationReachesEverySubscriberWithOffsets() async throws {
        let node = try await makeNode()
        var alice = try await TestClient.connected(node, user: "alice", info: ["name": "Alice"])
        var bob = try await TestClient.connected(node, user: "bob")
        _ = try await alice.call(.subscribe(SubscribeRequest(channel: "room:1")))
        _ = try await bob.call(.subscribe(SubscribeRequest(channel: "room:1")))
        let published = try await alice.call(.publish(channel: "room:1", data: Payload(["text": "hi"])))
        #expect(published.body == .publish)
        for client in [alice, bob] {
            var publication: Publication?
            while publication == nil { publication = try await client.next().publication }
            #expect(publication?.offset == 1)
            #expect(publication?.data == Payload(["text": "hi"]))
            #expect(publication?.info?.user == "alice")
            #expect(publication?.info?.connInfo == RawJSON(["name": "Alice"]))
        }
    }

    @Test func channelRulesGiveTheirCodes() async throws {
        let node = try await makeNode { $0.maxChannelsPerClient = 2 }
        var client = try await TestClient.connected(node, user: "alice")
        #expect(try await client.call(.subscribe(SubscribeRequest(channel: "nowhere:1"))).errorCode == 102)
        #expect(try await client.call(.subscribe(SubscribeRequest(channel: "room:bad channel"))).errorCode == 107)
        // Longer than channel_max_length: 107, as centrifuge answers "channel too long".
        #expect(try await client.call(.subscribe(SubscribeRequest(channel: String(repeating: "a", count: 256)))).errorCode == 107)
        #expect(try await client.call(.subscribe(SubscribeRequest(channel: "locked:1"))).errorCode == 103)
        #expect(try await client.call(.subscribe(SubscribeRequest(channel: "personal:#bob"))).errorCode == 103)
        #expect(try await client.call(.subscribe(SubscribeRequest(channel: "personal:#alice"))).errorCode == nil)
        #expect(try await client.call(.subscribe(SubscribeRequest(channel: "personal:#alice"))).errorCode == 105)
        #expect(try await client.call(.subscribe(SubscribeRequest(channel: "room:1"))).errorCode == nil)
        #expect(try await client.call(.subscribe(SubscribeRequest(channel: "room:2"))).errorCode == 106)
        #expect(try await client.call(.publish(channel: "room:9", data: Payload(1))).errorCode == 103)
        #expect(try await client.call(.history(HistoryRequest(channel: "room:9"))).errorCode == 103)
        #expect(try await client.call(.presence(channel: "personal:#alice")).errorCode == 103)
        #expect(!client.session.isClosed)
    }

    @Test(arguments: [
        Command.Method.subscribe(SubscribeRequest(channel: "")), .unsubscribe(channel: ""), .publish(channel: "", data: Payload(1)),
        .presence(channel: ""), .presenceStats(channel: ""), .history(HistoryRequest(channel: "")), .subRefresh(channel: "", token: "t"),
    ])
    func aCommandWithoutItsChannelClosesWith3501AsCentrifugeDoes(_ method: Command.Method) async throws {
        let node = try await makeNode()
        var client = try await TestClient.connected(node, user: "alice")
        _ = await client.send(method)
        let code = try await client.closeCode()
        #expect(code.code == 3501 && code.reason.contains("channel required"))
    }

    /// A refresh without a token closes with 3501, as centrifuge closes it.
    @Test func aRefreshWithoutATokenClosesWith3501() async throws {
        let node = try await makeNode()
        var client = try await TestClient.connected(node, user: "alice")
        _ = await client.send(.refresh(token: ""))
        let code = try await client.closeCode()
        #expect(code.code == 3501 && code.reason.contains("token required"))
    }

    @Test func aNamespaceMayLetClientsPublishWithoutSubscribing() async throws {
        let node = try await makeNode { configuration in
            var open = NamespaceOptions(name: "open")
            open.allowPublishForClient = true
            configuration.namespaces["open"] = open
        }
        var reader = try await TestClient.connected(node, user: "reader")
        var writer = try await TestClient.connected(node, user: "writer")
        #expect(try await reader.call(.subscribe(SubscribeRequest(channel: "room:3"))).errorCode == nil)
        #expect(try await writer.call(.publish(channel: "room:3", data: Payload(1))).errorCode == 103, "room needs a subscription")
        // "open" lets clients subscribe only when it says so, but publishing needs nothing.
        #expect(try await writer.call(.publish(channel: "open:3", data: Payload(["n": 1]))).body == .publish)
        #expect(try await writer.call(.subscribe(SubscribeRequest(channel: "open:3"))).errorCode == 103)
    }

    @Test func dialogChannelAdmitsEachListedUser() async throws {
        let node = try await makeNode()
        var bob = try await TestClient.connected(node, user: "bob")
        var carol = try await TestClient.connected(node, user: "carol")
        #expect(try await bob.call(.subscribe(SubscribeRequest(channel: "personal:#alice,bob"))).errorCode == nil)
        #expect(try await carol.call(.subscribe(SubscribeRequest(channel: "personal:#alice,bob"))).errorCode == 103)
    }

    @Test func presenceAndJoinLeave() async throws {
        let node = try await makeNode()
        var alice = try await TestClient.connected(node, user: "alice")
        var bob = try await TestClient.connected(node, user: "bob")
        _ = try await alice.call(.subscribe(SubscribeRequest(channel: "room:p", joinLeave: true)))
        _ = try await bob.call(.subscribe(SubscribeRequest(channel: "room:p")))
        var joined: ClientInfo?
        while joined == nil {
            if case let .push(push) = try await alice.next(), case let .join(info) = push.body, info.user == "bob" { joined = info }
        }
        #expect(joined?.client == bob.session.id)
        let presence = try await alice.call(.presence(channel: "room:p"))
        guard case let .presence(clients) = presence.body else {
            Issue.record("\(presence)")
            return
        }
        #expect(Set(clients.values.map(\.user)) == ["alice", "bob"])
        #expect(try await alice.call(.presenceStats(channel: "room:p")).body == .presenceStats(PresenceStats(numClients: 2, numUsers: 2)))
        bob.session.transportClosed()
        var left: ClientInfo?
        while left == nil {
            if case let .push(push) = try await alice.next(), case let .leave(info) = push.body { left = info }
        }
        #expect(left?.user == "bob")
        #expect(try await alice.call(.presenceStats(channel: "room:p")).body == .presenceStats(PresenceStats(numClients: 1, numUsers: 1)))
    }

    @Test func presenceStatsCountConnectionsAndDistinctUsersAsTheyComeAndGo() async throws {
        let node = try await makeNode()
        var first = try await TestClient.connected(node, user: "alice")
        var second = try await TestClient.connected(node, user: "alice")
        var bob = try await TestClient.connected(node, user: "bob")
        _ = try await first.call(.subscribe(SubscribeRequest(channel: "room:s")))
        _ = try await second.call(.subscribe(SubscribeRequest(channel: "room:s")))
        _ = try await bob.call(.subscribe(SubscribeRequest(channel: "room:s")))
        func stats() async throws -> PresenceStats { try await node.presenceStats(channel: "room:s") }
        #expect(try await stats() == PresenceStats(numClients: 3, numUsers: 2))
        let presence = try await node.presence(channel: "room:s")
        #expect(presence.count == 3 && Set(presence.values.map(\.user)).count == 2, "the counts agree with the presence itself")
        _ = try await first.call(.unsubscribe(channel: "room:s"))
        #expect(try await stats() == PresenceStats(numClients: 2, numUsers: 2), "alice still has a connection in it")
        _ = try await first.call(.subscribe(SubscribeRequest(channel: "room:s")))
        _ = try await first.call(.subscribe(SubscribeRequest(channel: "room:s")))
        #expect(try await stats() == PresenceStats(numClients: 3, numUsers: 2), "a second subscribe of the same channel is refused, not counted")
        second.session.transportClosed()
        _ = try await first.call(.unsubscribe(channel: "room:s"))
        #expect(try await stats() == PresenceStats(numClients: 1, numUsers: 1))
        _ = try await bob.call(.unsubscribe(channel: "room:s"))
        #expect(try await stats() == PresenceStats(numClients: 0, numUsers: 0))
        await #expect(throws: HubError.self) { try await node.presenceStats(channel: "plain") }
    }

    @Test func forcePushJoinLeaveReachesSubscribersThatDidNotAsk() async throws {
        let node = try await makeNode { $0.namespaces["room"]?.forcePushJoinLeave = true }
        var alice = try await TestClient.connected(node, user: "alice")
        var bob = try await TestClient.connected(node, user: "bob")
        _ = try await alice.call(.subscribe(SubscribeRequest(channel: "room:f")))
        _ = try await bob.call(.subscribe(SubscribeRequest(channel: "room:f")))
        var joined: ClientInfo?
        while joined == nil {
            if case let .push(push) = try await alice.next(), case let .join(info) = push.body, info.user == "bob" { joined = info }
        }
        bob.session.transportClosed()
        var left: ClientInfo?
        while left == nil {
            if case let .push(push) = try await alice.next(), case let .leave(info) = push.body { left = info }
        }
        #expect(left?.user == "bob")
    }

    @Test func withoutForcePushOnlySubscribersThatAskGetJoinAndLeave() async throws {
        let node = try await makeNode()
        var alice = try await TestClient.connected(node, user: "alice")
        var bob = try await TestClient.connected(node, user: "bob")
        _ = try await alice.call(.subscribe(SubscribeRequest(channel: "room:n")))
        _ = try await bob.call(.subscribe(SubscribeRequest(channel: "room:n")))
        // A ping answered after bob's join proves nothing was queued for alice before it.
        #expect(try await alice.call(.ping).body == .ping)
        await #expect(throws: (any Error).self) { try await alice.next(timeout: .milliseconds(200)) }
    }

    @Test func presenceInNamespaceWithoutItIsNotAvailable() async throws {
        let node = try await makeNode { configuration in
            configuration.namespaces[""]?.allowPresenceForSubscriber = true
        }
        var client = try await TestClient.connected(node, user: "alice")
        _ = try await client.call(.subscribe(SubscribeRequest(channel: "plain")))
        #expect(try await client.call(.presence(channel: "plain")).errorCode == 108)
    }

    @Test func serverUnsubscribePushesAndStopsDelivery() async throws {
        let node = try await makeNode()
        var alice = try await TestClient.connected(node, user: "alice")
        _ = try await alice.call(.subscribe(SubscribeRequest(channel: "room:u")))
        try await node.unsubscribe(user: "alice", channel: "room:u")
        guard case let .push(push) = try await alice.next(), case let .unsubscribe(code, _) = push.body else {
            Issue.record("no unsubscribe push")
            return
        }
        #expect(code == 2000)
        #expect(alice.session.subscriptions.isEmpty)
        #expect(node.channels()["room:u"] == nil)
    }

    @Test func serverDisconnectClosesEveryConnectionOfTheUser() async throws {
        let node = try await makeNode()
        let first = try await TestClient.connected(node, user: "alice")
        let second = try await TestClient.connected(node, user: "alice")
        let bob = try await TestClient.connected(node, user: "bob")
        try await node.disconnect(user: "alice")
        #expect(try await first.closeCode().code == 3503)
        #expect(try await second.closeCode().code == 3503)
        #expect(!bob.session.isClosed)
        #expect(node.stats.users == 1)
    }
}

@Suite struct RPCTests {
    @Test func registeredMethodAnswersAndUnknownGets104() async throws {
        let node = try await makeNode()
        node.rpc.register("echo") { context, data in ["user": .string(context.user), "data": data ?? .null] }
        node.rpc.register("fails") { _, _ in throw HubError.badRequest("field x is wrong") }
        var client = try await TestClient.connected(node, user: "alice")
        let echo = try await client.call(.rpc(method: "echo", data: ["a": 1]))
        #expect(echo.body == .rpc(data: RawJSON(["user": "alice", "data": ["a": 1]])))
        #expect(try await client.call(.rpc(method: "nope", data: nil)).errorCode == 104)
        let failed = try await client.call(.rpc(method: "fails", data: nil))
        guard case let .error(error) = failed.body else {
            Issue.record("\(failed)")
            return
        }
        #expect(error.code == 107 && error.message.contains("field x is wrong"))
        let time = try await client.call(.rpc(method: "server.time", data: nil))
        guard case let .rpc(data) = time.body, case let .int(ts)? = data?.value["ts"] else {
            Issue.record("\(time)")
            return
        }
        #expect(abs(Double(ts) / 1000 - Date().timeIntervalSince1970) < 5)
    }

    @Test func earlyAnswerIsTheOnlyReplyAndDoesNotWaitForTheMethod() async throws {
        let node = try await makeNode()
        let gate = AsyncStream.makeStream(of: Void.self)
        node.rpc.register("early") { context, data in
            context.answer?(["early": data ?? .null])
            for await _ in gate.stream { break }
            if data == .string("throw") { throw HubError.badRequest("too late to tell") }
            return ["late": true]
        }
        let client = try await TestClient.connected(node, user: "alice")
        for (id, data) in [(UInt32(10), JSON.string("return")), (11, .string("throw"))] {
            let call = Task { await client.session.handle(frame: Command(id: id, .rpc(method: "early", data: data)).json.bytes) }
            // The reply is out while the method still waits for the gate.
            let reply = try await client.next()
            #expect(reply == .reply(Reply(id: id, .rpc(data: RawJSON(["early": data])))))
            gate.continuation.yield()
            await call.value
        }
        // Neither the returned value nor the error was sent after the early answers.
        if let message = try? await client.next(timeout: .milliseconds(200)) { Issue.record("a second reply: \(message)") }
    }

    @Test func answerIsSentOnce() {
        let sent = Mutex<[RawJSON]>([])
        let answer = RPCAnswer { result in sent.withLock { $0.append(result) } }
        answer(["n": 1])
        answer(["n": 2])
        #expect(!answer.claim())
        #expect(sent.withLock { $0 } == [RawJSON(["n": 1])])
        let unanswered = RPCAnswer { _ in Issue.record("a claimed answer must not send") }
        #expect(unanswered.claim())
        unanswered(["n": 3])
    }

    @Test func sendReachesTheMessageHandler() async throws {
        let node = try await makeNode()
        let received = AsyncStream.makeStream(of: String.self)
        node.onMessage { context, data in received.continuation.yield("\(context.user) \(data?.description ?? "")") }
        var client = try await TestClient.connected(node, user: "alice")
        _ = await client.send(.send(data: RawJSON(["x": 1])))
        var iterator = received.stream.makeAsyncIterator()
        #expect(await iterator.next() == #"alice {"x":1}"#)
    }
}

@Suite struct LimitTests {
    @Test func commandRateGets111ThenCloses3013() async throws {
        let node = try await makeNode { configuration in
            configuration.commandRate = 1
            configuration.commandBurst = 5
        }
        var client = try await TestClient.connected(node, user: "alice")
        var codes: [UInt32?] = []
        for _ in 0..<4 { codes.append(try await client.call(.ping).errorCode) }
        #expect(codes == [nil, nil, nil, nil])
        _ = await client.send(.ping)
        var sawTooMany = false
        for _ in 0..<10 { _ = await client.send(.ping) }
        let code = try await { () async throws -> DisconnectCode in
            while true {
                do {
                    if case let .reply(reply) = try await client.next(), reply.errorCode == 111 {
                        #expect(reply.id > 5, "a refused command is answered with its own id")
                        sawTooMany = true
                    }
                } catch let closed as Closed {
                    return closed.code
                }
            }
        }()
        #expect(sawTooMany)
        #expect(code.code == 3013)
    }

    @Test func repeatedErrorsClose3509() async throws {
        let node = try await makeNode { $0.maxConsecutiveErrors = 3 }
        var client = try await TestClient.connected(node, user: "alice")
        #expect(try await client.call(.rpc(method: "nope", data: nil)).errorCode == 104)
        #expect(try await client.call(.rpc(method: "nope", data: nil)).errorCode == 104)
        _ = await client.send(.rpc(method: "nope", data: nil))
        #expect(try await client.closeCode().code == 3509)
    }

    /// The server's own failures (an engine or store that is down: 100, temporary) are answered
    /// as such and never close the client, however many come in a row; the client's errors still do.
    @Test func temporaryErrorsNeverCountTowardTheConsecutiveErrorsLimit() async throws {
        let node = try await makeNode { $0.maxConsecutiveErrors = 3 }
        node.rpc.register("engine.down") { _, _ in throw HubError.unavailable("the stream store (Redis) is unavailable: connection refused") }
        var client = try await TestClient.connected(node, user: "alice")
        for _ in 0..<10 {
            let error = try #require(try await client.call(.rpc(method: "engine.down", data: nil)).error)
            #expect(error.code == 100 && error.temporary && error.message.contains("Redis"))
        }
        #expect(try await client.call(.rpc(method: "nope", data: nil)).errorCode == 104)
        #expect(try await client.call(.rpc(method: "nope", data: nil)).errorCode == 104)
        _ = await client.send(.rpc(method: "nope", data: nil))
        #expect(try await client.closeCode().code == 3509)
    }

    @Test func slowConsumerIsClosed3008AndOthersKeepReceiving() async throws {
        let node = try await makeNode { $0.clientQueueMaxBytes = 4096 }
        var slow = try await TestClient.connected(node, user: "slow")
        var fast = try await TestClient.connected(node, user: "fast")
        _ = try await slow.call(.subscribe(SubscribeRequest(channel: "room:big")))
        _ = try await fast.call(.subscribe(SubscribeRequest(channel: "room:big")))
        let payload = Payload(.string(String(repeating: "x", count: 1000)))
        for _ in 0..<10 {
            try await node.publish(channel: "room:big", data: payload)
            // The fast client's writer keeps up.
            var publication: Publication?
            while publication == nil { publication = try await fast.next().publication }
        }
        #expect(try await slow.closeCode().code == 3008)
        slow.session.transportClosed()
        #expect(node.channels()["room:big"] == 1)
        try await node.publish(channel: "room:big", data: payload)
        var publication: Publication?
        while publication == nil { publication = try await fast.next().publication }
        #expect(publication?.offset == 11)
    }
}

@Suite struct KeepaliveTests {
    /// A client on a node pinging every 100 ms, after its first ping was sent and read.
    func pingedClient() async throws -> (TestClient, ContinuousClock.Instant) {
        let node = try await makeNode { configuration in
            configuration.pingInterval = .milliseconds(100)
            configuration.pongTimeout = .milliseconds(100)
        }
        let client = try await TestClient.connected(node, user: "alice")
        let start = ContinuousClock.now
        client.session.tick(now: start + .milliseconds(150), date: Date())
        #expect(try await client.next() == .ping)
        return (client, start)
    }

    @Test func pingIsSentAndSilenceCloses3012() async throws {
        let (client, start) = try await pingedClient()
        client.session.tick(now: start + .milliseconds(200), date: Date())
        #expect(!client.session.isClosed)
        client.session.tick(now: start + .milliseconds(400), date: Date())
        #expect(try await client.closeCode().code == 3012)
    }

    @Test func pongKeepsTheConnection() async throws {
        let (client, start) = try await pingedClient()
        // On the simulated clock: the ping left at 150 ms, the pong arrives at 160 ms, and at
        // 300 ms the pong timeout (100 ms) has passed since the ping, not since the pong.
        await client.session.handle(frame: Array("{}".utf8), receivedAt: start + .milliseconds(160))
        client.session.tick(now: start + .milliseconds(300), date: Date())
        #expect(!client.session.isClosed)
    }

    @Test func expiredConnectionIsClosed3005() async throws {
        let node = try await makeNode()
        var client = TestClient(node: node)
        let token = try await ConnectionTokens(secret: testSecret).mint(user: "alice", ttl: .seconds(2))
        _ = try await client.call(.connect(ConnectRequest(token: token)))
        client.session.tick(now: .now, date: Date().addingTimeInterval(30))
        #expect(try await client.closeCode().code == 3005)
    }

    @Test func shutdownClosesEveryone3001() async throws {
        let node = try await makeNode()
        let alice = try await TestClient.connected(node, user: "alice")
        node.shutdown()
        #expect(try await alice.closeCode().code == 3001)
        #expect(node.accept().isClosed)
    }
}
