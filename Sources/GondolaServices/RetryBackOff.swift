import Foundation

/// The wait before retrying a delivery that failed: exponential from `base`, at most `cap`,
/// with ±20% jitter so that deliveries failing together do not retry together.
public enum RetryBackOff {
    /// Milliseconds to wait after the `attempt`-th failure (1 for the first).
    public static func delay(attempt: Int, base: Int64, cap: Int64) -> Int64 {
        let exponential = min(Double(base) * pow(2, Double(min(max(0, attempt - 1), 40))), Double(cap))
        return Int64(exponential * Double.random(in: 0.8...1.2))
    }
}
