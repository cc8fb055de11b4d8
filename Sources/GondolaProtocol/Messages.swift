import Foundation

/// Who a publication, join or leave comes from: user id, client id and the
/// connection's and channel's info as given by the server.
public struct ClientInfo: Sendable, Equatable {
    public var user: String
    public var client: String
    public var connInfo: RawJSON?
    public var chanInfo: RawJSON?

    public init(user: String, client: String, connInfo: RawJSON? = nil, chanInfo: RawJSON? = nil) {
        self.user = user
        self.client = client
        self.connInfo = connInfo
        self.chanInfo = chanInfo
    }

    public var json: JSON {
        var object = JSONObjectBuilder()
        object.add("user", user)
        object.add("client", client)
        object.add("conn_info", connInfo)
        object.add("chan_info", chanInfo)
        return object.json
    }

    public init(json: JSON, path: String = "info") throws(ProtocolDecodingError) {
        let fields = try ProtocolFields(json, path: path)
        self.init(
            user: try fields.protobufString("user"), client: try fields.protobufString("client"),
            connInfo: fields.raw("conn_info"), chanInfo: fields.raw("chan_info"))
    }
}

/// A format in which a subscription may take publications as differences from the
/// previous one (the subscribe command's `delta`).
public enum DeltaType: String, Sendable, CaseIterable {
    /// Fossil's delta format (`FossilDelta`).
    case fossil

    /// The known names, for errors that name what would have been accepted.
    public static var knownNames: String { allCases.map(\.rawValue).joined(separator: ", ") }
}

/// One message of a channel, with its position in the channel's stream.
public struct Publication: Sendable, Equatable {
    public var offset: UInt64
    public var data: Payload
    public var info: ClientInfo?
    public var tags: [String: String]
    /// True when `data` is a fossil delta against the subscription's previous publication.
    /// To a subscription that negotiated delta, `data` is the payload as text: a JSON string
    /// in the JSON encoding, its bytes in Protobuf (see `FossilDelta`).
    public var delta: Bool
    /// Whether subscriptions that negotiated deltas may get this publication as a delta
    /// from the channel's previous one (Centrifugo's per-publication `delta`, or its
    /// namespace's `delta_publish`); without it they get it whole. It travels between
    /// nodes with the publication, never to a client, and is not kept in a stream.
    public var useDelta: Bool
    /// The W3C `traceparent` of the span that published it, when the server traces
    /// (`opentelemetry`): the node that delivers it continues that trace. Like `useDelta` it
    /// travels between nodes, never to a client, and is not kept in a stream.
    public var traceParent: String?

    public init(
        offset: UInt64 = 0, data: Payload, info: ClientInfo? = nil, tags: [String: String] = [:], delta: Bool = false, useDelta: Bool = false,
        traceParent: String? = nil
    ) {
        self.offset = offset
        self.data = data
        self.info = info
        self.tags = tags
        self.delta = delta
        self.useDelta = useDelta
        self.traceParent = traceParent
    }

    public var json: JSON {
        var object = JSONObjectBuilder()
        object.add("data", data.jsonValue)
        object.add("info", info?.json)
        object.add("offset", offset)
        object.add("tags", map: tags.mapValues { .string($0) })
        object.add("delta", delta)
        return object.json
    }

    /// The publication with its data as a JSON string of the data's text: how a JSON
    /// connection sends a whole publication to a subscription that negotiated deltas (a
    /// binary payload's text is its base64).
    public var withDataAsText: Publication {
        var text = self
        let content = data.isJSON ? String(decoding: data.bytes, as: UTF8.self) : Data(data.bytes).base64EncodedString()
        text.data = Payload(.string(content))
        return text
    }

    public init(json: JSON, path: String = "pub") throws(ProtocolDecodingError) {
        let fields = try ProtocolFields(json, path: path)
        self.init(
            offset: try fields.uint64("offset"),
            data: Payload(fields.raw("data") ?? RawJSON(.null)),
            info: try fields.value("info").map { (value) throws(ProtocolDecodingError) in try ClientInfo(json: value, path: "\(path).info") },
            tags: try fields.stringMap("tags"),
            delta: try fields.protobufBool("delta"))
    }
}

