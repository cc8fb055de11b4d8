import Foundation
@_spi(Engine) import GondolaHub
import GondolaProtocol
import Tracing

/// The Centrifugo-compatible server API (`POST /api/<method>`): each method decodes the
/// request's JSON object as its request type (unknown members refused with 107 naming
/// them) and answers the `result` object, or throws a `HubError` that becomes `{"error":{...}}`.
public struct ServerAPI: Sendable {
    private(set) var methods: [String: ServerAPIMethods.Method] = [:]
    /// The contracts of every method, the hub's and the domains' (`batch` among them).
    public private(set) var contracts: [MethodContract] = [Self.batchContract]
    /// Each call is a span (`api.<method>`) when the server traces its API (`opentelemetry_api`).
    let tracing: HubTracing

    public init(node: Node, tracing: HubTracing = .off) {
        self.tracing = tracing
        add(Self.hubMethods(node), owner: NameClaims.hub)
    }

    /// The hub's own methods, as Centrifugo names them.
    private static func hubMethods(_ node: Node) -> ServerAPIMethods {
        var api = ServerAPIMethods()
        api.register("publish", PublishRequest.self, PublishAnswer.self, rules: "`{}` for a channel without history", node.publish(_:))
        api.register("broadcast", BroadcastRequest.self, BroadcastAnswer.self, rules: "each channel is published to on its own", node.broadcast(_:))
        api.register("presence", ChannelRequest.self, PresenceAnswer.self, rules: "", node.presence(_:))
        api.register("presence_stats", ChannelRequest.self, PresenceStatsAnswer.self, rules: "", node.presenceStats(_:))
        api.register("history", APIHistoryRequest.self, HistoryAnswer.self, rules: "112 with a `since` from another epoch", node.history(_:))
        api.register("history_remove", ChannelRequest.self, EmptyAnswer.self, rules: "", node.historyRemove(_:))
        api.register(
            "subscribe", APISubscribeRequest.self, EmptyAnswer.self,
            rules: "every connection of the user on every node is subscribed, or only those `client` and `session` pick",
            node.subscribe(_:))
        api.register(
            "unsubscribe", APIUnsubscribeRequest.self, EmptyAnswer.self,
            rules: "every connection of the user on every node is unsubscribed, or only those `client` and `session` pick", node.unsubscribe(_:))
        api.register(
            "disconnect", APIDisconnectRequest.self, EmptyAnswer.self,
            rules:
                "every connection of the user on every node (or only those `client` and `session` pick, and never those `whitelist` names) is closed with `disconnect`'s code and reason, 3503 `force disconnect` without one",
            node.disconnect(_:))
        api.register(
            "refresh", APIRefreshRequest.self, EmptyAnswer.self,
            rules:
                "every connection of the user on every node (or only those `client` and `session` pick): `expired` or an `expire_at` already past closes it with 3005, else it expires at `expire_at` (never without one) and is told with a refresh push",
            node.refresh(_:))
        api.register(
            "channels", ChannelsRequest.self, ChannelsAnswer.self,
            rules:
                "the channels with subscribers on every node; in a cluster each other node is asked over the engine and waited for at most `cluster_survey_timeout`",
            node.channels(_:))
        api.register("info", NoFields.self, InfoAnswer.self, rules: "", node.info(_:))
        return api
    }

    /// Adds methods (a domain's administration) owned by `owner`.
    public mutating func add(_ table: ServerAPIMethods, owner: String) {
        for method in table.methods { methods[method.name] = method }
        contracts += table.contracts(owner: owner)
    }

    /// The names of the methods it answers.
    public var names: Set<String> { Set(methods.keys).union([Self.batchContract.name]) }

    /// Runs `name` with `body`; the answer is the JSON the endpoint returns: `{"result": …}`
    /// or `{"error": …}`, and `batch`'s `{"replies": […]}`. Traced, the call's span continues
    /// the caller's trace: `traceParent` (the request's W3C `traceparent` header), else the
    /// task's context (which the GRPC API sets from the call's metadata).
    public func call(_ name: String, body: JSON, traceParent: String? = nil) async -> JSON? {
        guard tracing.isOn else { return await run(name, body: body) }
        let parent = traceParent.map { tracing.context(traceParent: $0) }
        return await tracing.span("api.\(name)", kind: .server, parent: parent, attributes: ["rpc.method": .string(name)]) { span in
            let answer = await run(name, body: body)
            if case let .string(message)? = answer?["error"]?["message"] { HubTracing.fail(span, message) }
            return answer
        }
    }

