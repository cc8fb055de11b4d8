import Foundation
import GondolaHub
import GondolaProtocol
import GondolaServer
import GondolaTestSupport
import Testing

/// The HTTP transports end to end over real sockets, with a client written from the
/// protocol docs (`RawHTTPStream`): HTTP-streaming in both encodings and SSE with their
/// commands posted to `/emulation`, the unidirectional HTTP stream, SSE and WebSocket, and
/// their refusals and limits, the server serving other clients throughout.
@Suite struct HTTPTransportTests {
    static func configuration() -> ServerConfiguration {
        var configuration = RunningServer.configuration()
        configuration.transports.uniHTTPStream = true
        configuration.transports.uniSSE = true
        configuration.transports.uniWebSocket = true
        configuration.hub.userSubscribeToPersonal = true
        return configuration
    }

    private static func frame(_ commands: [Command], _ encoding: ProtocolEncoding) -> [UInt8] {
        encoding.frame(commands.map { encoding.encode($0) })
    }

    private static func connectResult(_ message: ServerMessage?) throws -> ConnectResult {
        switch message {
        case let .reply(reply)?:
            guard case let .connect(result) = reply.body else { throw HarnessError("not a connect reply: \(reply)") }
            return result
        case let .push(push)?:
            guard case let .connect(result) = push.body else { throw HarnessError("not a connect push: \(push)") }
            return result
        default: throw HarnessError("no connect result: \(String(describing: message))")
        }
    }

    private static func isPublication(_ message: ServerMessage, on channel: String) -> Bool {
        if case let .push(push) = message, push.channel == channel, case .publication = push.body { return true }
        return false
    }

    private static func disconnect(in messages: [ServerMessage]) -> DisconnectCode? {
        messages.lazy.compactMap { message -> DisconnectCode? in
            if case let .push(push) = message, case let .disconnect(code) = push.body { return code }
            return nil
        }.last
    }

