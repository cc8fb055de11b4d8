import AsyncHTTPClient
import CoreMetrics
import Foundation
import GondolaHub
import GondolaProtocol
import Logging
import NIOCore
import Synchronization

/// Where and how long the proxy asks the app's backend for one kind of request
/// (`proxy_<kind>_endpoint`, `proxy_<kind>_timeout`).
public struct ProxyEndpoint: Sendable, Equatable {
    public var url: String
    public var timeout: Duration
    /// Centrifugo's `binary_encoding`: requests say `encoding: "binary"` and carry every
    /// payload as `b64data`.
    public var binaryEncoding: Bool

    public init(url: String, timeout: Duration = .seconds(1), binaryEncoding: Bool = false) {
        self.url = url
        self.timeout = timeout
        self.binaryEncoding = binaryEncoding
    }
}

/// The proxy's HTTP side: each request is a `POST` of Centrifugo's JSON body to its
/// route's endpoint (the kind's own, or a named proxy), with the client's forwarded headers, answered within the endpoint's
/// timeout. At most `maxInFlight` requests wait on the backend at once; one more is
/// refused with 100 at once (SDKs retry), so a slow backend cannot pile up memory. The
/// backend's `info`, `data` and `meta` pass on as it wrote them. Each request is counted
/// (`gondola_proxy_requests_total{kind, outcome}`: `answered`, `failed`, `refused`) and
/// timed (`gondola_proxy_request_seconds{kind}`).
final class HTTPProxyTransport: ProxyTransport {
    /// The endpoints in force; `reconfigure` replaces them.
    private struct Routes: Sendable {
        var endpoints: [ProxyKind: ProxyEndpoint]
        var named: [String: ProxyEndpoint]
        var maxInFlight: Int
    }

    private let routes: Mutex<Routes>
    private var maxInFlight: Int { routes.withLock { $0.maxInFlight } }
    let logger: Logger
    let metrics: any MetricsFactory
    private let inFlight = Atomic<Int>(0)

    init(
        endpoints: [ProxyKind: ProxyEndpoint], named: [String: ProxyEndpoint] = [:], maxInFlight: Int = 1_000,
        metrics: any MetricsFactory = NOOPMetricsHandler.instance, logger: Logger
    ) {
        self.routes = Mutex(Routes(endpoints: endpoints, named: named, maxInFlight: maxInFlight))
        self.metrics = metrics
        self.logger = logger
    }

    /// Puts new endpoints in force (a configuration reload): requests already sent finish
    /// with the endpoint they went to.
    func reconfigure(endpoints: [ProxyKind: ProxyEndpoint], named: [String: ProxyEndpoint], maxInFlight: Int) {
        routes.withLock { $0 = Routes(endpoints: endpoints, named: named, maxInFlight: maxInFlight) }
    }

    private func count(_ kind: ProxyKind, _ outcome: String) {
        Counter(label: "gondola_proxy_requests_total", dimensions: [("kind", kind.rawValue), ("outcome", outcome)], factory: metrics).increment()
    }

    private func endpoint(_ route: ProxyRoute) -> ProxyEndpoint? {
        routes.withLock { routes in route.name.map { routes.named[$0] } ?? routes.endpoints[route.kind] }
    }

    func handles(_ route: ProxyRoute) -> Bool { endpoint(route) != nil }

    func binaryEncoding(_ route: ProxyRoute) -> Bool { endpoint(route)?.binaryEncoding ?? false }

    func post(_ route: ProxyRoute, body: JSON, headers: [(name: String, value: String)]) async throws(HubError) -> JSON {
        let kind = route.kind
        guard let endpoint = endpoint(route) else { throw .internalError("no \(kind.rawValue) proxy endpoint") }
        let maxInFlight = maxInFlight
        guard inFlight.wrappingAdd(1, ordering: .relaxed).newValue <= maxInFlight else {
            inFlight.wrappingSubtract(1, ordering: .relaxed)
            count(kind, "refused")
            logger.warning(
                "proxy refused: too many requests waiting on the backend", metadata: ["kind": "\(kind.rawValue)", "limit": "\(maxInFlight)"])
            throw .internalError("\(maxInFlight) proxy requests are waiting on the backend")
        }
        defer { inFlight.wrappingSubtract(1, ordering: .relaxed) }
        var request = HTTPClientRequest(url: endpoint.url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.headers.replaceOrAdd(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: body.bytes))
        let started = ContinuousClock.now
        defer {
            CoreMetrics.Timer(label: "gondola_proxy_request_seconds", dimensions: [("kind", kind.rawValue)], factory: metrics)
                .recordSeconds((ContinuousClock.now - started).timeInterval)
        }
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: .nanoseconds(Int64(endpoint.timeout.timeInterval * 1e9)))
            let bytes = try await response.body.collect(upTo: 1 << 20)
            guard response.status.code == 200 else { throw ProxyAnswerError("status \(response.status.code)") }
            let json = try JSONParser.parse(bytes.readableBytesView, keepingRaw: ["info", "data", "meta"])
            guard case .object = json else { throw ProxyAnswerError("not a JSON object") }
            count(kind, "answered")
            return json
        } catch {
            count(kind, "failed")
            logger.error("proxy request failed", metadata: ["kind": "\(kind.rawValue)", "endpoint": "\(endpoint.url)", "error": "\(error)"])
            throw .internalError("\(kind.rawValue) proxy: \(error)")
        }
    }
}

/// A backend answer the proxy cannot use.
struct ProxyAnswerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
