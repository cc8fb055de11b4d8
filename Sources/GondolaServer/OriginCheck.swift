import GondolaHub

/// Which web pages may open a client connection (`allowed_origins`), checked on every
/// upgrade as Centrifugo checks it: a request without an `Origin` header (a native app, an
/// SDK, a server) passes; with no pattern configured only the server's own origin passes
/// (the `Origin`'s host and port equal the request's `Host`, which the host page is);
/// otherwise the lower-cased `Origin` must match one of the patterns, where `*` stands for
/// any run of characters (`https://*.example.com`) and `?` for one, and `*` alone allows
/// every page.
public struct OriginCheck: Sendable, Equatable {
    /// The configured patterns, lower-cased; empty: the same-origin rule.
    public let patterns: [String]

    /// The same-origin rule alone.
    public init() { patterns = [] }

    /// `allowed` as patterns; an empty one, or one with characters an origin cannot hold, is refused naming it.
    public init(allowed: [String]) throws(OriginPatternError) {
        for pattern in allowed where pattern.isEmpty || !pattern.unicodeScalars.allSatisfy({ (33...126).contains($0.value) }) {
            throw OriginPatternError(description: "'\(pattern)' is not an origin pattern (printable ASCII, * and ? as wildcards)")
        }
        patterns = allowed.map { $0.lowercased() }
    }

    /// Why `origin` may not connect to a server reached as `host`, or nil when it may.
    public func refusal(origin: String?, host: String?) -> String? {
        guard let origin, !origin.isEmpty else { return nil }
        let lowered = origin.lowercased()
        if patterns.isEmpty {
            if let host, let originHost = Self.host(of: lowered), originHost == host.lowercased() { return nil }
            return "origin '\(origin)' is not this server's ('\(host ?? "")') and allowed_origins is not set"
        }
        if patterns.contains(where: { Glob.matches($0, lowered) }) { return nil }
        return "origin '\(origin)' is not in allowed_origins"
    }

    /// The `host[:port]` of an origin (`scheme://host[:port]`), nil when it has no scheme.
    private static func host(of origin: String) -> Substring? {
        guard let range = origin.range(of: "://") else { return nil }
        let rest = origin[range.upperBound...]
        return rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first
    }
}

/// An `allowed_origins` entry that cannot be an origin pattern.
public struct OriginPatternError: Error, Sendable, CustomStringConvertible {
    public let description: String
}
