import Foundation
import GondolaDomain
import GondolaStore
import GondolaTestSupport
import Testing

@testable import GondolaPush

/// The push outbox of `engine` on empty storage.
func pushQueue(_ engine: Engine) async throws -> any PushQueue {
    switch try await pushStorage(engine) {
    case let .sqlite(database): SQLitePushQueue(database: database)
    case let .postgres(pool): PostgresPushQueue(pool: pool)
    }
}

/// What both engines must do alike with the outbox: threads folding into a waiting
/// notification, claims and their leases, a dead run's claims freed, outcomes recorded,
/// the limit on waiting notifications, and tidying.
@Suite struct PushQueueTests {
    static func push(_ token: String, thread: String? = nil, text: String = "hi", at time: Int64 = 1_000) -> OutgoingPush {
        OutgoingPush(
            token: token, platform: .apns, user: "u-" + token,
            content: PushContent(
                category: thread == nil ? .broadcast : .chat, textKey: thread == nil ? "announcement" : "chat.message",
                values: ["text": text, "sender": "Ann"], locale: "fr", link: ["screen": "chat"], collapseKey: thread, count: 1, silent: false,
                eventAt: time, expiresAt: time + 86_400_000))
    }

    @Test(arguments: Engine.allCases)
    func threadsFoldIntoTheWaitingNotificationUntilItIsClaimed(engine: Engine) async throws {
        let queue = try await pushQueue(engine)
        #expect(
            try await queue.enqueue([Self.push("a", thread: "chat:1", text: "one"), Self.push("b")], now: 1_000, maxPending: 100)
                == EnqueueOutcome(queued: 2, collapsed: 0, dropped: 0))
        #expect(
            try await queue.enqueue(
                [Self.push("a", thread: "chat:1", text: "two"), Self.push("a", thread: "chat:1", text: "three")], now: 1_001,
                maxPending: 100) == EnqueueOutcome(queued: 0, collapsed: 2, dropped: 0))
        // Another device, or another chat, is its own notification.
        #expect(
            try await queue.enqueue([Self.push("a", thread: "chat:2"), Self.push("c", thread: "chat:1")], now: 1_002, maxPending: 100).queued == 2)
        let claimed = try await queue.claimDue(now: 2_000, limit: 10, lease: 60_000, runner: "r1")
        #expect(claimed.count == 4)
        let folded = try #require(claimed.first { $0.push.token == "a" && $0.push.content.collapseKey == "chat:1" })
        #expect(folded.push.content.count == 3 && folded.push.content.values["text"] == "three" && folded.push.content.locale == "fr")
        #expect(folded.push.content.link == ["screen": "chat"] && folded.push.content.eventAt == 1_000)
        // A claimed notification takes no more folds: the next message starts a new one.
        #expect(try await queue.enqueue([Self.push("a", thread: "chat:1", text: "four")], now: 2_001, maxPending: 100).queued == 1)
        #expect(try await queue.pendingCount() == 5)
    }

    @Test(arguments: Engine.allCases)
    func claimsHoldForTheirLeaseAndADeadRunsClaimsCanBeFreed(engine: Engine) async throws {
        let queue = try await pushQueue(engine)
        _ = try await queue.enqueue((1...3).map { Self.push("t\($0)") }, now: 1_000, maxPending: 100)
        #expect(try await queue.claimDue(now: 1_000, limit: 2, lease: 60_000, runner: "r1").count == 2)
        #expect(try await queue.claimDue(now: 1_000, limit: 10, lease: 60_000, runner: "r2").count == 1)
        #expect(try await queue.claimDue(now: 30_000, limit: 10, lease: 60_000, runner: "r2").isEmpty)
        // After the lease anyone may claim them again.
        #expect(try await queue.claimDue(now: 62_000, limit: 10, lease: 60_000, runner: "r3").count == 3)
        if engine == .sqlite {
            #expect(try await queue.releaseClaims(except: "r4") == 3)
            #expect(try await queue.claimDue(now: 62_001, limit: 10, lease: 60_000, runner: "r4").count == 3)
        }
    }

    /// A lone SQLite node keeps its claims in memory: claiming writes nothing, a restart
    /// (a new queue on the same file) finds every unsent notification free at once, and a
    /// recorded outcome ends its claim.
    @Test func aSingleNodesClaimsLiveInItsMemory() async throws {
        guard case let .sqlite(database) = try await pushStorage(.sqlite) else { return }
        let queue = SQLitePushQueue(database: database)
        _ = try queue.enqueue((1...4).map { Self.push("t\($0)") }, now: 1_000, maxPending: 100)
        let claimed = try await queue.claimDue(now: 1_000, limit: 3, lease: 60_000, runner: "r1")
        #expect(claimed.count == 3)
        let rowsMarked = try await database.pool.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM push_outbox WHERE claimed_by IS NOT NULL")
        }
        #expect(rowsMarked == 0)
        // The claimed rows are passed over; the fourth is still free.
        let fourth = try await queue.claimDue(now: 1_001, limit: 10, lease: 60_000, runner: "r1")
        #expect(fourth.count == 1 && !claimed.contains(fourth[0]))
        try queue.markSent([claimed[0].id], at: 1_100)
        try queue.markFailed(claimed[1].id, attempts: 1, error: "server_error: 500", next: 1_200, givenUpAt: nil)
        #expect(try await queue.claimDue(now: 1_200, limit: 10, lease: 60_000, runner: "r1").map(\.id) == [claimed[1].id])
        let restarted = SQLitePushQueue(database: database)
        #expect(try restarted.releaseClaims(except: "r2") == 0)
        #expect(
            Set(try await restarted.claimDue(now: 1_300, limit: 10, lease: 60_000, runner: "r2").map(\.id))
                == Set([claimed[1].id, claimed[2].id, fourth[0].id]))
    }

    @Test(arguments: Engine.allCases)
    func outcomesAreRecordedAndDoneRowsForgotten(engine: Engine) async throws {
        let queue = try await pushQueue(engine)
        _ = try await queue.enqueue(
            [Self.push("sent"), Self.push("also sent"), Self.push("retried"), Self.push("gone"), Self.push("gone")], now: 1_000,
            maxPending: 100)
        let claimed = try await queue.claimDue(now: 1_000, limit: 10, lease: 60_000, runner: "r")
        let id = { (token: String) in claimed.first { $0.push.token == token }!.id }
        try await queue.markSent([id("sent"), id("also sent")], at: 1_100)
        try await queue.markFailed(id("retried"), attempts: 1, error: "server_error: 500", next: 5_000, givenUpAt: nil)
        try await queue.giveUp(token: "gone", reason: "unregistered", at: 1_200)
        #expect(try await queue.pendingCount() == 1)
        #expect(try await queue.claimDue(now: 4_999, limit: 10, lease: 60_000, runner: "r").isEmpty)
        let retried = try await queue.claimDue(now: 5_000, limit: 10, lease: 60_000, runner: "r")
        #expect(retried.map(\.push.token) == ["retried"] && retried.first?.attempts == 1)
        try await queue.forget(before: 1_150)
        try await queue.markSent([retried[0].id], at: 6_000)
        #expect(try await queue.pendingCount() == 0)
        try await queue.forget(before: 10_000)
        #expect(try await queue.claimDue(now: 100_000, limit: 10, lease: 1, runner: "r").isEmpty)
    }

    @Test(arguments: Engine.allCases)
    func aFullOutboxDropsWhatDoesNotFitButStillFolds(engine: Engine) async throws {
        let queue = try await pushQueue(engine)
        #expect(
            try await queue.enqueue([Self.push("a", thread: "chat:1"), Self.push("b"), Self.push("c")], now: 1_000, maxPending: 2)
                == EnqueueOutcome(queued: 2, collapsed: 0, dropped: 1))
        #expect(
            try await queue.enqueue([Self.push("a", thread: "chat:1"), Self.push("d")], now: 1_001, maxPending: 2)
                == EnqueueOutcome(queued: 0, collapsed: 1, dropped: 1))
        #expect(try await queue.pendingCount() == 2)
    }

    @Test(arguments: Engine.allCases)
    func recipientsComeWithTheirUsersSettings(engine: Engine) async throws {
        let repository = try await deviceRepository(engine)
        _ = try await repository.register(
            PushDevice(token: "t1", platform: .apns, user: "ann", app: nil, locale: "fr", registeredAt: 1), maxPerUser: 10)
        _ = try await repository.register(
            PushDevice(token: "t2", platform: .fcm, user: "bob", app: nil, locale: nil, registeredAt: 2), maxPerUser: 10)
        var quiet = NotificationSettings()
        quiet.broadcasts = false
        quiet.quietHours = QuietHours(start: 0, end: 60, utcOffsetMinutes: 0)
        try await repository.setSettings(quiet, of: "bob")
        let everyone = try await repository.recipients(among: nil).sorted { $0.device.token < $1.device.token }
        #expect(everyone.map(\.device.token) == ["t1", "t2"])
        #expect(everyone[0].settings == NotificationSettings() && everyone[1].settings == quiet)
        #expect(try await repository.recipients(among: ["bob", "nobody"]).map(\.device.token) == ["t2"])
        #expect(try await repository.recipients(among: []).isEmpty)
    }
}
