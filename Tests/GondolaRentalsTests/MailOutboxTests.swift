import Foundation
import GRDB
import GondolaServices
import GondolaStore
import Logging
import Testing

@testable import GondolaRentals

@Suite struct MailOutboxTests {
    static func database(_ folder: String) throws -> GondolaDatabase {
        try GondolaDatabase(path: folder + "/gondola.sqlite") { RentalsSchema.registerMigrations(in: &$0) }
    }

    static let mail = MailMessage(from: "hub@example.com", to: "ann@example.com", subject: "Activate", text: "key", html: "<p>key</p>")

    @Test func aMailThatCannotBeSentIsKeptAndSentAfterARestart() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-\(UUID().uuidString)").path
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        do {
            let database = try Self.database(folder)
            // Port 9 (discard) on 127.0.0.1 has no SMTP server: the delivery fails.
            let failing = MailOutbox(
                queue: SQLiteMailQueue(database: database), route: .smtp(try SMTPMailer(url: "smtp://127.0.0.1:9", timeout: 2)), logger: logger)
            _ = try await database.pool.write { db in try SQLiteMailQueue.enqueue(Self.mail, in: db, now: 1_000) }
            #expect(await failing.deliverDue(now: 1_000) == 0)
            let stored = try await database.pool.read { db in try Row.fetchOne(db, sql: "SELECT * FROM mail_outbox") }
            let row = try #require(stored)
            #expect(row["attempts"] as Int == 1 && row["sent_at_ms"] as Int64? == nil && (row["last_error"] as String?)?.contains("SMTP") == true)
            #expect(row["next_attempt_at_ms"] as Int64 > unixMillisecondsNow())
            #expect(try await failing.pendingCount() == 1)
        }
        // A new process over the same file: the mail is still there and goes out once due.
        let database = try Self.database(folder)
        let mailbox = folder + "/mail"
        let outbox = MailOutbox(queue: SQLiteMailQueue(database: database), route: .folder(try MailFolder(folder: mailbox)), logger: logger)
        #expect(await outbox.deliverDue() == 0, "not due yet: it waits for its back-off")
        #expect(await outbox.deliverDue(now: unixMillisecondsNow() + 3_600_000) == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: mailbox).filter { $0.hasSuffix(".eml") }.count == 1)
        #expect(try await outbox.pendingCount() == 0)
        #expect(await outbox.deliverDue(now: unixMillisecondsNow() + 3_600_000) == 0, "a sent mail is not sent again")
    }

    @Test func theOutboxRefusesMoreThanItsLimit() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-\(UUID().uuidString)").path
        let database = try Self.database(folder)
        try await database.pool.write { db in
            try SQLiteMailQueue.enqueue(Self.mail, in: db, now: 1)
            try db.execute(
                sql: """
                    WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                    INSERT INTO mail_outbox (id, recipient, sender, subject, text_body, html_body, created_at_ms, next_attempt_at_ms)
                    SELECT 'mail-' || i, 'a@b.c', 'h@b.c', 's', 't', 'h', 1, 1 FROM n
                    """, arguments: [MailOutbox.maxPending])
        }
        await #expect(throws: MailOutbox.Full.self) {
            try await database.pool.write { db in try SQLiteMailQueue.enqueue(Self.mail, in: db, now: 1) }
        }
    }

    @Test func backOffDoublesWithJitterUpToAnHour() {
        for attempt in 1...30 {
            let wait = MailOutbox.backOff(attempt: attempt)
            let base = min(5_000 * pow(2, Double(attempt - 1)), 3_600_000)
            #expect(Double(wait) >= base * 0.8 - 1 && Double(wait) <= base * 1.2 + 1)
        }
    }
}

func unixMillisecondsNow() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
