import AsyncHTTPClient
import CoreMetrics
import Foundation
import GondolaHub
import Logging
import NIOCore
import Synchronization

/// The keys of an identity provider's JWKS URL (`token_jwks_public_endpoint`: Keycloak,
/// Auth0, Cognito), for tokens that name a `kid`. The set is fetched in the background
/// when the server starts and every `refreshInterval`, and again when a token names a
/// `kid` the set lacks (the provider rotated its keys), at most once every
/// `minimumRefetchInterval` (so tokens with made-up `kid`s cannot make it fetch more). A fetch that fails or times out keeps the last good set.
/// No token check waits for a fetch: one naming a missing key answers a temporary error
/// and the client's retry finds the key. Counted as `gondola_jwks_fetches_total{outcome}`,
/// with `gondola_jwks_keys` (keys held) and `gondola_jwks_fetched_timestamp_seconds`.
final class JWKSEndpoint: RemoteKeySet {
    let url: String
    let timeout: Duration
    let refreshInterval: Duration
    let minimumRefetchInterval: Duration
    /// Largest JWKS document read.
    static let maxBytes = 1 << 20
    private let state = Mutex(State())
    private let logger: Logger
    private let fetched: Counter
    private let failed: Counter
    private let keyCount: Gauge
    private let fetchedAt: Gauge

    private struct State {
        var current: RemoteKeys?
        var fetching = false
        /// When an unknown `kid` last started a fetch (the scheduled fetches do not count).
        var lastMissFetch: ContinuousClock.Instant?
    }

    init(
        url: String, timeout: Duration = .seconds(5), refreshInterval: Duration = .seconds(3600),
        minimumRefetchInterval: Duration = .seconds(10), metrics: any MetricsFactory, logger: Logger
    ) {
        self.url = url
        self.timeout = timeout
        self.refreshInterval = refreshInterval
        self.minimumRefetchInterval = minimumRefetchInterval
        self.logger = logger
        fetched = Counter(label: "gondola_jwks_fetches_total", dimensions: [("outcome", "ok")], factory: metrics)
        failed = Counter(label: "gondola_jwks_fetches_total", dimensions: [("outcome", "failed")], factory: metrics)
        keyCount = Gauge(label: "gondola_jwks_keys", factory: metrics)
        fetchedAt = Gauge(label: "gondola_jwks_fetched_timestamp_seconds", factory: metrics)
    }

    var current: RemoteKeys? { state.withLock { $0.current } }

    func refresh(missing kid: String) -> Bool {
        let start = state.withLock { state -> Bool? in
            if state.fetching { return false }
            if let last = state.lastMissFetch, ContinuousClock.now - last < minimumRefetchInterval { return nil }
            state.fetching = true
            state.lastMissFetch = .now
            return true
        }
        guard let start else { return false }
        if start {
            logger.info("fetching the JWKS again: a token names an unknown key", metadata: ["kid": "\(kid)", "url": "\(url)"])
            Task { await fetch() }
        }
        return true
    }

    /// Fetches now, then every `refreshInterval`, until cancelled.
    func run() async {
        while !Task.isCancelled {
            let begin = state.withLock { state -> Bool in
                guard !state.fetching else { return false }
                state.fetching = true
                return true
            }
            if begin { await fetch() }
            try? await Task.sleep(for: refreshInterval)
        }
    }

    /// One fetch (the caller set `fetching`); the set it brings replaces the current one.
    private func fetch() async {
        defer { state.withLock { $0.fetching = false } }
        do {
            var request = HTTPClientRequest(url: url)
            request.headers.add(name: "Accept", value: "application/json")
            let response = try await HTTPClient.shared.execute(request, timeout: .nanoseconds(Int64(timeout.timeInterval * 1e9)))
            let body = try await response.body.collect(upTo: Self.maxBytes)
            guard response.status.code == 200 else { throw JWKSFetchError(description: "status \(response.status.code)") }
            let keys = try await RemoteKeys(jwksJSON: String(buffer: body))
            state.withLock { $0.current = keys }
            fetched.increment()
            keyCount.record(keys.ids.count)
            fetchedAt.record(Date().timeIntervalSince1970)
        } catch {
            failed.increment()
            logger.error("JWKS fetch failed; the last good key set stays", metadata: ["url": "\(url)", "error": "\(error)"])
        }
    }
}

/// A JWKS answer that cannot be used.
struct JWKSFetchError: Error, CustomStringConvertible {
    let description: String
}