/// A position in a channel's stream: the offset of a publication and the stream's epoch.
public struct StreamPosition: Sendable, Equatable, Hashable {
    public var offset: UInt64
    public var epoch: String

    public init(offset: UInt64, epoch: String) {
        self.offset = offset
        self.epoch = epoch
    }

    public var json: JSON {
        var object = JSONObjectBuilder()
        object.add("offset", offset)
        object.add("epoch", epoch)
        return object.json
    }

    public init(json: JSON, path: String) throws(ProtocolDecodingError) {
        let fields = try ProtocolFields(json, path: path)
        self.init(offset: try fields.uint64("offset"), epoch: try fields.protobufString("epoch"))
    }
}

/// `connect`: authenticate the connection (and optionally ask for server-side subscriptions).
public struct ConnectRequest: Sendable, Equatable {
    public var token: String = ""
    public var data: RawJSON?
    public var name: String = ""
    public var version: String = ""
    public var subs: [String: SubscribeRequest] = [:]
    /// Headers the SDK emulates (browsers cannot set a WebSocket's headers): for the proxy
    /// requests, where the configuration lets them through.
    public var headers: [String: String] = [:]

    public init(token: String = "", data: RawJSON? = nil, name: String = "", version: String = "", headers: [String: String] = [:]) {
        self.token = token
        self.data = data
        self.name = name
        self.version = version
        self.headers = headers
    }

    public var json: JSON {
        var object = JSONObjectBuilder()
        object.add("token", token)
        object.add("data", data)
        object.add("name", name)
        object.add("version", version)
        object.add("subs", map: subs.mapValues(\.json))
        object.add("headers", map: headers.mapValues { .string($0) })
        return object.json
    }

    public init(json: JSON) throws(ProtocolDecodingError) {
        let fields = try ProtocolFields(json, path: "connect")
        headers = try fields.stringMap("headers")
        token = try fields.protobufString("token")
        data = fields.raw("data")
        name = try fields.protobufString("name")
        version = try fields.protobufString("version")
        subs = try fields.map("subs") { (value, path) throws(ProtocolDecodingError) in try SubscribeRequest(json: value, path: path) }
    }
}

/// The answer to `connect`.
public struct ConnectResult: Sendable, Equatable {
    public var client: String
    public var version: String = ""
    public var expires: Bool = false
    public var ttl: UInt32 = 0
    public var data: RawJSON?
    public var subs: [String: SubscribeResult] = [:]
    /// Seconds between server pings; 0 when the server does not ping.
    public var ping: UInt32 = 0
    /// Whether the client must answer pings.
    public var pong: Bool = false
    public var session: String = ""
    public var node: String = ""

    public init(client: String, version: String = "", expires: Bool = false, ttl: UInt32 = 0, ping: UInt32 = 0, pong: Bool = false, node: String = "")
    {
        self.client = client
        self.version = version
        self.expires = expires
        self.ttl = ttl
        self.ping = ping
        self.pong = pong
        self.node = node
    }

    public var json: JSON {
        var object = JSONObjectBuilder()
        object.add("client", client)
        object.add("version", version)
        object.add("expires", expires)
        object.add("ttl", ttl)
        object.add("data", data)
        object.add("subs", map: subs.mapValues(\.json))
        object.add("ping", ping)
        object.add("pong", pong)
        object.add("session", session)
        object.add("node", node)
        return object.json
    }

    public init(json: JSON) throws(ProtocolDecodingError) {
        let fields = try ProtocolFields(json, path: "connect")
        client = try fields.protobufString("client")
        version = try fields.protobufString("version")
        expires = try fields.protobufBool("expires")
        ttl = try fields.uint32("ttl")
        data = fields.raw("data")
        subs = try fields.map("subs") { (value, path) throws(ProtocolDecodingError) in try SubscribeResult(json: value, path: path) }
        ping = try fields.uint32("ping")
        pong = try fields.protobufBool("pong")
        session = try fields.protobufString("session")
        node = try fields.protobufString("node")
    }
}