    private func run(_ name: String, body: JSON) async -> JSON? {
        if name == Self.batchContract.name { return await batch(body) }
        guard let method = methods[name] else { return nil }
        do {
            return ["result": try await method.call(body)]
        } catch {
            return ["error": Self.errorJSON(error.protocolError)]
        }
    }

    static func errorJSON(_ error: ProtocolError) -> JSON { ErrorAnswer(error: error).json }

}

/// `{channel}`.
struct ChannelRequest: RequestContract {
    let channel: String
    init(_ fields: RequestFields) throws(HubError) { channel = try fields.string("channel", maxLength: .max) }
}

/// `client` and `session`, which pick some of a user's connections (`ConnectionFilter`), as
/// Centrifugo's `subscribe`, `unsubscribe`, `disconnect` and `refresh` take them.
enum ConnectionTarget {
    static func read(_ fields: RequestFields) throws(HubError) -> ConnectionFilter {
        ConnectionFilter(
            client: try fields.noting("only this connection of the user (its client id)").optionalString("client", maxLength: 1024),
            session: try fields.noting("only the connection with this session id (an HTTP-streaming, SSE or unidirectional one)")
                .optionalString("session", maxLength: 1024))
    }
}

/// `unsubscribe`: `{user, channel, client?, session?}`.
struct APIUnsubscribeRequest: RequestContract {
    let user: String
    let channel: String
    let target: ConnectionFilter
    init(_ fields: RequestFields) throws(HubError) {
        user = try fields.string("user", maxLength: .max)
        channel = try fields.string("channel", maxLength: .max)
        target = try ConnectionTarget.read(fields)
    }
}

/// `disconnect`: `{user, client?, session?, whitelist?, disconnect?: {code, reason}}`.
struct APIDisconnectRequest: RequestContract {
    /// Longest close reason: what fits a WebSocket close frame (125 bytes) after its code.
    static let maxReasonBytes = 123

    let user: String
    let target: ConnectionFilter
    let whitelist: Set<String>
    let code: DisconnectCode

    init(_ fields: RequestFields) throws(HubError) {
        user = try fields.string("user", maxLength: .max)
        target = try ConnectionTarget.read(fields)
        whitelist = Set(
            try fields.noting("connections (client ids) left open").optionalStringArray("whitelist", maxCount: .max, maxLength: 1024) ?? [])
        guard let disconnect = try fields.noting("the close code and reason; 3503 `force disconnect` when absent").optionalObject("disconnect")
        else {
            code = .forceDisconnect
            return
        }
        let number = try disconnect.noting("below 3500 and from 4000 to 4499 the SDK reconnects").integer("code", in: 3000...4999)
        let reason = try disconnect.noting("at most 123 bytes").optionalString("reason", maxLength: .max, allowEmpty: true) ?? ""
        guard reason.utf8.count <= Self.maxReasonBytes else {
            throw .badRequest("disconnect.reason is \(reason.utf8.count) bytes, more than \(Self.maxReasonBytes)")
        }
        code = DisconnectCode(code: UInt16(number), reason: reason)
    }
}

/// `refresh`: `{user, client?, session?, expired?, expire_at?, info? | b64info?}`.
struct APIRefreshRequest: RequestContract {
    let user: String
    let target: ConnectionFilter
    let refresh: ConnectionRefresh
    init(_ fields: RequestFields) throws(HubError) {
        user = try fields.string("user", maxLength: .max)
        target = try ConnectionTarget.read(fields)
        refresh = try ConnectionRefresh(request: fields)
    }
}

/// What to publish: `data`, any JSON value kept as it was written, or else `b64data`, any
/// bytes in base64 (Centrifugo's way to publish binary through the HTTP API).
enum PublishedData {

