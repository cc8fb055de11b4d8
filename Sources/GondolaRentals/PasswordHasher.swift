import HummingbirdBcrypt
import NIOPosix
import Synchronization

/// bcrypt on NIO's blocking thread pool, never on an event loop or the cooperative
/// pool. At most `maxInFlight` hashes run or wait at once; more are refused (the caller
/// answers 503 with `Retry-After`) instead of queueing without bound.
final class PasswordHasher: Sendable {
    let cost: UInt8
    let maxInFlight: Int
    private let inFlight = Atomic<Int>(0)
    /// A hash to check unknown emails against, so that a login takes as long whether
    /// the account exists or not; made on the first such login, not at start.
    private let decoy = Mutex<String?>(nil)

    init(cost: UInt8, maxInFlight: Int = 64) {
        self.cost = cost
        self.maxInFlight = maxInFlight
    }

    struct Busy: Error {}

    func hash(_ password: String) async throws -> String {
        try await run { [cost] in Bcrypt.hash(password, cost: cost) }
    }

    func verify(_ password: String, against hash: String?) async throws -> Bool {
        guard let hash else {
            _ = try await run { [self] in
                let known = decoy.withLock { $0 }
                let checked = known ?? Bcrypt.hash("gondola-decoy-password", cost: cost)
                if known == nil { decoy.withLock { $0 = checked } }
                return Bcrypt.verify(password, hash: checked)
            }
            return false
        }
        return try await run { Bcrypt.verify(password, hash: hash) }
    }

    private func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async throws -> T {
        guard inFlight.add(1, ordering: .relaxed).newValue <= maxInFlight else {
            inFlight.subtract(1, ordering: .relaxed)
            throw Busy()
        }
        defer { inFlight.subtract(1, ordering: .relaxed) }
        return try await NIOThreadPool.singleton.runIfActive(work)
    }
}
