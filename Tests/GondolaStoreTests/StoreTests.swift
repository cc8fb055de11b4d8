import Foundation
import GondolaHub
import GondolaPostgres
import GondolaProtocol
import GondolaStore
import GondolaTestSupport
import Testing

/// The same stream behaviour on SQLite (one node) and PostgreSQL (a cluster).
@Suite struct HistoryStoreTests {
    var options: NamespaceOptions {
        var options = NamespaceOptions(name: "chat")
        options.historySize = 3
        options.historyTTL = .seconds(60)
        options.historyDurable = true
        return options
    }

    @Test(arguments: Engine.allCases) func streamSurvivesReopening(engine: Engine) async throws {
        let (first, reopen) = try await historyStores(engine)
        let now = Date()
        let info = ClientInfo(user: "alice", client: "c1", connInfo: RawJSON(["n": "A"]))
        var position = StreamPosition(offset: 0, epoch: "")
        for n in 1...5 {
            (_, position) = try await first.append(
                Publication(data: Payload(["n": .int(Int64(n))]), info: info, tags: ["n": "\(n)", "kind": "test"]), to: "chat:1",
                options: options, now: now)
        }
        let reopened = try reopen()
        let slice = try await reopened.read(channel: "chat:1", after: nil, limit: 10, reverse: false, options: options, now: now)
        #expect(slice.position == position)
        #expect(slice.publications.map(\.offset) == [3, 4, 5])
        #expect(slice.publications.first?.info == info)
        #expect(slice.publications.map(\.tags) == (3...5).map { ["n": "\($0)", "kind": "test"] }, "tags are kept")
        #expect(slice.publications.last?.data == Payload(["n": 5]))
        let (next, _) = try await reopened.append(Publication(data: Payload(6)), to: "chat:1", options: options, now: now)
        #expect(next.offset == 6)
    }

    /// A stream's latest version is kept in the file: after a restart an older version is still skipped.
    @Test func theLatestVersionSurvivesReopening() throws {
        let path = temporaryDatabasePath()
        let now = Date()
        let first = SQLiteHistoryStore(database: try GondolaDatabase(path: path))
        let appended = try first.append(
            Publication(data: Payload(1)), to: "chat:v", options: options, version: StreamVersion(version: 5, epoch: "a"), now: now)
        guard case let .appended(_, position) = appended else {
            Issue.record("version 5 was skipped")
            return
        }
        let reopened = SQLiteHistoryStore(database: try GondolaDatabase(path: path))
        let older = try reopened.append(
            Publication(data: Payload(2)), to: "chat:v", options: options, version: StreamVersion(version: 4, epoch: "a"), now: now)
        #expect(older == .skipped(position))
        let newEpoch = try reopened.append(
            Publication(data: Payload(3)), to: "chat:v", options: options, version: StreamVersion(version: 1, epoch: "b"), now: now)
        #expect(newEpoch == .appended(Publication(offset: 2, data: Payload(3)), StreamPosition(offset: 2, epoch: position.epoch)))
    }

