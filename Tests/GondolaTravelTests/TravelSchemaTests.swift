import Foundation
import GRDB
import GondolaStore
import Testing

@testable import GondolaTravel

/// A database with the core schema and the travel domain's, in a fresh folder.
func travelDatabase(at path: String = temporaryDatabasePath()) throws -> GondolaDatabase {
    try GondolaDatabase(path: path, domainMigrations: TravelSchema.registerMigrations)
}

func temporaryDatabasePath() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("gondola-travel-\(UUID().uuidString)/db.sqlite").path
}

@Suite struct TravelSchemaTests {
    /// A file written by the server before the domains had schemas of their own (every
    /// table in one migrator): it opens with the travel domain's migrations, nothing is
    /// migrated again, and its users, trip, chat, event and durable stream are all there.
    @Test func aFileFromTheSchemaBeforeTheDomainSeamOpensWithItsData() async throws {
        let fixture = try #require(Bundle.module.url(forResource: "schema-v6", withExtension: "sqlite", subdirectory: "Fixtures"))
        let path = temporaryDatabasePath()
        try FileManager.default.createDirectory(
            atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: fixture.path, toPath: path)

        let database = try travelDatabase(at: path)
        let directory = try await Directory(repository: SQLiteTravelRepository(database: database))
        #expect(directory.name(of: "demo-host") == "Hana (host)")
        #expect(try await directory.trip("demo")?.name != nil)
        #expect(
            directory.members(of: "demo") == [
                "demo-host": .host, "demo-anna": .traveller, "demo-ben": .traveller, "demo-chloe": .traveller, "demo-dan": .traveller,
            ])
        let (migrations, messages, invitees, publications) = try await database.pool.read { db in
            (
                try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY rowid"),
                try String.fetchAll(db, sql: #"SELECT id FROM chat_message WHERE chat_id = 'chat-demo' ORDER BY "offset""#),
                try String.fetchAll(db, sql: "SELECT response FROM event_invitee WHERE event_id = 'ev1'"),
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM publication WHERE channel = 'board:news'")
            )
        }
        #expect(
            migrations == [
                "v1-streams-users", "v2-travel", "v3-chat", "v4-events", "v5-chat-top-from-messages", "v6-chat-recent-sends",
                "v2-stream-meta-expiry", "v3-publication-tags-stream-version", "v4-outbound-calls", "v7-fences",
            ])
        #expect(messages == ["m1", "m2"])
        #expect(invitees == ["going"])
        #expect(publications == 1)
    }

    /// A file written before the chat counter went: its chats and messages stay, and
    /// each chat's newest message is where its stream continues.
    @Test func chatsWrittenBeforeV5KeepTheirMessages() throws {
        let path = temporaryDatabasePath()
        try FileManager.default.createDirectory(
            atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path, withIntermediateDirectories: true)
        do {
            let old = try DatabaseQueue(path: path)
            var migrator = DatabaseMigrator()
            migrator.registerMigration("v1-streams-users") { db in
                try db.execute(sql: "CREATE TABLE stream (channel TEXT PRIMARY KEY NOT NULL, epoch TEXT NOT NULL, top_offset INTEGER NOT NULL)")
                try db.execute(
                    sql:
                        #"CREATE TABLE publication (channel TEXT NOT NULL, "offset" INTEGER NOT NULL, data BLOB NOT NULL, info BLOB, created_at_ms INTEGER NOT NULL, PRIMARY KEY (channel, "offset")) WITHOUT ROWID"#
                )
                try db.execute(
                    sql:
                        "CREATE TABLE user (id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, telegram_id INTEGER UNIQUE, telegram_username TEXT, photo_url TEXT, created_at_ms INTEGER NOT NULL)"
                )
            }
            TravelSchema.registerMigrations(in: &migrator)
            try migrator.migrate(old, upTo: "v4-events")
            try old.write { db in
                try db.execute(sql: "INSERT INTO chat (id, kind, epoch, top_offset, created_at_ms) VALUES ('c1', 'group', 'e1', 3, 0)")
                for offset in 1...3 {
                    try db.execute(
                        sql:
                            #"INSERT INTO chat_message (chat_id, "offset", id, from_user, client_message_id, ts, data) VALUES ('c1', ?, ?, 'alice', ?, 0, x'7B7D')"#,
                        arguments: [offset, "m\(offset)", "k\(offset)"])
                }
            }
        }
        let database = try travelDatabase(at: path)
        let (columns, top, epoch) = try database.pool.read { db in
            (
                try db.columns(in: "chat").map(\.name),
                try Int.fetchOne(db, sql: #"SELECT MAX("offset") FROM chat_message WHERE chat_id = 'c1'"#),
                try String.fetchOne(db, sql: "SELECT epoch FROM chat WHERE id = 'c1'")
            )
        }
        #expect(!columns.contains("top_offset") && columns.contains("epoch"))
        #expect(top == 3 && epoch == "e1")
    }
}
