/// A token-bucket rate limit: `rate` per second on average, up to `burst` at once.
public struct TokenBucket: Sendable {
    public let rate: Double
    public let burst: Double
    private var tokens: Double
    private var updatedAt: ContinuousClock.Instant

    public init(rate: Double, burst: Double, now: ContinuousClock.Instant) {
        self.rate = rate
        self.burst = max(burst, 1)
        self.tokens = max(burst, 1)
        self.updatedAt = now
    }

    /// Takes one token; false when none is left.
    public mutating func take(now: ContinuousClock.Instant) -> Bool {
        let elapsed = now - updatedAt
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        tokens = min(burst, tokens + seconds * rate)
        updatedAt = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
