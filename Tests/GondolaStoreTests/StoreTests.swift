import Foundation
import GondolaHub
import GondolaProtocol
import GondolaStore
import Testing

func temporaryDatabasePath() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("gondola-test-\(UUID().uuidString)/db.sqlite").path
}

@Suite struct SQLiteHistoryStoreTests {
    var options: NamespaceOptions {
        var options = NamespaceOptions(name: "chat")
        options.historySize = 3
        options.historyTTL = .seconds(60)
        options.historyDurable = true
        return options
    }

    @Test func streamSurvivesReopeningTheFile() throws {
        let path = temporaryDatabasePath()
        let now = Date()
        let info = ClientInfo(user: "alice", client: "c1", connInfo: RawJSON(["n": "A"]))
        let first = SQLiteHistoryStore(database: try GondolaDatabase(path: path))
        var position = StreamPosition(offset: 0, epoch: "")
        for n in 1...5 {
            (_, position) = try first.append(Publication(data: RawJSON(["n": .int(Int64(n))]), info: info), to: "chat:1", options: options, now: now)
        }
        let reopened = SQLiteHistoryStore(database: try GondolaDatabase(path: path))
        let slice = try reopened.read(channel: "chat:1", after: nil, limit: 10, reverse: false, options: options, now: now)
        #expect(slice.position == position)
        #expect(slice.publications.map(\.offset) == [3, 4, 5])
        #expect(slice.publications.first?.info == info)
        #expect(slice.publications.last?.data == RawJSON(["n": 5]))
        let (next, _) = try reopened.append(Publication(data: RawJSON(6)), to: "chat:1", options: options, now: now)
        #expect(next.offset == 6)
    }

    @Test func readsAfterAnOffsetInBothDirectionsAndDropsExpired() throws {
        let store = SQLiteHistoryStore(database: try GondolaDatabase(path: temporaryDatabasePath()))
        let start = Date()
        for n in 0..<3 {
            _ = try store.append(Publication(data: RawJSON(.int(Int64(n)))), to: "c", options: options, now: start.addingTimeInterval(Double(n) * 30))
        }
        let after = try store.read(channel: "c", after: 1, limit: 10, reverse: false, options: options, now: start.addingTimeInterval(61))
        #expect(after.publications.map(\.offset) == [2, 3])
        let newest = try store.read(channel: "c", after: nil, limit: 1, reverse: true, options: options, now: start.addingTimeInterval(61))
        #expect(newest.publications.map(\.offset) == [3])
        let expired = try store.read(channel: "c", after: nil, limit: 10, reverse: false, options: options, now: start.addingTimeInterval(200))
        #expect(expired.publications.isEmpty && expired.position.offset == 3)
        try store.removeHistory(channel: "c")
        #expect(try store.read(channel: "c", after: nil, limit: 10, reverse: false, options: options, now: start).publications.isEmpty)
    }
}

@Suite struct UserRepositoryTests {
    @Test func sameTelegramAccountMapsToSameUser() throws {
        let users = UserRepository(database: try GondolaDatabase(path: temporaryDatabasePath()))
        let account = TelegramAccount(telegramID: 7_340_981_265, username: "ann", displayName: "Ann", photoURL: nil)
        let first = try users.user(forTelegram: account)
        let again = try users.user(forTelegram: TelegramAccount(telegramID: 7_340_981_265, username: "ann2", displayName: "Ann B", photoURL: "https://x/y.jpg"))
        #expect(first == again)
        #expect(!first.id.contains("7340981265"), "the user id does not reveal the Telegram id")
        let other = try users.user(forTelegram: TelegramAccount(telegramID: 43, username: nil, displayName: "Bo", photoURL: nil))
        #expect(other.id != first.id)
        #expect(try users.ensureUser(id: "dev1", name: "Dev") == User(id: "dev1", name: "Dev"))
        #expect(try users.ensureUser(id: "dev1", name: "Other") == User(id: "dev1", name: "Dev"))
        #expect(try users.user(id: "missing") == nil)
    }
}