/// `subscribe`: start receiving a channel's publications, optionally recovering missed ones.
public struct SubscribeRequest: Sendable, Equatable {
    public var channel: String
    public var token: String = ""
    public var recover: Bool = false
    public var epoch: String = ""
    public var offset: UInt64 = 0
    public var data: RawJSON?
    public var positioned: Bool = false
    public var recoverable: Bool = false
    public var joinLeave: Bool = false
    /// Bit flags; bit 2 asks for error 112 instead of `recovered: false`.
    public var flag: Int64 = 0
    /// The delta format asked for (`fossil`), empty for whole publications.
    public var delta: String = ""
    /// Only publications whose tags match it are sent (`tf`); nil: all.
    public var tagsFilter: TagsFilter?

    /// Flag bit asking the server to reject a subscribe whose recovery is impossible.
    public static let rejectUnrecoveredFlag: Int64 = 2

    public init(
        channel: String, recover: Bool = false, epoch: String = "", offset: UInt64 = 0, data: RawJSON? = nil,
        positioned: Bool = false, recoverable: Bool = false, joinLeave: Bool = false, flag: Int64 = 0, delta: String = ""
    ) {
        self.channel = channel
        self.delta = delta
        self.recover = recover
        self.epoch = epoch
        self.offset = offset
        self.data = data
        self.positioned = positioned
        self.recoverable = recoverable
        self.joinLeave = joinLeave
        self.flag = flag
    }

    public var json: JSON {
        var object = JSONObjectBuilder()
        object.add("channel", channel)
        object.add("token", token)
        object.add("recover", recover)
        object.add("epoch", epoch)
        object.add("offset", offset)
        object.add("data", data)
        object.add("positioned", positioned)
        object.add("recoverable", recoverable)
        object.add("join_leave", joinLeave)
        object.add("flag", flag)
        object.add("delta", delta)
        object.add("tf", tagsFilter?.json)
        return object.json
    }

    public init(json: JSON, path: String = "subscribe") throws(ProtocolDecodingError) {
        let fields = try ProtocolFields(json, path: path)
        channel = try fields.protobufString("channel")
        token = try fields.protobufString("token")
        recover = try fields.protobufBool("recover")
        epoch = try fields.protobufString("epoch")
        offset = try fields.uint64("offset")
        data = fields.raw("data")
        positioned = try fields.protobufBool("positioned")
        recoverable = try fields.protobufBool("recoverable")
        joinLeave = try fields.protobufBool("join_leave")
        flag = try fields.protobufInteger("flag", in: 0...Int64.max)
        delta = try fields.protobufString("delta")
        tagsFilter = try fields.value("tf").map { (filter) throws(ProtocolDecodingError) in try TagsFilter(json: filter, path: "\(path).tf") }
    }
}

/// The answer to `subscribe` (and the body of a `subscribe` push).
public struct SubscribeResult: Sendable, Equatable {
    public var expires: Bool = false
    public var ttl: UInt32 = 0
    public var recoverable: Bool = false
    public var epoch: String = ""
    public var publications: [Publication] = []
    public var recovered: Bool = false
    public var offset: UInt64 = 0
    public var positioned: Bool = false
    public var data: RawJSON?
    public var wasRecovering: Bool = false
    /// True when the subscription's publications may come as fossil deltas.
    public var delta: Bool = false

    public init() {}

    public var json: JSON {
        var object = JSONObjectBuilder()
        object.add("expires", expires)
        object.add("ttl", ttl)
        object.add("recoverable", recoverable)
        object.add("epoch", epoch)
        object.add("publications", array: publications.map(\.json))
        object.add("recovered", recovered)
        object.add("offset", offset)
        object.add("positioned", positioned)
        object.add("data", data)
        object.add("was_recovering", wasRecovering)
        object.add("delta", delta)
        return object.json
    }

    public init(json: JSON, path: String = "subscribe") throws(ProtocolDecodingError) {
        let fields = try ProtocolFields(json, path: path)
        expires = try fields.protobufBool("expires")
        ttl = try fields.uint32("ttl")
        recoverable = try fields.protobufBool("recoverable")
        epoch = try fields.protobufString("epoch")
        publications = try fields.protobufArray("publications").map { (value) throws(ProtocolDecodingError) in
            try Publication(json: value, path: "\(path).publications[]")
        }
        recovered = try fields.protobufBool("recovered")
        offset = try fields.uint64("offset")
        positioned = try fields.protobufBool("positioned")
        data = fields.raw("data")
        wasRecovering = try fields.protobufBool("was_recovering")
        delta = try fields.protobufBool("delta")
    }
}

