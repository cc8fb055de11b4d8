import Foundation
import GondolaProtocol
import GondolaStore
import GondolaTestSupport
import Testing

@testable import GondolaTravel

@Suite struct RecentChatSendsTests {
    func key(_ n: Int, chat: String = "c") -> ChatMessageKey { ChatMessageKey(chat: chat, from: "alice", clientMessageID: "k\(n)") }

    @Test func sendsOlderThanTheWindowAreForgotten() {
        var recent = RecentChatSends(limits: .init(windowMilliseconds: 1000, maxEntries: 100), now: 0)
        for n in 0..<10 { recent.remember(.init(key: key(n), offset: UInt64(n + 1), ts: Int64(n) * 200), now: Int64(n) * 200) }
        // At 1,800 ms the window starts at 800 ms: sends 4...9 are kept.
        #expect(recent.count == 6)
        #expect(recent.offset(of: key(3)) == nil && recent.offset(of: key(4)) == 5 && recent.offset(of: key(9)) == 10)
        recent.forget(now: 10_000)
        #expect(recent.count == 0 && recent.offset(of: key(9)) == nil)
    }

    @Test func atMostMaxEntriesAreKeptTheOldestGoFirst() {
        var recent = RecentChatSends(limits: .init(windowMilliseconds: 60_000, maxEntries: 1000), now: 0)
        for n in 0..<5000 { recent.remember(.init(key: key(n), offset: UInt64(n + 1), ts: 0), now: 0) }
        #expect(recent.count == 1000)
        #expect(recent.offset(of: key(3999)) == nil && recent.offset(of: key(4000)) == 4001 && recent.offset(of: key(4999)) == 5000)
    }

    @Test func aKeyStoredAgainAfterItWasForgottenKeepsItsNewOffset() {
        var recent = RecentChatSends(limits: .init(windowMilliseconds: 100, maxEntries: 10), now: 0)
        recent.remember(.init(key: key(1), offset: 1, ts: 0), now: 0)
        recent.remember(.init(key: key(1), offset: 7, ts: 150), now: 150)
        // The first entry left the window; forgetting it must not drop the newer offset of the same key.
        #expect(recent.offset(of: key(1)) == 7)
        recent.forget(now: 200)
        #expect(recent.offset(of: key(1)) == 7)
    }

    @Test(arguments: Engine.allCases)
    func storedSendsAreReadBackPerChatNewestWithinTheWindow(engine: Engine) async throws {
        let repository = try await travelRepositories(engine).chats
        for chat in ["a", "b", "quiet"] {
            _ = try await repository.create(
                Chat(id: chat, kind: .group, title: chat, trip: nil, members: ["alice"], createdAt: 0), pairKey: nil, createdBy: "alice")
        }
        var messages: [(chat: String, message: ChatMessageData, data: RawJSON)] = []
        for n in 0..<20 {
            let chat = n.isMultiple(of: 2) ? "a" : "b"
            let message = ChatMessageData(id: "m\(n)", from: "alice", name: "Alice", text: "t", ts: Int64(n) * 100, clientMessageID: "k\(n)")
            messages.append((chat, message, RawJSON(message.json)))
        }
        _ = try await repository.append(Array(messages.prefix(10)), storedOffset: { _ in nil }) { _, _ in }
        _ = try await repository.append(Array(messages.suffix(10)), storedOffset: { _ in nil }) { _, _ in }
        // Since 1,000 ms: sends 10...19; the newest 6 of them, oldest first, across both chats.
        let entries = try await repository.recentSends(in: ["a", "b", "quiet", "unknown"], since: 1000, limit: 6)
        #expect(entries.map(\.key.clientMessageID) == (14..<20).map { "k\($0)" })
        #expect(entries.map(\.key.chat) == ["a", "b", "a", "b", "a", "b"])
        #expect(entries.last?.offset == 10 && entries.first?.offset == 8)
        // A send the repository is told about is answered from its stored row, not written again.
        let retry = try await repository.append([messages[19]], storedOffset: { $0 == entries.last?.key ? 10 : nil }) { _, _ in }
        guard case let .stored(stored)? = retry.first else {
            Issue.record("not answered from the stored row: \(retry)")
            return
        }
        #expect(stored.offset == 10 && stored.ts == 1900)
        #expect(try await repository.position(of: "b")?.offset == 10)
    }
}
