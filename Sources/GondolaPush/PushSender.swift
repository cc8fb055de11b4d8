import AsyncHTTPClient
import Foundation
import GondolaProtocol
import NIOCore
import NIOHTTP1
import Synchronization

/// What a push service answered for one notification.
enum PushOutcome: Sendable, Equatable {
    case accepted
    /// The token is no longer valid (APNs 410 `Unregistered`, FCM `UNREGISTERED`): the device
    /// is removed and its waiting notifications given up.
    case unregistered(String)
    /// Worth trying again (429, 5xx, a network failure, an expired credential), not before
    /// `after` milliseconds when the service said so (`Retry-After`).
    case retry(reason: String, detail: String, after: Int64?)
    /// Refused for good (a malformed request the service will never accept).
    case rejected(String)
}

/// A claimed notification with its text, ready to send.
struct PushToSend: Sendable {
    let queued: QueuedPush
    let text: RenderedText
}

/// Sends notifications to one service (APNs or FCM).
protocol PushSender: Sendable {
    /// Sends each of `batch` and calls `answered` with its index and outcome as its answer
    /// arrives (on any thread; it must not block); returns once every one is answered.
    /// Cancelling the calling task fails the unanswered ones (worth trying again).
    func send(_ batch: [PushToSend], answered: @escaping @Sendable (Int, PushOutcome) -> Void) async
    /// How many requests the service takes at once on the sender's connection.
    var concurrentStreams: Int { get }
    /// Closes the sender's connection.
    func shutdown() async
}

extension ServiceConnection {
    /// Posts a sender's batch and answers each request with the outcome `reading` makes of
    /// its answer (a request that got none is worth retrying). The answers that say the
    /// batch's credential expired wait until `renew` has run, once for the whole batch.
    func send(
        _ posts: [ServicePost], reading: @escaping @Sendable (ServiceAnswer) -> (outcome: PushOutcome, credentialExpired: Bool),
        renew: () async -> Void, answered: @escaping @Sendable (Int, PushOutcome) -> Void
    ) async {
        let renewal = AwaitingRenewal()
        await post(posts) { index, result in
            switch result {
            case let .failure(unreachable):
                answered(index, unreachable.outcome)
            case let .success(answer):
                let (outcome, expired) = reading(answer)
                if expired { renewal.hold(index, outcome) } else { answered(index, outcome) }
            }
        }
        await renewal.release(renewing: renew, to: answered)
    }
}

/// The outcomes of a batch that wait for its credential to be renewed: the service said the
/// token the batch was sent with expired, so they are answered once a new one is had (one
/// renewal per batch, not one per answer), and their retries go out with it.
private final class AwaitingRenewal: Sendable {
    private let held = Mutex<[(index: Int, outcome: PushOutcome)]>([])

    /// Holds `outcome` for the notification at `index` until `release`.
    func hold(_ index: Int, _ outcome: PushOutcome) {
        held.withLock { $0.append((index, outcome)) }
    }

    /// When outcomes are held: renews the credential with `renew`, then answers them.
    func release(renewing renew: () async -> Void, to answered: @Sendable (Int, PushOutcome) -> Void) async {
        let outcomes = held.withLock { held in
            defer { held = [] }
            return held
        }
        guard !outcomes.isEmpty else { return }
        await renew()
        for (index, outcome) in outcomes { answered(index, outcome) }
    }
}

/// The parts of a push service's HTTP answer the senders look at.
struct ServiceAnswer: Sendable {
    let status: Int
    let body: JSON?
    /// `Retry-After` in milliseconds (seconds or an HTTP date).
    let retryAfter: Int64?

    /// The service could not be reached (or did not answer in time): worth trying again.
    struct Unreachable: Error {
        let detail: String
        var outcome: PushOutcome { .retry(reason: "network", detail: detail, after: nil) }
    }

    /// Sends `request` with `client` and reads the answer (at most 64 KiB of body).
    static func fetch(_ request: HTTPClientRequest, with client: HTTPClient, timeout: TimeAmount = .seconds(30)) async throws -> ServiceAnswer {
        let response = try await client.execute(request, timeout: timeout)
        let bytes = try await response.body.collect(upTo: 64 * 1024)
        return ServiceAnswer(
            status: Int(response.status.code), body: try? JSONParser.parse(Array(buffer: bytes)),
            retryAfter: response.headers.first(name: "retry-after").flatMap(Self.milliseconds))
    }

    /// `Retry-After`'s value as milliseconds from now.
    static func milliseconds(_ value: String) -> Int64? {
        if let seconds = Int64(value.trimmingCharacters(in: .whitespaces)), seconds >= 0 { return min(seconds, 86_400) * 1000 }
        let format = DateFormatter()
        format.locale = Locale(identifier: "en_US_POSIX")
        format.timeZone = TimeZone(identifier: "GMT")
        format.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = format.date(from: value) else { return nil }
        return max(0, Int64(date.timeIntervalSinceNow * 1000))
    }

    /// The member `key` of the body's object, as text.
    func string(_ key: String) -> String? {
        guard case let .object(members)? = body, case let .string(value)? = members.first(where: { $0.key == key })?.value else { return nil }
        return value
    }

    /// The outcome of an answer that is not a success and not particular to one service.
    func generalFailure(_ reason: String) -> PushOutcome {
        switch status {
        case 429: .retry(reason: "rate_limited", detail: reason, after: retryAfter)
        case 500...599: .retry(reason: "server_error", detail: "\(status) \(reason)", after: retryAfter)
        default: .rejected("\(status) \(reason)")
        }
    }
}
