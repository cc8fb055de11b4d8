/// The server's answer to a command with an id: `{"id":N,"<method>":{...}}` or `{"id":N,"error":{...}}`.
public struct Reply: Sendable, Equatable {
    /// What the reply carries.
    public enum Body: Sendable, Equatable {
        case error(ProtocolError)
        case connect(ConnectResult)
        case subscribe(SubscribeResult)
        case unsubscribe
        case publish
        case presence([String: ClientInfo])
        case presenceStats(PresenceStats)
        case history(HistoryResult)
        case ping
        case rpc(data: RawJSON?)
        case refresh(RefreshResult)
        case subRefresh(SubRefreshResult)
    }

    public var id: UInt32
    public var body: Body

    public init(id: UInt32, _ body: Body) {
        self.id = id
        self.body = body
    }

    public var json: JSON {
        var object = JSONObjectBuilder()
        object.add("id", id)
        switch body {
        case let .error(error): object.add("error", error.json)
        case let .connect(result): object.add("connect", result.json)
        case let .subscribe(result): object.add("subscribe", result.json)
        case .unsubscribe: object.add("unsubscribe", JSON.object([]))
        case .publish: object.add("publish", JSON.object([]))
        case let .presence(clients):
            object.add(
                "presence",
                JSON.object([(key: "presence", value: .object(clients.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value.json) }))]))
        case let .presenceStats(stats): object.add("presence_stats", stats.json)
        case let .history(result): object.add("history", result.json)
        case .ping: object.add("ping", JSON.object([]))
        case let .rpc(data):
            var body = JSONObjectBuilder()
            body.add("data", data)
            object.add("rpc", body.json)
        case let .refresh(result): object.add("refresh", result.json)
        case let .subRefresh(result): object.add("sub_refresh", result.json)
        }
        return object.json
    }

    public init(json: JSON) throws(ProtocolDecodingError) {
        let fields = try ProtocolFields(json, path: "reply")
        id = try fields.uint32("id")
        if let error = fields.value("error") {
            body = .error(try ProtocolError(json: error))
        } else if let value = fields.value("connect") {
            body = .connect(try ConnectResult(json: value))
        } else if let value = fields.value("subscribe") {
            body = .subscribe(try SubscribeResult(json: value))
        } else if fields.has("unsubscribe") {
            body = .unsubscribe
        } else if fields.has("publish") {
            body = .publish
        } else if let value = try fields.optionalObject("presence") {
            body = .presence(try value.map("presence") { (value, path) throws(ProtocolDecodingError) in try ClientInfo(json: value, path: path) })
        } else if let value = fields.value("presence_stats") {
            body = .presenceStats(try PresenceStats(json: value))
        } else if let value = fields.value("history") {
            body = .history(try HistoryResult(json: value))
        } else if fields.has("ping") {
            body = .ping
        } else if let value = try fields.optionalObject("rpc") {
            body = .rpc(data: value.raw("data"))
        } else if let value = fields.value("refresh") {
            body = .refresh(try RefreshResult(json: value))
        } else if let value = fields.value("sub_refresh") {
            body = .subRefresh(try SubRefreshResult(json: value))
        } else {
            throw ProtocolDecodingError("reply \(id) carries no known result")
        }
    }
}
