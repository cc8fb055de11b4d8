import GondolaHub
import Logging
import Metrics
import NIOHTTP1
import Synchronization

/// Decides, before a client connection is upgraded, whether this node takes it: its
/// `Origin` (`OriginCheck`, 403), the number of connections the node holds
/// (`client_connection_limit`, 503) and how many new ones it took in the last second
/// (`client_connection_rate_limit`, a token bucket of that many a second, 503), as
/// Centrifugo answers them at the HTTP level. A refusal is counted
/// (`gondola_limit_reached_total{limit}`, `gondola_origin_refused_total`) and logged, at
/// most once every few seconds per kind so that a storm does not flood the log.
final class ConnectionAdmission: Sendable {
    /// A refused upgrade: the HTTP status and the message of its JSON error.
    struct Refusal: Error, Sendable, Equatable {
        let status: HTTPResponseStatus
        let code: UInt32
        let message: String
    }

    /// The rules in force; `reconfigure` replaces them.
    private struct Rules: Sendable {
        var origins: OriginCheck
        var connectionLimit: Int
        /// `client_connection_rate_limit` (0: none).
        var rateLimit: Int
    }

    private let rules: Mutex<Rules>
    private let bucket: Mutex<TokenBucket>
    private let limits: KeyedCounters
    private let originsRefused: Counter
    /// Where refusals are logged, at most once every few seconds per kind.
    private let refusals: RefusalLog

    init(origins: OriginCheck, connectionLimit: Int, connectionRateLimit: Int, metrics: any MetricsFactory, logger: Logger) {
        self.rules = Mutex(Rules(origins: origins, connectionLimit: connectionLimit, rateLimit: connectionRateLimit))
        self.bucket = Mutex(TokenBucket(rate: Double(connectionRateLimit), burst: Double(connectionRateLimit), now: .now))
        self.limits = KeyedCounters(label: "gondola_limit_reached_total", dimension: "limit", factory: metrics)
        self.originsRefused = Counter(label: "gondola_origin_refused_total", factory: metrics)
        self.refusals = RefusalLog(logger: logger)
    }

    /// Puts new rules in force (a configuration reload); connections already open stay.
    func reconfigure(origins: OriginCheck, connectionLimit: Int, connectionRateLimit: Int) {
        let changedRate = rules.withLock { rules in
            defer { rules = Rules(origins: origins, connectionLimit: connectionLimit, rateLimit: connectionRateLimit) }
            return rules.rateLimit != connectionRateLimit
        }
        if changedRate {
            bucket.withLock { $0 = TokenBucket(rate: Double(connectionRateLimit), burst: Double(connectionRateLimit), now: .now) }
        }
    }

    /// Why the upgrade `head` may not go on while `open` connections are open, or nil.
    func refusal(for head: HTTPRequestHead, open: Int) -> Refusal? {
        refusal(origin: head.headers.first(name: "origin"), host: head.headers.first(name: "host"), open: open)
    }

    /// Why a connection from a page of `origin` to this server reached as `host` may not
    /// open while `open` connections are open, or nil.
    func refusal(origin: String?, host: String?, open: Int) -> Refusal? {
        let rules = rules.withLock { $0 }
        if let refusal = originRefusal(origin: origin, host: host, rules.origins) { return refusal }
        let (connectionLimit, rateLimit) = (rules.connectionLimit, rules.rateLimit)
        if connectionLimit > 0, open >= connectionLimit {
            limits.increment("client_connection_limit")
            log("client_connection_limit", "connection refused: client_connection_limit reached", ["limit": "\(connectionLimit)"])
            return Refusal(
                status: .serviceUnavailable, code: 106,
                message: "limit exceeded: this node holds client_connection_limit (\(connectionLimit)) connections")
        }
        if rateLimit > 0, !bucket.withLock({ $0.take(now: .now) }) {
            limits.increment("client_connection_rate_limit")
            log("client_connection_rate_limit", "connection refused: client_connection_rate_limit reached", ["limit": "\(rateLimit)"])
            return Refusal(
                status: .serviceUnavailable, code: 111, message: "too many requests: more new connections a second than client_connection_rate_limit")
        }
        return nil
    }

    /// Why a page of `origin` may not reach this server as `host` (403), or nil: asked
    /// before a connection opens and of every `/emulation` request.
    func originRefusal(origin: String?, host: String?) -> Refusal? {
        originRefusal(origin: origin, host: host, rules.withLock { $0.origins })
    }

    private func originRefusal(origin: String?, host: String?, _ origins: OriginCheck) -> Refusal? {
        guard let reason = origins.refusal(origin: origin, host: host) else { return nil }
        originsRefused.increment()
        log("origin", "connection refused: origin not allowed", ["reason": "\(reason)"])
        return Refusal(status: .forbidden, code: 103, message: "permission denied: \(reason)")
    }

    private func log(_ kind: String, _ message: Logger.Message, _ metadata: Logger.Metadata) {
        refusals.log(kind, message, level: .warning, metadata: metadata)
    }
}