/// `history`: read a channel's stream.
public struct HistoryRequest: Sendable, Equatable {
    public var channel: String
    /// How many publications at most; 0 asks for none (only the stream position), negative for all kept.
    public var limit: Int32
    public var since: StreamPosition?
    public var reverse: Bool

    public init(channel: String, limit: Int32 = 0, since: StreamPosition? = nil, reverse: Bool = false) {
        self.channel = channel
        self.limit = limit
        self.since = since
        self.reverse = reverse
    }

    public var json: JSON {
        var object = JSONObjectBuilder()
        object.add("channel", channel)
        object.add("limit", limit)
        object.add("since", since?.json)
        object.add("reverse", reverse)
        return object.json
    }

    public init(json: JSON, path: String = "history") throws(ProtocolDecodingError) {
        let fields = try ProtocolFields(json, path: path)
        channel = try fields.protobufString("channel")
        limit = try fields.int32("limit")
        since = try fields.value("since").map { (value) throws(ProtocolDecodingError) in try StreamPosition(json: value, path: "\(path).since") }
        reverse = try fields.protobufBool("reverse")
    }
}

/// The answer to `history`.
public struct HistoryResult: Sendable, Equatable {
    public var publications: [Publication]
    public var epoch: String
    public var offset: UInt64

    public init(publications: [Publication], epoch: String, offset: UInt64) {
        self.publications = publications
        self.epoch = epoch
        self.offset = offset
    }

    public var json: JSON {
        var object = JSONObjectBuilder()
        object.add("publications", array: publications.map(\.json))
        object.add("epoch", epoch)
        object.add("offset", offset)
        return object.json
    }

    public init(json: JSON) throws(ProtocolDecodingError) {
        let fields = try ProtocolFields(json, path: "history")
        publications = try fields.protobufArray("publications").map { (value) throws(ProtocolDecodingError) in
            try Publication(json: value, path: "history.publications[]")
        }
        epoch = try fields.protobufString("epoch")
        offset = try fields.uint64("offset")
    }
}

/// The answer to `refresh`.
public struct RefreshResult: Sendable, Equatable {
    public var client: String
    public var version: String
    public var expires: Bool
    public var ttl: UInt32

    public init(client: String, version: String = "", expires: Bool, ttl: UInt32) {
        self.client = client
        self.version = version
        self.expires = expires
        self.ttl = ttl
    }

    public var json: JSON {
        var object = JSONObjectBuilder()
        object.add("client", client)
        object.add("version", version)
        object.add("expires", expires)
        object.add("ttl", ttl)
        return object.json
    }

    public init(json: JSON) throws(ProtocolDecodingError) {
        let fields = try ProtocolFields(json, path: "refresh")
        self.init(
            client: try fields.protobufString("client"), version: try fields.protobufString("version"),
            expires: try fields.protobufBool("expires"), ttl: try fields.uint32("ttl"))
    }
}

/// The answer to `sub_refresh`: when the subscription expires now.
public struct SubRefreshResult: Sendable, Equatable {
    public var expires: Bool
    public var ttl: UInt32

    public init(expires: Bool, ttl: UInt32) {
        self.expires = expires
        self.ttl = ttl
    }

    public var json: JSON {
        var object = JSONObjectBuilder()
        object.add("expires", expires)
        object.add("ttl", ttl)
        return object.json
    }

    public init(json: JSON) throws(ProtocolDecodingError) {
        let fields = try ProtocolFields(json, path: "sub_refresh")
        self.init(expires: try fields.protobufBool("expires"), ttl: try fields.uint32("ttl"))
    }
}

/// The answer to `presence_stats`.
public struct PresenceStats: Sendable, Equatable {
    public var numClients: UInt32
    public var numUsers: UInt32

    public init(numClients: UInt32, numUsers: UInt32) {
        self.numClients = numClients
        self.numUsers = numUsers
    }

    public var json: JSON {
        var object = JSONObjectBuilder()
        object.add("num_clients", numClients)
        object.add("num_users", numUsers)
        return object.json
    }

    public init(json: JSON, path: String = "presence_stats") throws(ProtocolDecodingError) {
        let fields = try ProtocolFields(json, path: path)
        self.init(numClients: try fields.uint32("num_clients"), numUsers: try fields.uint32("num_users"))
    }
}
