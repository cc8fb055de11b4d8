import Foundation
import GondolaStore
import GRDB
import Testing

@Suite struct WALCheckpointerTests {
    /// One small transaction (a page or two of WAL), like a chat batch.
    func commit(_ database: GondolaDatabase, _ n: Int) throws {
        try database.pool.write { db in
            try db.execute(sql: #"INSERT INTO publication (channel, "offset", data, created_at_ms) VALUES (?, ?, ?, 0)"#,
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

    @Test func theLogStartsOverWhileTheCheckpointerCopiesIt() async throws {
        let database = try GondolaDatabase(
            path: temporaryDatabasePath(), checkpoints: .init(backgroundFrames: 64, catchUpFrames: 16, writerFrames: 1 << 20))
        for burst in 0..<30 {
            let passes = database.checkpointer.statistics.backgroundPasses
            for n in burst * 100..<(burst + 1) * 100 { try commit(database, n) }
            // Each burst passes `backgroundFrames`: give the checkpointer its turn (at most 2 s).
            for _ in 0..<2000 where database.checkpointer.statistics.backgroundPasses == passes {
                try await Task.sleep(for: .milliseconds(1))
            }
        }
        let statistics = database.checkpointer.statistics
        #expect(statistics.backgroundPasses >= 30)
        #expect(statistics.writerForced == 0)
        // 3,000 commits of at least one page each: a log that never started over would hold 3,000 frames or more.
        #expect(try walFrames(database) < 1500)
        #expect(try rows(database) == 3000)
    }

    @Test func theWriterBoundsTheLogWhenTheCheckpointerIsBehind() throws {
        // Neither checkpointer wakes: one log grows with every commit, the other stops at the writer's limit.
        let unbounded = try GondolaDatabase(path: temporaryDatabasePath(), checkpoints: .init(backgroundFrames: 1 << 30, catchUpFrames: 16, writerFrames: 1 << 30))
        let bounded = try GondolaDatabase(path: temporaryDatabasePath(), checkpoints: .init(backgroundFrames: 1 << 30, catchUpFrames: 16, writerFrames: 256))
        for n in 0..<2000 {
            try commit(unbounded, n)
            try commit(bounded, n)
        }
        #expect(try walFrames(unbounded) >= 2000)
        let statistics = bounded.checkpointer.statistics
        #expect(statistics.writerForced >= 7 && statistics.backgroundPasses == 0)
        // At most the limit plus one commit's frames.
        #expect(try walFrames(bounded) <= 256 + 8)
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
