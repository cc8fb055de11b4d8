import Foundation
import GRDB
import GondolaStore
import GondolaTestSupport
import Testing

@Suite struct WALCheckpointerTests {
    /// One small transaction (a page or two of WAL), like a chat batch.
    func commit(_ database: GondolaDatabase, _ n: Int) throws {
        try database.pool.write { db in
            try db.execute(
                sql: #"INSERT INTO publication (channel, "offset", data, created_at_ms) VALUES (?, ?, ?, 0)"#,
                arguments: ["chat:\(n % 50)", n, Data(repeating: UInt8(n % 256), count: 600)])
        }
    }

    /// The WAL file's size in frames; it keeps its largest size when the log starts over.
    func walFrames(_ database: GondolaDatabase) throws -> Int {
        let pageSize = try database.pool.read { try Int.fetchOne($0, sql: "PRAGMA page_size") } ?? 4096
        let bytes = (try FileManager.default.attributesOfItem(atPath: database.path + "-wal")[.size] as? Int) ?? 0
        return max(0, bytes - 32) / (pageSize + 24)
    }

    func rows(_ database: GondolaDatabase) throws -> Int {
        try database.pool.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM publication") } ?? 0
    }

    /// Commits until the WAL holds at least `frames` frames.
    func commit(_ database: GondolaDatabase, until frames: Int, from n: inout Int) throws {
        while database.checkpointer.statistics.walFrames < frames {
            try commit(database, n)
            n += 1
        }
    }

    /// Waits (at most 10 s) until the checkpointer has made more than `passes` passes.
    func waitForPass(after passes: Int, _ database: GondolaDatabase) async throws {
        try await eventually("a checkpointer pass", within: .seconds(10), every: .milliseconds(1)) {
            database.checkpointer.statistics.backgroundPasses > passes
        }
    }

    @Test func aPassWhileTheWriterRestsCopiesTheLogAndItStartsOver() async throws {
        let limits = WALCheckpointer.Limits(backgroundFrames: 64, catchUpFrames: 16, writerFrames: 1 << 20)
        let database = try GondolaDatabase(path: temporaryDatabasePath(), checkpoints: limits)
        var n = 0
        for round in 1...20 {
            let passes = database.checkpointer.statistics.backgroundPasses
            // The commit that reaches `backgroundFrames` wakes the checkpointer; the writer then rests.
            try commit(database, until: limits.backgroundFrames, from: &n)
            try await waitForPass(after: passes, database)
            try commit(database, n)
            n += 1
            let statistics = database.checkpointer.statistics
            #expect(statistics.logRestarts == round)
            #expect(statistics.walFrames < limits.backgroundFrames)
        }
        let statistics = database.checkpointer.statistics
        #expect(statistics.writerForced == 0 && statistics.writerCatchUps == 0 && statistics.busy == 0)
        // The file keeps its largest size: one round's frames, not twenty.
        #expect(try walFrames(database) < 2 * limits.backgroundFrames)
        #expect(try rows(database) == n)
    }

    @Test func theWriterCopiesAShortRestThatAReaderHeldBack() async throws {
        let limits = WALCheckpointer.Limits(backgroundFrames: 64, catchUpFrames: 24, writerFrames: 1 << 20)
        let database = try GondolaDatabase(path: temporaryDatabasePath(), checkpoints: limits)
        var n = 0
        try commit(database, until: limits.backgroundFrames - 8, from: &n)
        do {
            // A read transaction that stays open: the checkpointer may copy only the frames before it.
            let reader = try database.pool.makeSnapshot()
            let heldBack = database.checkpointer.statistics.walFrames
            try commit(database, until: limits.backgroundFrames, from: &n)
            #expect(database.checkpointer.statistics.walFrames - heldBack <= limits.catchUpFrames - 4)
            try await waitForPass(after: 0, database)
            #expect(database.checkpointer.statistics.logRestarts == 0)
            withExtendedLifetime(reader) {}
        }
        // The next commit copies the rest itself, and the one after it starts the log over.
        try commit(database, n)
        #expect(database.checkpointer.statistics.writerCatchUps == 1)
        try commit(database, n + 1)
        let statistics = database.checkpointer.statistics
        #expect(statistics.logRestarts == 1 && statistics.walFrames < limits.catchUpFrames)
        #expect(statistics.writerForced == 0 && statistics.busy == 0)
        #expect(try rows(database) == n + 2)
    }

    @Test func theWriterBoundsTheLogWhenTheCheckpointerIsBehind() throws {
        // Neither checkpointer wakes: one log grows with every commit, the other stops at the writer's limit.
        let unbounded = try GondolaDatabase(
            path: temporaryDatabasePath(), checkpoints: .init(backgroundFrames: 1 << 30, catchUpFrames: 16, writerFrames: 1 << 30))
        let bounded = try GondolaDatabase(
            path: temporaryDatabasePath(), checkpoints: .init(backgroundFrames: 1 << 30, catchUpFrames: 16, writerFrames: 256))
        for n in 0..<2000 {
            try commit(unbounded, n)
            try commit(bounded, n)
        }
        #expect(try walFrames(unbounded) >= 2000)
        let statistics = bounded.checkpointer.statistics
        #expect(statistics.writerForced >= 7 && statistics.backgroundPasses == 0)
        // At most the limit plus one commit's frames (a commit that splits B-tree pages writes a dozen or so).
        let boundedFrames = try walFrames(bounded)
        #expect(boundedFrames <= 256 + 16, "\(boundedFrames) frames, \(statistics)")
        #expect(try rows(unbounded) == 2000 && rows(bounded) == 2000)
    }

    @Test func copiedDataSurvivesReopening() throws {
        let path = temporaryDatabasePath()
        do {
            let database = try GondolaDatabase(path: path, checkpoints: .init(backgroundFrames: 32, catchUpFrames: 8, writerFrames: 128))
            for n in 0..<500 { try commit(database, n) }
        }
        let reopened = try GondolaDatabase(path: path)
        #expect(try rows(reopened) == 500)
        let integrity = try reopened.pool.read { try String.fetchOne($0, sql: "PRAGMA integrity_check") }
        #expect(integrity == "ok")
    }
}
