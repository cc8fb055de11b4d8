import AsyncHTTPClient
import Foundation
import GondolaProtocol
import Logging
import NIOCore
import NIOHTTP1

/// Sends text messages (SMS) to phone numbers.
public protocol TextMessageSender: Sendable {
    /// Sends `text` to `phone` (E.164); throws when the gateway did not take it.
    func send(to phone: String, text: String) async throws
}

/// An SMS gateway reached by webhook: `POST <url>` with the JSON body `{"to","text"}` and
/// `Authorization: Bearer <token>`; any 2xx answer means the message was taken. Each
/// call waits at most `timeout`.
public struct WebhookTextMessages: TextMessageSender {
    let url: String
    let token: String
    let timeout: TimeAmount

    public init(url: String, token: String, timeout: TimeAmount = .seconds(10)) {
        self.url = url
        self.token = token
        self.timeout = timeout
    }

    public func send(to phone: String, text: String) async throws {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        if !token.isEmpty { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        let body: JSON = ["to": .string(phone), "text": .string(text)]
        request.body = .bytes(ByteBuffer(bytes: body.bytes))
        let response = try await HTTPClient.shared.execute(request, timeout: timeout)
        guard (200..<300).contains(response.status.code) else {
            throw TextMessageError("the SMS gateway answered \(response.status.code)")
        }
    }
}

/// Where no SMS gateway is configured: each message is written to the log instead.
public struct LoggedTextMessages: TextMessageSender {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    public func send(to phone: String, text: String) async throws {
        logger.notice("SMS not sent (no sms_webhook_url configured)", metadata: ["to": "\(phone)", "text": "\(text)"])
    }
}

/// A text message a gateway refused, with its answer.
public struct TextMessageError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
