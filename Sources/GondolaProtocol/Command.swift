/// One client command of a frame: `{"id":N,"<method>":{...}}`.
public struct Command: Sendable, Equatable {
    /// What the client asks for.
    public enum Method: Sendable, Equatable {
        case connect(ConnectRequest)
        case subscribe(SubscribeRequest)
        case unsubscribe(channel: String)
        /// The data as the client sent it: one JSON value from a JSON client, any bytes from a Protobuf one.
        case publish(channel: String, data: Payload)
        case presence(channel: String)
        case presenceStats(channel: String)
        case history(HistoryRequest)
        /// The empty `ping` command, answered with an empty `ping` reply.
        case ping
        /// The data arrives parsed, once, and reaches the method's handler as it is.
        case rpc(method: String, data: JSON?)
        /// An asynchronous message to the server; it has no reply.
        case send(data: RawJSON?)
        case refresh(token: String)
        /// A new subscription token for `channel` before the subscription expires.
        case subRefresh(channel: String, token: String)
        /// `{}`: the client's answer to a server ping.
        case pong
    }

    public var id: UInt32
    public var method: Method

    public init(id: UInt32, _ method: Method) {
        self.id = id
        self.method = method
    }

    /// The channel the command names (subscribe, unsubscribe, publish, presence,
    /// presence_stats, history, sub_refresh), or nil for a command about no channel.
    public var channel: String? {
        switch method {
        case let .subscribe(request): return request.channel
        case let .history(request): return request.channel
        case let .unsubscribe(channel), let .publish(channel, _), let .presence(channel), let .presenceStats(channel),
            let .subRefresh(channel, _):
            return channel
        case .connect, .ping, .rpc, .send, .refresh, .pong: return nil
        }
    }

    /// The protocol's name of the method, as used in the JSON key.
    public var methodName: String {
        switch method {
        case .connect: return "connect"
        case .subscribe: return "subscribe"
        case .unsubscribe: return "unsubscribe"
        case .publish: return "publish"
        case .presence: return "presence"
        case .presenceStats: return "presence_stats"
        case .history: return "history"
        case .ping: return "ping"
        case .rpc: return "rpc"
        case .send: return "send"
        case .refresh: return "refresh"
        case .subRefresh: return "sub_refresh"
        case .pong: return "pong"
        }
    }

    public var json: JSON {
        var object = JSONObjectBuilder()
        object.add("id", id)
        switch method {
        case let .connect(request): object.add("connect", request.json)
        case let .subscribe(request): object.add("subscribe", request.json)
        case let .unsubscribe(channel): object.add("unsubscribe", channelBody(channel))
        case let .publish(channel, data):
            var body = JSONObjectBuilder()
            body.add("channel", channel)
            body.add("data", data.jsonValue)
            object.add("publish", body.json)
        case let .presence(channel): object.add("presence", channelBody(channel))
        case let .presenceStats(channel): object.add("presence_stats", channelBody(channel))
        case let .history(request): object.add("history", request.json)
        case .ping: object.add("ping", JSON.object([]))
        case let .rpc(method, data):
            var body = JSONObjectBuilder()
            body.add("method", method)
            body.add("data", data)
            object.add("rpc", body.json)
        case let .send(data):
            var body = JSONObjectBuilder()
            body.add("data", data)
            object.add("send", body.json)
        case let .refresh(token):
            var body = JSONObjectBuilder()
            body.add("token", token)
            object.add("refresh", body.json)
        case let .subRefresh(channel, token):
            var body = JSONObjectBuilder()
            body.add("channel", channel)
            body.add("token", token)
            object.add("sub_refresh", body.json)
        case .pong: break
        }
        return object.json
    }

    private func channelBody(_ channel: String) -> JSON {
        var body = JSONObjectBuilder()
        body.add("channel", channel)
        return body.json
    }

    private static let methodKeys: Set<String> = [
        "connect", "subscribe", "unsubscribe", "publish", "presence", "presence_stats",
        "history", "ping", "rpc", "send", "refresh", "sub_refresh",
    ]

    /// Decodes one command object. Unknown members are refused so that a
    /// misspelled method is reported rather than silently ignored.
    public init(json: JSON) throws(ProtocolDecodingError) {
        let fields = try ProtocolFields(json, path: "command")
        let id = try fields.uint32("id")
        var methods: [(key: String, value: JSON)] = []
        for member in fields.members where member.key != "id" {
            guard Self.methodKeys.contains(member.key) else {
                throw ProtocolDecodingError("unknown command member '\(member.key)'")
            }
            if !member.value.isNull { methods.append(member) }
        }
        guard methods.count <= 1 else {
            throw ProtocolDecodingError("a command carries one method, got \(methods.map(\.key).joined(separator: ", "))")
        }
        guard let (name, body) = methods.first else {
            guard id == 0 else { throw ProtocolDecodingError("command \(id) has no method") }
            self.init(id: 0, .pong)
            return
        }
        guard id > 0 || name == "send" else { throw ProtocolDecodingError("command '\(name)' needs a positive id") }
        let bodyFields = try ProtocolFields(body, path: name)
        let method: Method
        switch name {
        case "connect": method = .connect(try ConnectRequest(json: body))
        case "subscribe": method = .subscribe(try SubscribeRequest(json: body))
        case "unsubscribe": method = .unsubscribe(channel: try bodyFields.protobufString("channel"))
        case "publish":
            guard let data = bodyFields.raw("data") else { throw ProtocolDecodingError("publish.data is required") }
            method = .publish(channel: try bodyFields.protobufString("channel"), data: Payload(data))
        case "presence": method = .presence(channel: try bodyFields.protobufString("channel"))
        case "presence_stats": method = .presenceStats(channel: try bodyFields.protobufString("channel"))
        case "history": method = .history(try HistoryRequest(json: body))
        case "ping": method = .ping
        case "rpc": method = .rpc(method: try bodyFields.protobufString("method"), data: bodyFields.value("data"))
        case "send": method = .send(data: bodyFields.raw("data"))
        case "sub_refresh":
            method = .subRefresh(channel: try bodyFields.protobufString("channel"), token: try bodyFields.protobufString("token"))
        default: method = .refresh(token: try bodyFields.protobufString("token"))
        }
        self.init(id: id, method)
    }
}
