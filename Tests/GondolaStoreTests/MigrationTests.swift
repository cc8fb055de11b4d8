import Foundation
import GRDB
@testable import GondolaStore
import Testing

@Suite struct MigrationTests {
    /// A file written before the chat counter went: its chats and messages stay, and
    /// each chat's newest message is where its stream continues.
    @Test func chatsWrittenBeforeV5KeepTheirMessages() throws {
        let path = temporaryDatabasePath()
        try FileManager.default.createDirectory(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path, withIntermediateDirectories: true)
        do {
            let old = try DatabaseQueue(path: path)
            try GondolaDatabase.migrator.migrate(old, upTo: "v4-events")
            try old.write { db in
                try db.execute(sql: "INSERT INTO chat (id, kind, epoch, top_offset, created_at_ms) VALUES ('c1', 'group', 'e1', 3, 0)")
                for offset in 1...3 {
                    try db.execute(sql: #"INSERT INTO chat_message (chat_id, "offset", id, from_user, client_message_id, ts, data) VALUES ('c1', ?, ?, 'alice', ?, 0, x'7B7D')"#,
                                   arguments: [offset, "m\(offset)", "k\(offset)"])
                }
            }
        }
        let database = try GondolaDatabase(path: path)
        let (columns, top, epoch) = try database.pool.read { db in
            (try db.columns(in: "chat").map(\.name),
             try Int.fetchOne(db, sql: #"SELECT MAX("offset") FROM chat_message WHERE chat_id = 'c1'"#),
             try String.fetchOne(db, sql: "SELECT epoch FROM chat WHERE id = 'c1'"))
        }
        #expect(!columns.contains("top_offset") && columns.contains("epoch"))
        #expect(top == 3 && epoch == "e1")
    }
}