    @Test(arguments: ProtocolEncoding.allCases)
    func anHTTPStreamCarriesASessionWhoseCommandsArePostedToEmulation(encoding: ProtocolEncoding) async throws {
        let server = try await RunningServer.start(Self.configuration())
        let token = try await server.token("ann")
        let stream = try await RawHTTPStream(
            port: server.port, path: "/connection/http_stream",
            body: Self.frame([Command(id: 1, .connect(ConnectRequest(token: token)))], encoding), encoding: encoding)
        #expect(stream.status == 200)
        let connected = try Self.connectResult(try await stream.next())
        #expect(connected.session.count == 32)
        #expect(connected.node == server.server.node.uid)
        #expect(connected.pong)

        // Later commands go through /emulation; their replies come on the stream.
        var subscribe = SubscribeRequest(channel: "room:lobby")
        subscribe.recover = true
        let (status, _) = try await RawHTTPStream.emulate(
            port: server.port, node: connected.node, session: connected.session,
            commands: Self.frame([Command(id: 2, .subscribe(subscribe))], encoding), encoding: encoding)
        #expect(status == 204)
        let subscribed = try await stream.next()
        guard case let .reply(reply)? = subscribed, reply.id == 2, case .subscribe = reply.body else {
            throw HarnessError("no subscribe reply: \(String(describing: subscribed))")
        }
        // Byte-for-byte payloads, from the server API and from a WebSocket client.
        let (published, _) = try await server.post("/api/publish", body: #"{"channel":"room:lobby","data":{"n": 1.50}}"#)
        #expect(published == 200)
        let messages = try await stream.messages { Self.isPublication($0, on: "room:lobby") }
        guard case let .push(push)? = messages.last, case let .publication(publication) = push.body else { throw HarnessError("no publication") }
        #expect(publication.data.bytes == Array(#"{"n": 1.50}"#.utf8))
        #expect(publication.offset == 1)

        // Several commands in one request run in order.
        let both = Self.frame(
            [Command(id: 3, .publish(channel: "room:lobby", data: Payload(.string("mine")))), Command(id: 4, .presenceStats(channel: "room:lobby"))],
            encoding)
        let (second, _) = try await RawHTTPStream.emulate(
            port: server.port, node: connected.node, session: connected.session, commands: both, encoding: encoding)
        #expect(second == 204)
        let replies = try await stream.messages { if case let .reply(reply) = $0 { reply.id == 4 } else { false } }
        let ids = replies.compactMap { if case let .reply(reply) = $0 { reply.id } else { nil } }
        #expect(ids == [3, 4])

        // The server ends the session: a disconnect push, then the stream ends.
        try await server.server.node.disconnect(user: "ann")
        #expect(Self.disconnect(in: try await stream.rest()) == .forceDisconnect)
        try await server.stop()
    }

    @Test func sseOpensWithAGetAndRecoversWhatWasMissed() async throws {
        let server = try await RunningServer.start(Self.configuration())
        for index in 1...3 {
            _ = try await server.post("/api/publish", body: #"{"channel":"board:news","data":{"i":\#(index)}}"#)
        }
        var subscribe = SubscribeRequest(channel: "board:news")
        subscribe.recover = true
        subscribe.offset = 1
        subscribe.epoch = try await server.server.node.history(channel: "board:news", limit: 0, since: nil, reverse: false).epoch
        let connect = ProtocolEncoding.json.encode(Command(id: 1, .connect(ConnectRequest(token: try await server.token("bea")))))
        let query = String(decoding: connect, as: UTF8.self).addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let stream = try await RawHTTPStream(port: server.port, method: "GET", path: "/connection/sse?cf_connect=\(query)", framing: .events)
        #expect(stream.status == 200)
        #expect(RawConnection.header("content-type", in: stream.headers) == "text/event-stream; charset=utf-8")
        let connected = try Self.connectResult(try await stream.next())
        let (status, _) = try await RawHTTPStream.emulate(
            port: server.port, node: connected.node, session: connected.session,
            commands: ProtocolEncoding.json.encode(Command(id: 2, .subscribe(subscribe))), encoding: .json)
        #expect(status == 204)
        let reply = try await stream.next()
        guard case let .reply(answer)? = reply, case let .subscribe(result) = answer.body else { throw HarnessError("no subscribe reply") }
        #expect(result.recovered)
        #expect(result.publications.map(\.offset) == [2, 3])
        try await server.stop()
    }

    @Test func emulationRefusalsArePreciseAndChangeNothing() async throws {
        let server = try await RunningServer.start(Self.configuration())
        let token = try await server.token("cid")
        let stream = try await RawHTTPStream(
            port: server.port, path: "/connection/http_stream", body: Self.frame([Command(id: 1, .connect(ConnectRequest(token: token)))], .json))
        let connected = try Self.connectResult(try await stream.next())
        let node = connected.node

        let (noSession, noSessionBody) = try await RawHTTPStream.emulate(
            port: server.port, node: node, session: "nope", commands: [], encoding: .json)
        #expect(noSession == 404)
        #expect(noSessionBody.contains("no open session"))
        let (noNode, noNodeBody) = try await RawHTTPStream.emulate(
            port: server.port, node: "elsewhere", session: connected.session, commands: [], encoding: .json)
        #expect(noNode == 404)
        #expect(noNodeBody.contains("elsewhere"))
        // A Protobuf request cannot carry commands to a JSON session.
        let (wrongKind, _) = try await RawHTTPStream.emulate(
            port: server.port, node: node, session: connected.session, commands: [1, 2], encoding: .protobuf)
        #expect(wrongKind == 400)
        let garbage = try RawConnection(port: server.port)
        try garbage.write(Array("POST /emulation HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\n\r\n{x}".utf8))
        #expect(try await garbage.responseHeaders().first?.contains("400") == true)
        let tooLarge = try await RawHTTPStream(port: server.port, path: "/emulation", body: Array(repeating: 0x20, count: 70_000))
        #expect(tooLarge.status == 413)

        // The session is untouched: it still answers.
        let (status, _) = try await RawHTTPStream.emulate(
            port: server.port, node: node, session: connected.session,
            commands: ProtocolEncoding.json.encode(Command(id: 2, .rpc(method: "server.time", data: nil))), encoding: .json)
        #expect(status == 204)
        let answer = try await stream.next()
        guard case let .reply(reply)? = answer, reply.id == 2 else { throw HarnessError("no rpc reply: \(String(describing: answer))") }

        // Broken commands close that session with 3501 and a disconnect push; the next request finds no session.
        let (broken, _) = try await RawHTTPStream.emulate(
            port: server.port, node: node, session: connected.session, commands: Array("{not json".utf8), encoding: .json)
        #expect(broken == 204)
        #expect(Self.disconnect(in: try await stream.rest())?.code == 3501)
        try await eventually("the session gone") {
            try await RawHTTPStream.emulate(port: server.port, node: node, session: connected.session, commands: Array("{}".utf8), encoding: .json).0
                == 404
        }
        // The server keeps serving other clients.
        let other = try await server.client("dan")
        #expect(try await other.rpc("server.time")["ts"] != nil)
        try await server.stop()
    }

    @Test func openingRequestsAreRefusedBeforeASessionOpens() async throws {
        var configuration = Self.configuration()
        configuration.clientConnectionLimit = 1
        let server = try await RunningServer.start(configuration)
        let connect = Self.frame([Command(id: 1, .connect(ConnectRequest(token: try await server.token("eve"))))], .json)
        let foreign = try await RawHTTPStream(
            port: server.port, path: "/connection/http_stream", body: connect, headers: ["Origin: https://evil.example"])
        #expect(foreign.status == 403)
        let empty = try await RawHTTPStream(port: server.port, path: "/connection/http_stream")
        #expect(empty.status == 400)
        let sseWithoutConnect = try await RawHTTPStream(port: server.port, method: "GET", path: "/connection/sse", framing: .events)
        #expect(sseWithoutConnect.status == 400)
        let badUni = try await RawHTTPStream(port: server.port, path: "/connection/uni_http_stream", body: Array("[1".utf8))
        #expect(badUni.status == 400)

        let first = try await RawHTTPStream(port: server.port, path: "/connection/http_stream", body: connect)
        _ = try Self.connectResult(try await first.next())
        let second = try await RawHTTPStream(port: server.port, path: "/connection/sse", body: connect, framing: .events)
        #expect(second.status == 503)
        try await server.stop()
    }

    @Test func unidirectionalStreamsConnectFromTheirRequestAndSubscribeOnTheServer() async throws {
        var configuration = Self.configuration()
        configuration.hub.pingInterval = .seconds(1)
        configuration.hub.pongTimeout = .seconds(1)
        let server = try await RunningServer.start(configuration)
        let personal = server.server.configuration.hub.personalChannel(of: "fay")
        let token = try await server.token("fay")
        let request = ConnectRequest(token: token).json.bytes
        let http = try await RawHTTPStream(port: server.port, path: "/connection/uni_http_stream", body: request)
        // As a browser's URLSearchParams writes it: a space is `+`, the rest percent-encoded.
        let query = #"{"token": "\#(token)", "name": "fay's phone"}"#.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union([" "]))!
            .replacingOccurrences(of: " ", with: "+")
        let sse = try await RawHTTPStream(port: server.port, method: "GET", path: "/connection/uni_sse?cf_connect=\(query)", framing: .events)
        for stream in [http, sse] {
            let connected = try Self.connectResult(try await stream.next())
            #expect(!connected.pong)
            #expect(connected.subs[personal] != nil)
        }
        try await eventually("both subscribed") { server.server.node.channels()[personal] == 2 }
        _ = try await server.post("/api/publish", body: #"{"channel":"\#(personal)","data":{"hello":true}}"#)
        for stream in [http, sse] {
            let messages = try await stream.messages { Self.isPublication($0, on: personal) }
            #expect(!messages.isEmpty)
        }
        // Pings arrive and, with no pong expected, the streams stay open past the pong timeout.
        for stream in [http, sse] {
            _ = try await stream.messages { $0 == .ping }
            _ = try await stream.messages { $0 == .ping }
        }
        // A bad token: a disconnect push and the end of the stream.
        let refused = try await RawHTTPStream(port: server.port, path: "/connection/uni_http_stream", body: Array(#"{"token":"bad"}"#.utf8))
        #expect(Self.disconnect(in: try await refused.rest())?.code == 3500)
        try await server.server.node.disconnect(user: "fay")
        #expect(Self.disconnect(in: try await http.rest()) == .forceDisconnect)
        #expect(Self.disconnect(in: try await sse.rest()) == .forceDisconnect)
        try await server.stop()
    }

    /// Centrifugo's `session` member picks one connection by the session id its connect result
    /// named, on `subscribe`, `unsubscribe`, `refresh` and `disconnect` alike.
    @Test func theServerAPIReachesOneConnectionBySessionID() async throws {
        let server = try await RunningServer.start(Self.configuration())
        let personal = server.server.configuration.hub.personalChannel(of: "ivy")
        let request = ConnectRequest(token: try await server.token("ivy")).json.bytes
        let first = try await RawHTTPStream(port: server.port, path: "/connection/uni_http_stream", body: request)
        let second = try await RawHTTPStream(port: server.port, path: "/connection/uni_sse", body: request, framing: .events)
        let firstSession = try Self.connectResult(try await first.next()).session
        let secondSession = try Self.connectResult(try await second.next()).session
        #expect(!firstSession.isEmpty && !secondSession.isEmpty && firstSession != secondSession)

        let unsubscribed = try await server.post("/api/unsubscribe", body: #"{"user":"ivy","channel":"\#(personal)","session":"\#(firstSession)"}"#)
        #expect(unsubscribed.0 == 200 && unsubscribed.1["error"] == nil, "\(unsubscribed)")
        let ended = try await first.messages { if case let .push(push) = $0, case .unsubscribe = push.body { true } else { false } }
        #expect(ended.allSatisfy { !Self.isPublication($0, on: personal) })
        let subscribed = try await server.post("/api/subscribe", body: #"{"user":"ivy","channel":"room:s","session":"\#(firstSession)"}"#)
        #expect(subscribed.1["error"] == nil, "\(subscribed)")
        _ = try await first.messages { if case let .push(push) = $0, push.channel == "room:s", case .subscribe = push.body { true } else { false } }
        _ = try await server.post("/api/publish", body: #"{"channel":"\#(personal)","data":{"to":"second"}}"#)
        _ = try await second.messages { Self.isPublication($0, on: personal) }

        let refreshed = try await server.post("/api/refresh", body: #"{"user":"ivy","session":"\#(secondSession)","expired":true}"#)
        #expect(refreshed.1["error"] == nil, "\(refreshed)")
        #expect(Self.disconnect(in: try await second.rest()) == .expired)
        // A session that matches none of the user's connections reaches nothing.
        _ = try await server.post("/api/disconnect", body: #"{"user":"ivy","session":"\#(secondSession)"}"#)
        _ = try await server.post("/api/publish", body: #"{"channel":"room:s","data":{"to":"first"}}"#)
        _ = try await first.messages { Self.isPublication($0, on: "room:s") }
        _ = try await server.post("/api/disconnect", body: #"{"user":"ivy","session":"\#(firstSession)"}"#)
        #expect(Self.disconnect(in: try await first.rest()) == .forceDisconnect)
        try await server.stop()
    }

    @Test func aUnidirectionalWebSocketReadsItsConnectRequestFirstAndEndsWithADisconnectPush() async throws {
        let server = try await RunningServer.start(Self.configuration())
        let personal = server.server.configuration.hub.personalChannel(of: "gus")
        let request = ConnectRequest(token: try await server.token("gus")).json.bytes
        let query = String(decoding: request, as: UTF8.self).addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let fromQuery = try RawWebSocket(port: server.port, path: "/connection/uni_websocket?cf_connect=\(query)")
        let firstMessage = try RawWebSocket(port: server.port, path: "/connection/uni_websocket")
        try firstMessage.sendText(request)
        for socket in [fromQuery, firstMessage] {
            #expect(try await socket.responseHeaders().first?.contains("101") == true)
            let frame = try await socket.nextFrame()
            let messages = try ProtocolEncoding.json.unidirectionalMessages(in: frame.payload)
            #expect(try Self.connectResult(messages.first).subs[personal] != nil)
            // What the client sends afterwards is ignored.
            try socket.sendText(Array(#"{"id":9,"rpc":{"method":"server.time"}}"#.utf8))
        }
        _ = try await server.post("/api/publish", body: #"{"channel":"\#(personal)","data":{"n":2}}"#)
        try await server.server.node.disconnect(user: "gus")
        for socket in [fromQuery, firstMessage] {
            var kinds: [String] = []
            while true {
                let frame = try await socket.nextFrame()
                if frame.opcode == 8 {
                    #expect(Int(frame.payload[0]) << 8 | Int(frame.payload[1]) == 3503)
                    break
                }
                for message in try ProtocolEncoding.json.unidirectionalMessages(in: frame.payload) {
                    guard case let .push(push) = message else {
                        kinds.append("other")
                        continue
                    }
                    switch push.body {
                    case .publication: kinds.append("pub")
                    case .disconnect: kinds.append("disconnect")
                    default: kinds.append("other")
                    }
                }
            }
            #expect(kinds == ["pub", "disconnect"])
        }
        try await server.stop()
    }

    @Test func aStalledStreamReaderIsDroppedAndOthersKeepReceiving() async throws {
        var configuration = Self.configuration()
        configuration.hub.clientQueueMaxBytes = 65_536
        let server = try await RunningServer.start(configuration)
        let node = server.server.node
        let healthy = try await server.client("healthy")
        _ = try await healthy.subscribe("room:big")
        let token = try await server.token("silent")
        let connect = Self.frame(
            [Command(id: 1, .connect(ConnectRequest(token: token))), Command(id: 2, .subscribe(SubscribeRequest(channel: "room:big")))], .json)
        // Opens its stream, then never reads: a tiny receive buffer fills at once.
        let silent = try await RawHTTPStream(port: server.port, path: "/connection/http_stream", body: connect, receiveBuffer: 4096)
        try await eventually("both subscribers on room:big") { node.channels()["room:big"] == 2 }
        try await StalledClientTests.floodUntilTheSilentOneIsDropped(node: node, healthy: healthy)
        withExtendedLifetime(silent) {}
        try await server.stop()
    }
}
