import Foundation
@_spi(Engine) import GondolaHub
import GondolaProtocol

/// The Centrifugo-compatible server API (`POST /api/<method>`): each method takes
/// the request's JSON object and answers the `result` object, or throws a `HubError`
/// that becomes `{"error":{...}}`.
public struct ServerAPI: Sendable {
    /// A server API method's implementation.
    public typealias Method = @Sendable (APIParameters) async throws(HubError) -> JSON

    private var methods: [String: Method] = [:]

    public init(node: Node) {
        register("publish") { params async throws(HubError) in
            let position = try await node.publish(channel: try params.string("channel"), data: try params.data())
            return Self.positionJSON(position)
        }
        register("broadcast") { params async throws(HubError) in
            let channels = try params.stringArray("channels")
            let data = try params.data()
            var responses: [JSON] = []
            for channel in channels {
                do throws(HubError) {
                    let position = try await node.publish(channel: channel, data: data)
                    responses.append(["result": Self.positionJSON(position)])
                } catch {
                    responses.append(["error": Self.errorJSON(error.protocolError)])
                }
            }
            return ["responses": .array(responses)]
        }
        register("presence") { params throws(HubError) in
            let clients = try await node.presence(channel: try params.string("channel"))
            return ["presence": .object(clients.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value.json) })]
        }
        register("presence_stats") { params throws(HubError) in
            try await node.presenceStats(channel: try params.string("channel")).json
        }
        register("history") { params throws(HubError) in
            let since = try params.optionalObject("since").map { (since) throws(HubError) in
                StreamPosition(offset: UInt64(try since.integer("offset", default: 0)), epoch: try since.string("epoch", default: ""))
            }
            let result = try await node.history(
                channel: try params.string("channel"), limit: try params.integer("limit", default: 0),
                since: since, reverse: try params.bool("reverse"))
            return result.json
        }
        register("history_remove") { params throws(HubError) in
            try await node.removeHistory(channel: try params.string("channel"))
            return [:]
        }
        register("subscribe") { params throws(HubError) in
            // The body's `info` and `data` arrive as they were written (kept raw), so the subscription gets their bytes.
            try await node.subscribe(user: try params.string("user"), channel: try params.string("channel"), options: RawJSON(params.json))
            return [:]
        }
        register("unsubscribe") { params throws(HubError) in
            try await node.unsubscribe(user: try params.string("user"), channel: try params.string("channel"))
            return [:]
        }
        register("disconnect") { params throws(HubError) in
            try await node.disconnect(user: try params.string("user"))
            return [:]
        }
        register("channels") { params throws(HubError) in
            let pattern = try params.string("pattern", default: "")
            let matching = node.channels().filter { pattern.isEmpty || Glob.matches(pattern, $0.key) }
            return ["channels": .object(matching.sorted { $0.key < $1.key }.map { (key: $0.key, value: ["num_clients": .int(Int64($0.value))]) })]
        }
        register("info") { _ throws(HubError) in
            let nodes =
                try await node.cluster?.nodes()
                ?? [ClusterNodeInfo(uid: node.uid, name: node.configuration.nodeName, version: node.version, stats: node.stats)]
            return ["nodes": .array(nodes.map(Self.nodeJSON))]
        }
    }

    /// Adds a method (domain administration adds its own).
    public mutating func register(_ name: String, _ method: @escaping Method) {
        methods[name] = method
    }

    /// The names of the methods it answers.
    public var names: Set<String> { Set(methods.keys) }

    /// Runs `name` with `body`; the answer is the JSON the endpoint returns.
    public func call(_ name: String, body: JSON) async -> JSON? {
        guard let method = methods[name] else { return nil }
        do {
            return ["result": try await method(try APIParameters(body))]
        } catch {
            return ["error": Self.errorJSON(error.protocolError)]
        }
    }

    private static func nodeJSON(_ node: ClusterNodeInfo) -> JSON {
        [
            "uid": .string(node.uid), "name": .string(node.name), "version": .string(node.version),
            "num_clients": .int(Int64(node.stats.clients)), "num_users": .int(Int64(node.stats.users)),
            "num_channels": .int(Int64(node.stats.channels)), "num_subs": .int(Int64(node.stats.subscriptions)),
            "uptime": .int(Int64(node.stats.uptimeSeconds)),
        ]
    }

    static func errorJSON(_ error: ProtocolError) -> JSON {
        ["code": .int(Int64(error.code)), "message": .string(error.message)]
    }

    private static func positionJSON(_ position: StreamPosition?) -> JSON {
        guard let position else { return [:] }
        return ["offset": .int(Int64(position.offset)), "epoch": .string(position.epoch)]
    }
}

/// The parameters of a server API call, read with errors (107) that name the
/// field (see `RequestFields`), with the server API's defaults for absent ones.
public struct APIParameters: Sendable {
    public let json: JSON
    private let fields: RequestFields

    init(_ json: JSON) throws(HubError) {
        self.json = json
        fields = try RequestFields(json)
    }

    public func string(_ key: String) throws(HubError) -> String {
        try fields.string(key, maxLength: .max)
    }

    public func string(_ key: String, default fallback: String) throws(HubError) -> String {
        try fields.optionalString(key, maxLength: .max, allowEmpty: true) ?? fallback
    }

    public func integer(_ key: String, default fallback: Int) throws(HubError) -> Int {
        try fields.optionalInteger(key, in: Int64(Int.min)...Int64(Int.max)).map { Int($0) } ?? fallback
    }

    public func bool(_ key: String) throws(HubError) -> Bool {
        fields.has(key) ? try fields.bool(key) : false
    }

    public func stringArray(_ key: String) throws(HubError) -> [String] {
        let values = try fields.stringArray(key, maxCount: .max, maxLength: .max)
        guard !values.isEmpty else { throw .badRequest("\(key) must name at least one item") }
        return values
    }

    public func optionalObject(_ key: String) throws(HubError) -> APIParameters? {
        try fields.optionalObject(key).map { (object) throws(HubError) in try APIParameters(object.json) }
    }

    /// What to publish: `data`, any JSON value kept as it was written, or else `b64data`,
    /// any bytes in base64 (Centrifugo's way to publish binary through the HTTP API).
    public func data() throws(HubError) -> Payload {
        if let value = json["data"] {
            if case let .raw(raw) = value { return Payload(raw) }
            return Payload(value)
        }
        if let encoded = try fields.optionalString("b64data", maxLength: .max, allowEmpty: false) {
            guard let bytes = Data(base64Encoded: encoded) else { throw .badRequest("b64data is not base64") }
            return Payload(received: [UInt8](bytes))
        }
        throw .badRequest("data is required")
    }
}
