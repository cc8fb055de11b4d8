import AsyncHTTPClient
import GondolaProtocol
import NIOCore

/// Sends Telegram messages through the Bot API (`POST <base>/bot<token>/<method>` with a
/// JSON body) using async-http-client; each call waits at most 10 s.
public struct TelegramBotAPI: TelegramNotifier {
    let token: String
    /// `https://api.telegram.org`, or a local stand-in in tests.
    let base: String
    let client: HTTPClient
    static let timeout: TimeAmount = .seconds(10)

    public init(token: String, base: String = "https://api.telegram.org", client: HTTPClient = .shared) {
        self.token = token
        self.base = base
        self.client = client
    }

    public func send(_ message: TelegramMessage, to chatID: Int64) async throws {
        let buttons: [JSON] = message.buttons.map { ["text": .string($0.text), "callback_data": .string($0.data)] }
        try await call(
            "sendMessage",
            [
                "chat_id": .int(chatID), "text": .string(message.text), "reply_markup": ["inline_keyboard": [.array(buttons)]],
            ])
    }

    public func answerCallback(id: String, text: String) async throws {
        try await call("answerCallbackQuery", ["callback_query_id": .string(id), "text": .string(text)])
    }

    private func call(_ method: String, _ body: JSON) async throws {
        var request = HTTPClientRequest(url: "\(base)/bot\(token)/\(method)")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: body.bytes))
        let response = try await client.execute(request, timeout: Self.timeout)
        let answer = try await response.body.collect(upTo: 64 * 1024)
        guard response.status == .ok else {
            throw TelegramBotAPIError(method: method, status: Int(response.status.code), body: String(buffer: answer))
        }
    }
}

/// The Bot API answered a call with an error status.
public struct TelegramBotAPIError: Error, CustomStringConvertible {
    public let method: String
    public let status: Int
    public let body: String
    public var description: String { "Telegram \(method) answered HTTP \(status): \(body.prefix(200))" }
}