    static func read(_ fields: RequestFields) throws(HubError) -> Payload {
        let data = fields.noting("kept byte for byte; `data` or `b64data` is required")
        let raw = data.raw("data")
        let encoded = try fields.noting("base64 of the bytes to publish, when `data` is absent").optionalString(
            "b64data", maxLength: .max, allowEmpty: false)
        if data.isNull("data") { return Payload(JSON.null) }
        if let raw { return Payload(raw) }
        if let encoded {
            guard let bytes = Data(base64Encoded: encoded) else { throw .badRequest("b64data is not base64") }
            return Payload(received: [UInt8](bytes))
        }
        throw .badRequest("data is required")
    }
}

/// The options `publish` and `broadcast` share besides the data, as Centrifugo names them.
struct PublicationOptions {
    /// Longest idempotency key: it is kept for five minutes.
    static let maxIdempotencyKeyLength = 256

    let tags: [String: String]
    let publishing: PublishOptions

    init(_ fields: RequestFields) throws(HubError) {
        let skipHistory = try fields.noting("not appended to the stream: delivered without an offset, answered `{}`").protobufBool("skip_history")
        tags = try fields.noting("string → string: delivered with the publication and kept in its stream").stringMap("tags")
        publishing = PublishOptions(
            skipHistory: skipHistory,
            idempotencyKey: try fields.noting(
                "the same key on the channel within 5 minutes answers the first result and publishes nothing, on every engine (a cluster's nodes share the keys)"
            ).optionalString("idempotency_key", maxLength: Self.maxIdempotencyKeyLength, allowEmpty: true).flatMap { $0.isEmpty ? nil : $0 },
            version: try fields.noting(
                "not above the stream's latest version (in `version_epoch`) the publication is skipped and the stream's position answered; needs the channel's stream (107 without one)"
            ).uint64("version"),
            versionEpoch: try fields.noting("the epoch of `version`: a new one starts the versions over").optionalString(
                "version_epoch", maxLength: 64, allowEmpty: true) ?? "",
            delta: try fields.noting(
                "subscriptions that negotiated fossil deltas may get it as a delta from the channel's previous publication (always so in a namespace with `delta_publish`)"
            ).protobufBool("delta"))
    }
}

/// `publish`: `{channel, data | b64data}` and the publication options.
struct PublishRequest: RequestContract {
    let channel: String
    let data: Payload
    let options: PublicationOptions
    init(_ fields: RequestFields) throws(HubError) {
        channel = try fields.string("channel", maxLength: .max)
        data = try PublishedData.read(fields)
        options = try PublicationOptions(fields)
    }
}

/// `broadcast`: `{channels, data | b64data}` and the publication options, applied on each channel.
struct BroadcastRequest: RequestContract {
    let channels: [String]
    let data: Payload
    let options: PublicationOptions
    init(_ fields: RequestFields) throws(HubError) {
        channels = try fields.noting("at least one").stringArray("channels", maxCount: .max, maxLength: .max)
        guard !channels.isEmpty else { throw .badRequest("channels must name at least one item") }
        data = try PublishedData.read(fields)
        options = try PublicationOptions(fields)
    }
}

/// `history`: `{channel, limit?, since?, reverse?}`.
struct APIHistoryRequest: RequestContract {
    let channel: String
    let limit: Int
    let since: StreamPosition?
    let reverse: Bool
    init(_ fields: RequestFields) throws(HubError) {
        channel = try fields.string("channel", maxLength: .max)
        limit = Int(try fields.noting("0: the stream's position only; -1: all").integer("limit", in: Int64(Int.min)...Int64(Int.max), default: 0))
        since = try fields.noting("the position to read after").optionalObject("since").map { (since) throws(HubError) in
            StreamPosition(
                offset: UInt64(try since.optionalInteger("offset", in: 0...Int64.max) ?? 0),
                epoch: try since.optionalString("epoch", maxLength: .max, allowEmpty: true) ?? "")
        }
        reverse = try fields.noting("newest first").bool("reverse", default: false)
    }
}

