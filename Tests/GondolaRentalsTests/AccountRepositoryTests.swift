import Foundation
import GondolaServices
import GondolaStore
import GondolaTestSupport
import Testing

@testable import GondolaRentals

/// The account repository and mail queue of `engine` on empty storage (a second queue on
/// the same storage stands for another node's outbox), and what fills the outbox with
/// `count` waiting mails.
func accountStorage(_ engine: Engine) async throws -> (
    accounts: any AccountRepository, queue: any MailQueue, otherQueue: any MailQueue,
    fillOutbox: @Sendable (Int) async throws -> Void
) {
    switch engine {
    case .sqlite:
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-accounts-\(UUID().uuidString)/gondola.sqlite").path
        let database = try GondolaDatabase(path: path) { RentalsSchema.registerMigrations(in: &$0) }
        let fill = { @Sendable (count: Int) throws in
            try database.pool.write { db in
                try db.execute(
                    sql: """
                        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                        INSERT INTO mail_outbox (id, recipient, sender, subject, text_body, html_body, created_at_ms, next_attempt_at_ms)
                        SELECT 'filler-' || i, 'a@b.c', 'h@b.c', 's', 't', 'h', 1, 1 FROM n
                        """, arguments: [count])
            }
        }
        return (SQLiteAccountRepository(database: database), SQLiteMailQueue(database: database), SQLiteMailQueue(database: database), fill)
    case .postgres:
        let pool = try await TestPostgres.freshDatabase(RentalsPostgresSchema.register)
        let fill = { @Sendable (count: Int) async throws in
            _ = try await pool.query(
                """
                INSERT INTO mail_outbox (id, recipient, sender, subject, text_body, html_body, created_at_ms, next_attempt_at_ms)
                SELECT 'filler-' || i, 'a@b.c', 'h@b.c', 's', 't', 'h', 1, 1 FROM generate_series(1, \(Int64(count))) AS i
                """)
        }
        return (PostgresAccountRepository(pool: pool), PostgresMailQueue(pool: pool), PostgresMailQueue(pool: pool), fill)
    }
}

func mail(to recipient: String) -> MailMessage {
    MailMessage(from: "hub@example.com", to: recipient, subject: "Activate", text: "key", html: "<p>key</p>")
}

