import Foundation
import GondolaProtocol
import GondolaServices
import Hummingbird
import NIOCore
import ServiceLifecycle
import Synchronization
import Testing

@testable import GondolaServer
@testable import GondolaTravel

/// The Bot API client against a local stand-in for api.telegram.org, over a real socket.
@Suite struct TelegramBotAPITests {
    /// The calls the stand-in received.
    final class Calls: Sendable {
        let items = Mutex<[(path: String, body: JSON)]>([])
    }

    /// Starts the stand-in: it records each call and answers 400 for chat 13.
    static func standIn(_ calls: Calls) async throws -> (port: Int, task: Task<Void, Error>) {
        let router = Router()
        router.post("/:bot/:method") { request, _ -> Response in
            let buffer = try await request.body.collect(upTo: 65_536)
            let body = try JSONParser.parse(Array(buffer.readableBytesView))
            calls.items.withLock { $0.append((request.uri.path, body)) }
            let refused = body["chat_id"] == .int(13)
            return Response(
                status: refused ? .badRequest : .ok, body: .init(byteBuffer: ByteBuffer(string: refused ? #"{"ok":false}"# : #"{"ok":true}"#)))
        }
        return try await startStandIn(router, name: "Telegram Bot API")
    }

    @Test func sendsInvitationsWithButtonsAndAnswersCallbacks() async throws {
        let calls = Calls()
        let (port, task) = try await Self.standIn(calls)
        let api = TelegramBotAPI(token: "123:abc", base: "http://127.0.0.1:\(port)")
        let event = TravelEvent(
            id: "e1", creator: "ann", title: "Fondue", description: "", startsAt: 1_800_000_000_000, endsAt: nil,
            place: EventPlace(name: "Chalet", lat: 45.3, lon: 6.58), trip: nil, audience: "friends", createdAt: 0)
        let invitation = TelegramMessage.invitation(to: event, creatorName: "Ann")
        try await api.send(invitation, to: 42)
        try await api.answerCallback(id: "cb7", text: "Got it: going")
        await #expect(throws: TelegramBotAPIError.self) { try await api.send(invitation, to: 13) }

        let recorded = calls.items.withLock { $0 }
        #expect(recorded.map(\.path) == ["/bot123:abc/sendMessage", "/bot123:abc/answerCallbackQuery", "/bot123:abc/sendMessage"])
        let message = recorded[0].body
        #expect(message["chat_id"] == .int(42))
        #expect(message["text"]?.stringValue?.contains("Ann invites you: Fondue") == true)
        #expect(message["text"]?.stringValue?.contains("Chalet") == true)
        let buttons = message["reply_markup"]?["inline_keyboard"]?.arrayValue.first?.arrayValue ?? []
        #expect(buttons.compactMap { $0["callback_data"]?.stringValue } == ["rsvp:e1:going", "rsvp:e1:maybe", "rsvp:e1:declined"])
        #expect(recorded[1].body == ["callback_query_id": "cb7", "text": "Got it: going"])
        task.cancel()
        _ = try? await task.value
    }
}