/// `subscribe`: the user, the channel and the subscription's options as Centrifugo takes them.
struct APISubscribeRequest: RequestContract {
    let user: String
    let channel: String
    /// What the body asks besides the user and the channel.
    let subscription: ServerSubscription
    /// The body as it arrived (`info` and `data` raw), which goes to every node of a
    /// cluster; each reads it again where its connections are subscribed.
    let options: RawJSON
    init(_ fields: RequestFields) throws(HubError) {
        user = try fields.string("user", maxLength: .max)
        channel = try fields.string("channel", maxLength: .max)
        subscription = try ServerSubscription(fields)
        options = RawJSON(fields.json)
    }
}

/// `channels`: `{pattern?}`, a glob over the channel names.
struct ChannelsRequest: RequestContract {
    let pattern: String
    init(_ fields: RequestFields) throws(HubError) {
        pattern = try fields.noting("`*` and `?` globs; all channels when empty").optionalString("pattern", maxLength: .max, allowEmpty: true) ?? ""
    }
}

/// The hub's server API methods as methods of the node they act on.
extension Node {
    /// Answers `publish`.
    func publish(_ request: PublishRequest) async throws(HubError) -> PublishAnswer {
        PublishAnswer(
            position: try await publish(
                channel: request.channel, data: request.data, tags: request.options.tags, publishing: request.options.publishing))
    }

    /// Answers `broadcast`.
    func broadcast(_ request: BroadcastRequest) async throws(HubError) -> BroadcastAnswer {
        var outcomes: [Result<StreamPosition?, HubError>] = []
        for channel in request.channels {
            do throws(HubError) {
                outcomes.append(
                    .success(
                        try await publish(channel: channel, data: request.data, tags: request.options.tags, publishing: request.options.publishing)))
            } catch {
                outcomes.append(.failure(error))
            }
        }
        return BroadcastAnswer(outcomes: outcomes)
    }

    /// Answers `presence`.
    func presence(_ request: ChannelRequest) async throws(HubError) -> PresenceAnswer {
        PresenceAnswer(clients: try await presence(channel: request.channel))
    }

    /// Answers `presence_stats`.
    func presenceStats(_ request: ChannelRequest) async throws(HubError) -> PresenceStatsAnswer {
        PresenceStatsAnswer(stats: try await presenceStats(channel: request.channel))
    }

    /// Answers `history`.
    func history(_ request: APIHistoryRequest) async throws(HubError) -> HistoryAnswer {
        HistoryAnswer(
            result: try await history(channel: request.channel, limit: request.limit, since: request.since, reverse: request.reverse))
    }

    /// Answers `history_remove`.
    func historyRemove(_ request: ChannelRequest) async throws(HubError) -> EmptyAnswer {
        try await removeHistory(channel: request.channel)
        return EmptyAnswer()
    }

    /// Answers `subscribe`.
    func subscribe(_ request: APISubscribeRequest) async throws(HubError) -> EmptyAnswer {
        try await subscribe(user: request.user, channel: request.channel, request.subscription, options: request.options)
        return EmptyAnswer()
    }

    /// Answers `unsubscribe`.
    func unsubscribe(_ request: APIUnsubscribeRequest) async throws(HubError) -> EmptyAnswer {
        try await unsubscribe(user: request.user, channel: request.channel, target: request.target)
        return EmptyAnswer()
    }

    /// Answers `disconnect`.
    func disconnect(_ request: APIDisconnectRequest) async throws(HubError) -> EmptyAnswer {
        try await disconnect(user: request.user, target: request.target, keeping: request.whitelist, code: request.code)
        return EmptyAnswer()
    }

    /// Answers `refresh`.
    func refresh(_ request: APIRefreshRequest) async throws(HubError) -> EmptyAnswer {
        try await refresh(user: request.user, target: request.target, request.refresh)
        return EmptyAnswer()
    }

    /// Answers `channels`.
    func channels(_ request: ChannelsRequest) async throws(HubError) -> ChannelsAnswer {
        ChannelsAnswer(channels: try await channels(matching: request.pattern))
    }

    /// Answers `info`.
    func info(_: NoFields) async throws(HubError) -> InfoAnswer {
        InfoAnswer(
            nodes: try await cluster?.nodes()
                ?? [ClusterNodeInfo(uid: uid, name: configuration.nodeName, version: version, stats: stats)])
    }
}