/// What both engines must do alike with accounts, their keys and the mails they queue.
@Suite struct AccountRepositoryTests {
    @Test(arguments: Engine.allCases)
    func anAccountIsCreatedOncePerAddressWithItsMailQueued(engine: Engine) async throws {
        let (accounts, queue, _, _) = try await accountStorage(engine)
        let ann = try #require(
            try await accounts.create(
                user: User(id: "u1", name: "Ann"), email: "ann@example.com", passwordHash: "h1",
                keyHash: "k1", now: 1_000, mail: mail(to: "ann@example.com")))
        #expect(ann == Account(userID: "u1", name: "Ann", email: "ann@example.com", passwordHash: "h1", activatedAt: nil))
        #expect(
            try await accounts.create(
                user: User(id: "u2", name: "Impostor"), email: "ann@example.com", passwordHash: "h2", keyHash: "k2",
                now: 1_001, mail: mail(to: "ann@example.com")) == nil, "the address is taken")
        #expect(try await accounts.account(email: "ann@example.com") == ann)
        #expect(try await accounts.account(user: "u1") == ann)
        #expect(try await accounts.account(user: "u2") == nil)
        #expect(try await queue.pendingCount() == 1, "the refused registration queued nothing")
    }

    @Test(arguments: Engine.allCases)
    func keysAreUsedOnceBeforeTheyExpireAndAResetSetsThePassword(engine: Engine) async throws {
        let (accounts, queue, _, _) = try await accountStorage(engine)
        _ = try await accounts.create(
            user: User(id: "u1", name: "Ann"), email: "ann@example.com", passwordHash: "old", keyHash: "activate-1",
            now: 1_000, mail: mail(to: "ann@example.com"))
        #expect(try await accounts.use("activate-1", purpose: .reset, now: 2_000, effect: .activate) == .unknown, "the purpose must match")
        #expect(try await accounts.use("nope", purpose: .activate, now: 2_000, effect: .activate) == .unknown)
        #expect(try await accounts.use("activate-1", purpose: .activate, now: 2_000, effect: .activate) == .used(userID: "u1"))
        #expect(
            try await accounts.use("activate-1", purpose: .activate, now: 2_001, effect: .activate)
                == .alreadyUsed(userID: "u1", accountActivated: true))
        #expect(try await accounts.account(user: "u1")?.activatedAt == 2_000)

        try await accounts.addKey("reset-1", user: "u1", purpose: .reset, now: 3_000, mail: mail(to: "ann@example.com"))
        try await accounts.addKey("reset-2", user: "u1", purpose: .reset, now: 3_000, mail: mail(to: "ann@example.com"))
        #expect(try await queue.pendingCount() == 3)
        #expect(
            try await accounts.use("reset-1", purpose: .reset, now: 3_000 + AccountKeyPurpose.reset.lifetime, effect: .resetPassword(hash: "x"))
                == .expired)
        #expect(try await accounts.use("reset-1", purpose: .reset, now: 4_000, effect: .resetPassword(hash: "new")) == .used(userID: "u1"))
        #expect(try await accounts.account(user: "u1")?.passwordHash == "new")
        #expect(
            try await accounts.use("reset-2", purpose: .reset, now: 4_001, effect: .resetPassword(hash: "newer"))
                == .alreadyUsed(userID: "u1", accountActivated: true), "a new password ends the other reset keys")
        try await accounts.setPassword("u1", hash: "changed", now: 5_000)
        #expect(try await accounts.account(email: "ann@example.com")?.passwordHash == "changed")
    }

    @Test(arguments: Engine.allCases)
    func twoOutboxesNeverClaimOneMailAndOutcomesAreKept(engine: Engine) async throws {
        let (accounts, queue, other, _) = try await accountStorage(engine)
        for n in 0..<5 {
            _ = try await accounts.create(
                user: User(id: "u\(n)", name: "N\(n)"), email: "n\(n)@example.com", passwordHash: "h", keyHash: "k\(n)",
                now: 1_000 + Int64(n), mail: mail(to: "n\(n)@example.com"))
        }
        let first = try await queue.claimDue(now: 2_000, limit: 3, lease: 60_000)
        let second = try await other.claimDue(now: 2_000, limit: 10, lease: 60_000)
        #expect(first.map(\.message.to) == ["n0@example.com", "n1@example.com", "n2@example.com"], "the longest due first")
        #expect(Set(second.map(\.id)).isDisjoint(with: first.map(\.id)) && first.count + second.count == 5)
        #expect(try await queue.claimDue(now: 2_000, limit: 10, lease: 60_000).isEmpty, "claimed mails are out of sight")
        try await queue.markSent(first[0].id, at: 2_100)
        try await queue.markFailed(first[1].id, attempts: 1, error: "SMTP 451", next: 3_000, givenUpAt: nil)
        try await queue.markFailed(first[2].id, attempts: 25, error: "SMTP 550", next: 3_000, givenUpAt: 2_200)
        #expect(try await queue.pendingCount() == 3, "the two the other outbox holds and the one to retry")
        let retried = try await queue.claimDue(now: 3_000, limit: 10, lease: 60_000)
        #expect(retried.map(\.id) == [first[1].id] && retried[0].attempts == 1)
        #expect(try await other.claimDue(now: 62_001, limit: 10, lease: 60_000).count == 2, "a lapsed claim is given to another outbox")
        try await queue.forgetSent(before: 2_101)
        try await queue.forgetSent(before: 2_100)
        #expect(try await queue.pendingCount() == 3)
    }

    @Test(arguments: Engine.allCases)
    func aFullOutboxRefusesTheWriteThatWouldQueueAMailAndStoresNothing(engine: Engine) async throws {
        let (accounts, queue, _, fillOutbox) = try await accountStorage(engine)
        _ = try await accounts.create(
            user: User(id: "u1", name: "Ann"), email: "ann@example.com", passwordHash: "h", keyHash: "k1",
            now: 1_000, mail: mail(to: "ann@example.com"))
        try await fillOutbox(MailOutbox.maxPending - 1)
        await #expect(throws: MailOutbox.Full.self) {
            try await accounts.create(
                user: User(id: "u2", name: "Bo"), email: "bo@example.com", passwordHash: "h", keyHash: "k2",
                now: 2_000, mail: mail(to: "bo@example.com"))
        }
        await #expect(throws: MailOutbox.Full.self) {
            try await accounts.addKey("reset-1", user: "u1", purpose: .reset, now: 2_000, mail: mail(to: "ann@example.com"))
        }
        #expect(try await accounts.account(email: "bo@example.com") == nil, "the account went with its mail")
        #expect(try await accounts.use("reset-1", purpose: .reset, now: 2_001, effect: .resetPassword(hash: "x")) == .unknown, "and the key")
        #expect(try await queue.pendingCount() == MailOutbox.maxPending)
    }
}
