import Foundation
import GondolaProtocol

/// The client commands the backend decides, each a request of `ask` and the reading of its
/// answer.
extension BackendProxy {
    /// A connect without a token: the backend's answer names the user, as a token's claims
    /// would (`user`, `expire_at`, `info`, `meta`, `subs`/`channels`), and the reply's `data`.
    func connect(_ request: ConnectRequest, as caller: Caller) async throws -> (Credentials, RawJSON?) {
        let members: [(key: String, value: JSON)] = [("name", .string(request.name)), ("version", .string(request.version))]
        let result = try await ask(ProxyRoute(.connect), caller, members, data: request.data.map(Payload.init))
        do throws(HubError) {
            let user = try result.string("user", maxLength: 1024)
            return (try ConnectionTokens.credentials(of: user, result), try ConnectionTokens.json(result, raw: "data", base64: "b64data"))
        } catch {
            logger.error("connect proxy answer refused", metadata: ["client": "\(caller.client)", "error": "\(error)"])
            throw HubError.internalError("the backend's connect answer: \(error)")
        }
    }

    /// An RPC no domain serves, on `route` (`rpcRoute`): the backend's `result.data` is the reply.
    func rpc(_ method: String, _ data: JSON?, route: ProxyRoute, as caller: Caller) async throws -> RawJSON? {
        let result = try await ask(route, caller, [("method", .string(method))], data: data.map { Payload(RawJSON($0)) })
        return try ConnectionTokens.json(result, raw: "data", base64: "b64data")
    }

    /// A subscribe the backend decides: its answer grants what a subscription token would
    /// (`info`, `data`, `override`, `expire_at`).
    func subscribe(_ request: SubscribeRequest, route: ProxyRoute, as caller: Caller) async throws -> SubscriptionGrant {
        let result = try await ask(route, caller, [("channel", .string(request.channel))], data: request.data.map(Payload.init))
        return try ConnectionTokens.grant(result, expiresAt: try ConnectionTokens.expiry(result))
    }

    /// A publish the backend decides: it may refuse it, or answer `data`/`b64data` to publish instead.
    func publish(_ data: Payload, to channel: String, route: ProxyRoute, as caller: Caller) async throws -> Payload {
        let result = try await ask(route, caller, [("channel", .string(channel))], data: data)
        if let replaced = result.raw("data") { return Payload(replaced) }
        if let encoded = try result.optionalString("b64data", maxLength: 1 << 20) {
            guard let bytes = Data(base64Encoded: encoded) else {
                throw HubError.internalError("the backend's publish answer: b64data is not base64")
            }
            return Payload(received: [UInt8](bytes))
        }
        return data
    }

    /// The headers of a connection's proxy requests: the `connect`'s emulated `headers` that
    /// `allowed` (`proxy_emulated_headers`) names, then the upgrade's `forwarded` ones, which
    /// win over an emulated one of the same name; nil when no emulated header is allowed.
    static func headers(
        emulated: [String: String], allowed: Set<String>, forwarded: [(name: String, value: String)]
    ) -> [(name: String, value: String)]? {
        guard !allowed.isEmpty else { return nil }
        let transport = Set(forwarded.map { $0.name.lowercased() })
        let chosen = emulated.filter { allowed.contains($0.key.lowercased()) && !transport.contains($0.key.lowercased()) }
        return chosen.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) } + forwarded
    }

    /// What the refresh or sub_refresh proxy answered.
    enum RefreshAnswer {
        /// `expired: true`: the connection or subscription ends.
        case expired
        /// Its new end (nil: never, from `expire_at` 0) and, when given, its new `info`.
        case prolonged(until: Date?, info: RawJSON?)
    }

    /// Asks the backend to prolong the connection (`channel` nil, on the refresh proxy's
    /// `route`) or a subscription (on its namespace's sub_refresh `route`).
    func refresh(_ channel: String?, route: ProxyRoute, as caller: Caller) async throws -> RefreshAnswer {
        let result = try await ask(route, caller, channel.map { [("channel", .string($0))] } ?? [])
        if result.has("expired"), try result.bool("expired") { return .expired }
        let end = try result.optionalInteger("expire_at", in: 0...Int64(1e12)).flatMap { $0 == 0 ? nil : Date(timeIntervalSince1970: Double($0)) }
        return .prolonged(until: end, info: try ConnectionTokens.json(result, raw: "info", base64: "b64info"))
    }
}
