/// A message the server sends without a command: `{"push":{"channel":"c","<kind>":{...}}}`.
public struct Push: Sendable, Equatable {
    /// What the push carries.
    public enum Body: Sendable, Equatable {
        case publication(Publication)
        case join(ClientInfo)
        case leave(ClientInfo)
        case unsubscribe(code: UInt32, reason: String)
        case message(data: RawJSON)
        case subscribe(SubscribeResult)
        case disconnect(DisconnectCode)
        /// The connection was prolonged by the server (the server API's `refresh`): whether
        /// it expires, and in how many seconds.
        case refresh(expires: Bool, ttl: UInt32)
        /// The connect result of a unidirectional connection, which sends no connect command
        /// to reply to.
        case connect(ConnectResult)
    }

    public var channel: String
    public var body: Body

    public init(channel: String, _ body: Body) {
        self.channel = channel
        self.body = body
    }

    public var json: JSON {
        var push = JSONObjectBuilder()
        push.add("channel", channel)
        switch body {
        case let .publication(publication): push.add("pub", publication.json)
        case let .join(info): push.add("join", JSON.object([(key: "info", value: info.json)]))
        case let .leave(info): push.add("leave", JSON.object([(key: "info", value: info.json)]))
        case let .unsubscribe(code, reason):
            var body = JSONObjectBuilder()
            body.add("code", code)
            body.add("reason", reason)
            push.add("unsubscribe", body.json)
        case let .message(data): push.add("message", JSON.object([(key: "data", value: .raw(data))]))
        case let .subscribe(result): push.add("subscribe", result.json)
        case let .disconnect(disconnect):
            var body = JSONObjectBuilder()
            body.add("code", disconnect.code)
            body.add("reason", disconnect.reason)
            body.add("reconnect", disconnect.reconnect)
            push.add("disconnect", body.json)
        case let .refresh(expires, ttl):
            var body = JSONObjectBuilder()
            body.add("expires", expires)
            body.add("ttl", ttl)
            push.add("refresh", body.json)
        case let .connect(result): push.add("connect", result.json)
        }
        return .object([(key: "push", value: push.json)])
    }

    /// The bytes of `json`. A publication without info or tags, the bulk of what the hub
    /// sends, is written straight to bytes instead of through a `JSON` tree.
    public var jsonBytes: [UInt8] {
        guard case let .publication(publication) = body, publication.info == nil, publication.tags.isEmpty, publication.data.isJSON else {
            return json.bytes
        }
        var writer = JSONWriter(reservingCapacity: publication.data.bytes.count + channel.utf8.count + 64)
        writer.writeSyntax(#"{"push":{"#)
        if !channel.isEmpty {
            writer.writeSyntax(#""channel":"#)
            writer.writeString(channel)
            writer.writeSyntax(",")
        }
        writer.writeSyntax(#""pub":{"data":"#)
        writer.write(publication.data.jsonValue)
        if publication.offset != 0 {
            writer.writeSyntax(#","offset":"#)
            writer.writeNumber(Int64(publication.offset))
        }
        if publication.delta { writer.writeSyntax(#","delta":true"#) }
        writer.writeSyntax("}}}")
        return writer.bytes
    }

    public init(json: JSON) throws(ProtocolDecodingError) {
        guard let pushJSON = json["push"] else { throw ProtocolDecodingError("not a push") }
        let fields = try ProtocolFields(pushJSON, path: "push")
        channel = try fields.protobufString("channel")
        if let value = fields.value("pub") {
            body = .publication(try Publication(json: value, path: "push.pub"))
        } else if let value = try fields.optionalObject("join") {
            body = .join(try ClientInfo(json: value.value("info") ?? .object([]), path: "push.join.info"))
        } else if let value = try fields.optionalObject("leave") {
            body = .leave(try ClientInfo(json: value.value("info") ?? .object([]), path: "push.leave.info"))
        } else if let value = try fields.optionalObject("unsubscribe") {
            body = .unsubscribe(code: try value.uint32("code"), reason: try value.protobufString("reason"))
        } else if let value = try fields.optionalObject("message") {
            body = .message(data: value.raw("data") ?? RawJSON(.null))
        } else if let value = fields.value("subscribe") {
            body = .subscribe(try SubscribeResult(json: value, path: "push.subscribe"))
        } else if let value = try fields.optionalObject("disconnect") {
            let code = try value.protobufInteger("code", in: 0...Int64(UInt16.max))
            body = .disconnect(DisconnectCode(code: UInt16(code), reason: try value.protobufString("reason")))
        } else if let value = try fields.optionalObject("refresh") {
            body = .refresh(expires: try value.protobufBool("expires"), ttl: try value.uint32("ttl"))
        } else if let value = fields.value("connect") {
            body = .connect(try ConnectResult(json: value))
        } else {
            throw ProtocolDecodingError("push carries no known body")
        }
    }
}

/// Anything the server sends: a reply, a push, or an empty ping.
public enum ServerMessage: Sendable, Equatable {
    case reply(Reply)
    case push(Push)
    case ping

    public init(json: JSON) throws(ProtocolDecodingError) {
        if json["push"] != nil {
            self = .push(try Push(json: json))
        } else if case let .object(members) = json, members.isEmpty {
            self = .ping
        } else {
            self = .reply(try Reply(json: json))
        }
    }
}
