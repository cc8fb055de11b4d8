import Foundation
import GondolaProtocol
import Logging

/// What the hub may ask the app's own backend, as Centrifugo's proxy does.
public enum ProxyKind: String, Sendable, CaseIterable {
    /// A `connect` without a token: the backend says who the client is.
    case connect
    /// An `rpc` whose method no domain serves.
    case rpc
    /// A `subscribe` (without a token) to a namespace with `proxy_subscribe`.
    case subscribe
    /// A `publish` to a namespace with `proxy_publish`: the backend may refuse or change the data.
    case publish
    /// The end of a connection the connect proxy made: the backend prolongs it or says it expired.
    case refresh
    /// The end of a subscription the subscribe proxy granted, likewise.
    case subRefresh = "sub_refresh"
}

/// Which endpoint a proxy request goes to: the kind's own (`proxy_<kind>_endpoint`), or the
/// named proxy a namespace or an RPC method prefix chose (`proxies`).
public struct ProxyRoute: Sendable, Hashable {
    public let kind: ProxyKind
    public let name: String?

    public init(_ kind: ProxyKind, name: String? = nil) {
        self.kind = kind
        self.name = name
    }
}

/// Carries a proxy request to the backend: one HTTP endpoint per route, with a timeout. The
/// server provides it (`HTTPProxyTransport`); the hub builds the bodies and reads the answers.
public protocol ProxyTransport: Sendable {
    /// Whether an endpoint is configured for `route`.
    func handles(_ route: ProxyRoute) -> Bool

    /// Whether `route`'s endpoint takes every payload as `b64data` (`encoding: "binary"`).
    func binaryEncoding(_ route: ProxyRoute) -> Bool

    /// POSTs `body` to `route`'s endpoint with the client's forwarded `headers`; answers the
    /// response's JSON. A backend that is down, slow past the timeout, or answers something
    /// other than a JSON object with status 200 is an `internalError` (100, which SDKs retry).
    func post(_ route: ProxyRoute, body: JSON, headers: [(name: String, value: String)]) async throws(HubError) -> JSON
}

/// The hub's side of the proxy: Centrifugo's request bodies and the reading of its answers
/// (`{"result": {...}}`, `{"error": {"code", "message"}}` or `{"disconnect": {"code", "reason"}}`).
struct BackendProxy: Sendable {
    let transport: any ProxyTransport
    /// RPC method prefixes and the named proxy each goes to, as the configuration in force has them.
    let rpcRoutes: @Sendable () -> [RPCProxyRoute]
    /// Each request is a span (`proxy.<kind>`), the parent of the HTTP call's.
    let tracing: HubTracing
    let logger: Logger

    /// Who asks: the fields every proxy request carries.
    struct Caller {
        let client: String
        let user: String
        let encoding: ProtocolEncoding
        let meta: RawJSON?
        let headers: [(name: String, value: String)]
    }

    /// The route of `kind` when the backend is asked for it: for a namespace, its named proxy
    /// or else (when `enabled` says the namespace uses the proxy) the kind's own endpoint.
    func route(_ kind: ProxyKind, named name: String? = nil, enabled: Bool = true) -> ProxyRoute? {
        let route = ProxyRoute(kind, name: name)
        guard name != nil || enabled, transport.handles(route) else { return nil }
        return route
    }

    /// The route of an RPC method no domain serves: the named proxy of its longest matching
    /// prefix, else `proxy_rpc_endpoint`.
    func rpcRoute(_ method: String) -> ProxyRoute? {
        let prefix = rpcRoutes().filter { method.hasPrefix($0.prefix) }.max { $0.prefix.count < $1.prefix.count }
        return route(.rpc, named: prefix?.proxy)
    }