    @Test(arguments: Engine.allCases) func payloadsAreStoredAndReadBackByteForByte(engine: Engine) async throws {
        let (store, reopen) = try await historyStores(engine)
        let payloads = [
            Payload(received: Array(#" {"input": "x", "p": 1.50, "big": 12345678901234567890, "e": "\u00e9"} "#.utf8)),
            Payload(received: [0x00, 0xFF, 0x0A, 0xC3, 0x28]),
        ]
        for payload in payloads { _ = try await store.append(Publication(data: payload), to: "chat:bytes", options: options, now: Date()) }
        for reader in [store, try reopen()] {
            let slice = try await reader.read(channel: "chat:bytes", after: nil, limit: 10, reverse: false, options: options, now: Date())
            #expect(slice.publications.map(\.data) == payloads)
            #expect(slice.publications.map(\.data.isJSON) == [true, false])
        }
    }

    @Test(arguments: Engine.allCases) func readsAfterAnOffsetInBothDirectionsAndDropsExpired(engine: Engine) async throws {
        let store = try await historyStores(engine).store
        let start = Date()
        for n in 0..<3 {
            _ = try await store.append(
                Publication(data: Payload(.int(Int64(n)))), to: "c", options: options, now: start.addingTimeInterval(Double(n) * 30))
        }
        let after = try await store.read(channel: "c", after: 1, limit: 10, reverse: false, options: options, now: start.addingTimeInterval(61))
        #expect(after.publications.map(\.offset) == [2, 3])
        let newest = try await store.read(channel: "c", after: nil, limit: 1, reverse: true, options: options, now: start.addingTimeInterval(61))
        #expect(newest.publications.map(\.offset) == [3])
        let expired = try await store.read(channel: "c", after: nil, limit: 10, reverse: false, options: options, now: start.addingTimeInterval(200))
        #expect(expired.publications.isEmpty && expired.position.offset == 3)
        try await store.removeHistory(channel: "c")
        #expect(try await store.read(channel: "c", after: nil, limit: 10, reverse: false, options: options, now: start).publications.isEmpty)
    }
}

/// `history_meta_ttl`: a quiet stream keeps its offset and epoch for its namespace's
/// meta TTL after its last publication, so a client back after a quiet evening recovers.
@Suite struct StreamMetaTTLTests {
    @Test(arguments: Engine.allCases) func aQuietStreamKeepsItsPositionForItsMetaTTL(engine: Engine) async throws {
        let (store, _) = try await historyStores(engine)
        var options = NamespaceOptions(name: "quiet")
        options.historySize = 10
        options.historyTTL = .seconds(60)
        options.historyMetaTTL = .seconds(3600)
        let start = Date()
        let (_, first) = try await store.append(
            Publication(data: Payload(.string("last of the day"))), to: "quiet:evening", options: options, now: start)
        // An hour and a half after the publication would have lost it before: a minute-long history, an hour of meta.
        try await store.sweepStreams(now: start.addingTimeInterval(3000))
        let kept = try await store.read(
            channel: "quiet:evening", after: nil, limit: 0, reverse: false, options: options, now: start.addingTimeInterval(3000))
        #expect(kept.position == first)
        try await store.sweepStreams(now: start.addingTimeInterval(3601))
        let later = start.addingTimeInterval(3601)
        let gone = try await store.read(channel: "quiet:evening", after: nil, limit: 0, reverse: false, options: options, now: later)
        #expect(gone.position.offset == 0 && gone.position.epoch != first.epoch)
    }

    @Test func theDefaultMetaTTLIsThirtyDays() {
        #expect(NamespaceOptions(name: "any").historyMetaTTL == .seconds(30 * 86_400))
    }
}

@Suite struct UserRepositoryTests {
    @Test(arguments: Engine.allCases) func sameTelegramAccountMapsToSameUser(engine: Engine) async throws {
        let users = try await userRepository(engine)
        let account = TelegramAccount(telegramID: 7_340_981_265, username: "ann", displayName: "Ann", photoURL: nil)
        let first = try await users.user(forTelegram: account)
        let again = try await users.user(
            forTelegram: TelegramAccount(telegramID: 7_340_981_265, username: "ann2", displayName: "Ann B", photoURL: "https://x/y.jpg"))
        #expect(first == again)
        #expect(!first.id.contains("7340981265"), "the user id does not reveal the Telegram id")
        let other = try await users.user(forTelegram: TelegramAccount(telegramID: 43, username: nil, displayName: "Bo", photoURL: nil))
        #expect(other.id != first.id)
        #expect(try await users.ensureUser(id: "dev1", name: "Dev") == User(id: "dev1", name: "Dev"))
        #expect(try await users.ensureUser(id: "dev1", name: "Other") == User(id: "dev1", name: "Dev"))
        #expect(try await users.user(id: "missing") == nil)
    }
}

/// What only the PostgreSQL store has to show: several nodes appending to one stream.
@Suite struct PostgresStreamTests {
    @Test func concurrentAppendsFromSeveralPoolsGetConsecutiveOffsets() async throws {
        let first = try await TestPostgres.freshDatabase()
        let stores =
            try [PostgresHistoryStore(pool: first, durable: false)]
            + (0..<2).map { _ in PostgresHistoryStore(pool: try PostgresPool(location: first.location, size: 3), durable: false) }
        let options = {
            var options = NamespaceOptions(name: "room")
            options.historySize = 1000
            options.historyTTL = .seconds(300)
            return options
        }()
        let offsets = try await withThrowingTaskGroup(of: [UInt64].self) { group in
            for (index, store) in stores.enumerated() {
                group.addTask {
                    var offsets: [UInt64] = []
                    for n in 0..<40 {
                        let data = Payload(["node": .int(Int64(index)), "n": .int(Int64(n))])
                        offsets.append(try await store.append(Publication(data: data), to: "room:shared", options: options, now: Date()).0.offset)
                    }
                    return offsets
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(offsets.sorted() == Array(1...120))
        let slice = try await stores[1].read(channel: "room:shared", after: nil, limit: 200, reverse: false, options: options, now: Date())
        #expect(slice.publications.map(\.offset) == Array(1...120))
        #expect(slice.position.offset == 120)
    }

    @Test func aBatchNumbersEachChannelInOrderAndTrimsToTheNamespaceSize() async throws {
        let pool = try await TestPostgres.freshDatabase()
        let store = PostgresHistoryStore(pool: pool, durable: true)
        var small = NamespaceOptions(name: "small")
        small.historySize = 2
        small.historyTTL = .seconds(60)
        let appends = ["a", "b", "a", "a", "b"].enumerated().map { index, channel in
            PostgresHistoryStore.Append(channel: channel, publication: Publication(data: Payload(.int(Int64(index)))), options: small)
        }
        let positions = try await pool.withConnection { try await store.append(appends, on: $0, now: Date()).get() }
        #expect(positions.map(\.offset) == [1, 1, 2, 3, 2])
        #expect(Set(positions.prefix(4).map(\.epoch)).count <= 2)
        let a = try await store.read(channel: "a", after: nil, limit: 10, reverse: false, options: small, now: Date())
        #expect(a.publications.map(\.offset) == [2, 3] && a.publications.map(\.data) == [Payload(2), Payload(3)])
    }

    @Test func migrationsRunOnceWhateverTheNumberOfStarts() async throws {
        let pool = try await TestPostgres.freshDatabase()
        #expect(try await PostgresSchema.migrator.migrate(pool).isEmpty, "freshDatabase already migrated it")
        var migrator = PostgresSchema.migrator
        migrator.register("v2-test", ["CREATE TABLE test_once (id INT)"])
        #expect(try await migrator.migrate(pool) == ["v2-test"])
        #expect(try await migrator.migrate(pool).isEmpty)
    }
}

@Suite struct PostgresLocationTests {
    @Test func readsTCPAndSocketURLs() throws {
        let tcp = try PostgresLocation(url: "postgres://ann:s%40cret@db.example:6543/trips?sslmode=require")
        #expect(tcp.username == "ann" && tcp.password == "s@cret" && tcp.host == "db.example" && tcp.port == 6543)
        #expect(tcp.database == "trips" && tcp.requiresTLS && tcp.socketPath == nil)
        #expect(!tcp.description.contains("cret"))
        let socket = try PostgresLocation(url: "postgresql://postgres@/gondola?host=/var/run/pg")
        #expect(socket.socketPath == "/var/run/pg/.s.PGSQL.5432" && socket.host == nil && !socket.requiresTLS)
    }

    @Test(arguments: [
        ("mysql://a@b/c", "expected postgres://"),
        ("postgres://@host/db", "names no user"),
        ("postgres://ann@host/", "names no database"),
        ("postgres://ann@/db", "names no host"),
        ("postgres://ann:pw@host/db?sslmode=sometimes", "sslmode 'sometimes'"),
        ("postgres://ann:topsecret@host:99999/db", "port 99999"),
    ])
    func namesWhatIsWrong(url: String, message: String) {
        #expect {
            try PostgresLocation(url: url)
        } throws: { error in
            "\(error)".contains(message) && !"\(error)".contains("topsecret")
        }
    }
}

/// A PostgreSQL that stops answering holds no caller past the pool's bound: the statement under way
/// fails with `timedOut`, its connection is closed, and the next borrower gets a new one.
@Suite struct PostgresCallBoundTests {
    /// A statement the server takes long to answer looks, from the client, like a server gone
    /// silent: it fails with `timedOut` and the pool serves the next call on a new connection.
    /// Inside a transaction, the ROLLBACK that follows goes to the connection the bound closed
    /// and is refused at once, instead of waiting for good as postgres-nio's own `query` does on
    /// a closed connection.
    @Test(.timeLimit(.minutes(1)), arguments: [false, true])
    func aStatementPastTheBoundFailsAndThePoolServesTheNextCall(inTransaction: Bool) async throws {
        let fresh = try await TestPostgres.freshDatabase()
        let pool = try PostgresPool(location: fresh.location, size: 1, statementTimeout: .milliseconds(300))
        do {
            if inTransaction {
                try await pool.transaction { connection in
                    try await pool.run("SELECT pg_sleep(5)", on: connection)
                    try await pool.run("SELECT 1", on: connection)
                }
            } else {
                try await pool.query("SELECT pg_sleep(5)")
            }
            Issue.record("the call outlived its bound")
        } catch let error as PostgresPoolError {
            guard case .timedOut = error else { throw error }
        }
        let rows = try await pool.query("SELECT 1 AS one")
        #expect(try rows.first?.decode(Int.self) == 1)
        await pool.close()
        await fresh.close()
    }

    /// A statement on a connection already closed fails at once.
    @Test(.timeLimit(.minutes(1))) func aStatementOnAClosedConnectionFailsAtOnce() async throws {
        let fresh = try await TestPostgres.freshDatabase()
        let connection = try await fresh.dedicatedConnection()
        try await connection.close()
        await #expect(throws: PostgresPoolError.self) { try await fresh.run("SELECT 1", on: connection) }
        await fresh.close()
    }

    /// A connection held for good (LISTEN's) is checked, and a check that goes unanswered closes it.
    @Test func aWatchedConnectionThatStopsAnsweringIsClosed() async throws {
        let fresh = try await TestPostgres.freshDatabase()
        let pool = try PostgresPool(location: fresh.location, size: 1, statementTimeout: .milliseconds(300))
        let connection = try await pool.dedicatedConnection()
        let watching = Task { await pool.watch(connection, every: .milliseconds(50)) }
        // The connection is busy past the bound (a lock held elsewhere would do the same): the check goes unanswered.
        let busy = Task { _ = try? await connection.run("SELECT pg_sleep(5)", within: .seconds(60), logger: pool.logger) }
        try await eventually("the watched connection is closed") { connection.isClosed }
        await watching.value
        busy.cancel()
        await pool.close()
        await fresh.close()
    }
}
