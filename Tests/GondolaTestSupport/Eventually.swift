/// The one way a test waits for something to happen: `condition` is checked every
/// `interval` until it holds; once `limit` has passed without it, `EventuallyTimeout`
/// naming `what` is thrown. The limit is a deadline, not a pause: a test that passes
/// waits only as long as the condition takes, and the limit is generous because the
/// tests of other targets can keep the two cores busy.
public func eventually(
    _ what: String = "the condition", within limit: Duration = .seconds(15),
    every interval: Duration = .milliseconds(10), _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + limit
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw EventuallyTimeout(what: what, limit: limit) }
        try await Task.sleep(for: interval)
    }
}

/// `eventually`'s condition did not hold in time.
public struct EventuallyTimeout: Error, CustomStringConvertible {
    public let what: String
    public let limit: Duration
    public var description: String { "timed out after \(limit) waiting for \(what)" }
}