    /// Asks the backend and answers the `result` object; its `error` is thrown as the error
    /// the client gets, its `disconnect` as the code the connection is closed with. `data`
    /// is the client's payload, sent as the route's encoding says (see `payload`).
    func ask(
        _ route: ProxyRoute, _ caller: Caller, _ members: [(key: String, value: JSON)], data: Payload? = nil
    ) async throws -> JSONFields<HubError> {
        try await tracing.span(
            "proxy.\(route.kind.rawValue)", kind: .client,
            attributes: ["gondola.proxy": .string(route.name ?? ""), "gondola.client": .string(caller.client)]
        ) { _ in try await exchange(route, caller, members, data: data) }
    }

    /// `ask`'s work: the request's body, the post and the reading of the answer.
    private func exchange(
        _ route: ProxyRoute, _ caller: Caller, _ members: [(key: String, value: JSON)], data: Payload?
    ) async throws -> JSONFields<HubError> {
        let kind = route.kind
        let binary = transport.binaryEncoding(route)
        var body: [(key: String, value: JSON)] = [
            ("client", .string(caller.client)), ("transport", "websocket"),
            ("protocol", .string(caller.encoding == .json ? "json" : "protobuf")),
            ("encoding", .string(binary ? "binary" : "json")),
        ]
        if kind != .connect { body.append(("user", .string(caller.user))) }
        if let meta = caller.meta { body.append(("meta", .raw(meta))) }
        let payload = Self.payload(data, binary: binary)
        let answer = try await transport.post(route, body: .object(body + members + payload), headers: caller.headers)
        let read: Answer
        do {
            read = try Self.read(answer, of: kind)
        } catch {
            logger.error(
                "proxy answer not understood",
                metadata: [
                    "kind": "\(kind.rawValue)", "proxy": "\(route.name ?? "")",
                    "client": "\(caller.client)", "error": "\(error)",
                ])
            throw error
        }
        switch read {
        case let .result(fields): return fields
        case let .error(error): throw HubError.application(error)
        case let .disconnect(code): throw code
        }
    }

    /// What a backend answered.
    enum Answer {
        case result(JSONFields<HubError>)
        case error(ProtocolError)
        case disconnect(DisconnectCode)
    }

    /// Reads `{"result"}`, `{"error": {code 100–1999, message, temporary?}}` or
    /// `{"disconnect": {code 3000–4999, reason}}`; anything else is the backend's fault: 100.
    static func read(_ answer: JSON, of kind: ProxyKind) throws(HubError) -> Answer {
        do throws(HubError) {
            let fields = try RequestFields(answer)
            if let disconnect = try fields.optionalObject("disconnect") {
                let code = try disconnect.integer("code", in: 3000...4999)
                return .disconnect(DisconnectCode(code: UInt16(code), reason: try disconnect.optionalString("reason", maxLength: 256) ?? ""))
            }
            if let error = try fields.optionalObject("error") {
                let code = try error.integer("code", in: 100...1999)
                return .error(
                    ProtocolError(
                        code: UInt32(code), message: try error.optionalString("message", maxLength: 1024) ?? "",
                        temporary: error.has("temporary") ? try error.bool("temporary") : false))
            }
            let empty = try RequestFields(nil)
            return .result(try fields.optionalObject("result") ?? empty)
        } catch {
            throw .internalError("the backend's \(kind.rawValue) answer: \(error)")
        }
    }

    /// A payload for a request: `b64data` with the binary encoding, else `data` as it was
    /// written; a payload that is not JSON (a Protobuf client's bytes) cannot be `data`, so it
    /// goes as `b64data` either way.
    private static func payload(_ data: Payload?, binary: Bool) -> [(key: String, value: JSON)] {
        guard let data else { return [] }
        if data.isJSON && !binary { return [("data", .raw(RawJSON(trusted: data.bytes)))] }
        return [("b64data", .string(Data(data.bytes).base64EncodedString()))]
    }
}

/// RPC methods whose name starts with `prefix` go to the named proxy `proxy` (`rpc_proxies`).
public struct RPCProxyRoute: Sendable, Equatable {
    public var prefix: String
    public var proxy: String

    public init(prefix: String, proxy: String) {
        self.prefix = prefix
        self.proxy = proxy
    }
}
