import Foundation
import GondolaDomain
import GondolaHub
import GondolaPostgres
import GondolaProtocol
import GondolaStore
import GondolaTestSupport
import Synchronization
import Testing

@testable import GondolaForms

/// The forms repositories of `engine` on empty storage.
func formsStorage(_ engine: Engine) async throws -> (forms: any FormRepository, assessments: any AssessmentRepository) {
    switch engine {
    case .sqlite:
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-forms-\(UUID().uuidString)/db.sqlite").path
        let database = try GondolaDatabase(path: path, domainMigrations: FormsSchema.registerMigrations)
        return (SQLiteFormRepository(database: database), SQLiteAssessmentRepository(database: database))
    case .postgres:
        let pool = try await TestPostgres.freshDatabase(FormsPostgresSchema.register)
        return (PostgresFormRepository(pool: pool), PostgresAssessmentRepository(pool: pool))
    }
}

/// What both engines must do alike with form documents and assessments.
@Suite struct FormsRepositoryTests {
    @Test(arguments: Engine.allCases)
    func schemaVersionsAreNumberedAndAnUnchangedBodyKeepsItsVersion(engine: Engine) async throws {
        let repository = try await formsStorage(engine).forms
        #expect(try await repository.putSchema(id: "inspection", body: "{\"a\":1}", now: 1) == (1, true))
        #expect(try await repository.putSchema(id: "inspection", body: "{\"a\":1}", now: 2) == (1, false))
        #expect(try await repository.putSchema(id: "inspection", body: "{\"a\":2}", now: 3) == (2, true))
        #expect(try await repository.putSchema(id: "other", body: "{}", now: 4) == (1, true))
        #expect(
            try await repository.schemas(id: nil, after: 0).map { "\($0.id) \($0.version) \($0.body)" } == [
                "inspection 1 {\"a\":1}", "inspection 2 {\"a\":2}", "other 1 {}",
            ])
        #expect(
            try await repository.schemas(id: "inspection", after: 1).map { "\($0.id) \($0.version)" } == ["inspection 2"],
            "one schema's newer versions")
        #expect(try await repository.schemas(id: "missing", after: 0).isEmpty)
        try await repository.putCodeTable(name: "colours", body: "{\"v\":1}")
        try await repository.putCodeTable(name: "colours", body: "{\"v\":2}")
        try await repository.putCodeTable(name: "brands", body: "{}")
        #expect(try await repository.codeTables(name: nil) == ["{}", "{\"v\":2}"])
        #expect(try await repository.codeTables(name: "colours") == ["{\"v\":2}"])
        #expect(try await repository.codeTables(name: "missing").isEmpty)
    }

    @Test(arguments: Engine.allCases)
    func documentsKeepTheirValuesVersionsSharesAndSubmission(engine: Engine) async throws {
        let repository = try await formsStorage(engine).forms
        let doc = FormDoc(
            id: "f1", schemaID: "inspection", schemaVersion: 2, owner: "ann", state: "draft", version: 0, submission: nil,
            createdAt: 10, updatedAt: 10, submittedAt: nil)
        try await repository.insert(doc)
        try await repository.insert(
            FormDoc(
                id: "f2", schemaID: "inspection", schemaVersion: 1, owner: "bob", state: "draft", version: 0,
                submission: nil, createdAt: 11, updatedAt: 11, submittedAt: nil))
        #expect(try await repository.doc("f1") == doc)
        #expect(try await repository.doc("nope") == nil)
        try await repository.set("site", to: .string("North"), in: "f1", version: 1, by: "ann", now: 20)
        try await repository.set("count", to: .int(3), in: "f1", version: 2, by: "ann", now: 21)
        try await repository.set("site", to: .null, in: "f1", version: 3, by: "ann", now: 22)
        let values = try await repository.values(of: "f1")
        #expect(values["site"] == FormValue(value: .null, version: 3, updatedBy: "ann"), "a cleared value keeps its version")
        #expect(values["count"] == FormValue(value: .int(3), version: 2, updatedBy: "ann"))
        #expect(FormValue.present(values) == ["count": .int(3)])
        #expect(try await repository.doc("f1")?.version == 3)

        try await repository.share("f2", with: "ann")
        try await repository.share("f2", with: "ann")
        try await repository.share("f2", with: "carl")
        #expect(try await repository.sharedUsers(of: "f2") == ["ann", "carl"])
        #expect(try await repository.isShared("f2", with: "ann"))
        #expect(!(try await repository.isShared("f1", with: "bob")))
        #expect(try await repository.docs(of: "ann", limit: 10).map(\.id) == ["f1", "f2"], "newest change first, shared ones too")
        #expect(try await repository.docs(of: "ann", limit: 1).map(\.id) == ["f1"])

        let submission: JSON = ["doc": "f1", "values": ["count": 3]]
        try await repository.submit("f1", submission: submission, version: 4, now: 30)
        let submitted = try #require(try await repository.doc("f1"))
        #expect(submitted.state == "submitted" && submitted.submission == submission && submitted.submittedAt == 30 && submitted.version == 4)
        try await repository.delete("f2")
        #expect(try await repository.doc("f2") == nil)
        #expect(try await repository.sharedUsers(of: "f2").isEmpty)
        #expect(try await repository.docs(of: "carl", limit: 10).isEmpty)
    }

    @Test(arguments: Engine.allCases)
    func assignmentsAnswersAndSubmissionsFollowTheFlow(engine: Engine) async throws {
        let repository = try await formsStorage(engine).assessments
        try await repository.put(id: "phq", body: "{\"v\":1}", now: 1)
        try await repository.put(id: "phq", body: "{\"v\":2}", now: 2)
        try await repository.put(id: "gad", body: "{}", now: 3)
        #expect(try await repository.assessments(id: nil) == ["{}", "{\"v\":2}"])
        #expect(try await repository.assessments(id: "phq") == ["{\"v\":2}"])
        #expect(try await repository.assessments(id: "missing").isEmpty)
        try await repository.assign("phq", to: "ann", now: 10)
        try await repository.assign("gad", to: "ann", now: 11)
        #expect(try await repository.open(of: "ann") == ["phq", "gad"])
        #expect(try await repository.state(of: "phq", for: "ann") == "open")
        #expect(try await repository.state(of: "phq", for: "bob") == nil)
        try await repository.answer("ann", assessment: "phq", question: "q1", value: .int(1), now: 12)
        try await repository.answer("ann", assessment: "phq", question: "q1", value: .int(2), now: 13)
        try await repository.assign("phq", to: "ann", now: 14)
        #expect(try await repository.answers(of: "ann") == ["phq": ["q1": .int(2)]], "assigning an open assessment again keeps its answers")
        try await repository.submit("ann", assessment: "phq", id: "s1", body: ["n": 1], now: 20)
        #expect(try await repository.state(of: "phq", for: "ann") == "submitted")
        #expect(try await repository.open(of: "ann") == ["gad"])
        try await repository.assign("phq", to: "ann", now: 30)
        #expect(try await repository.answers(of: "ann").isEmpty, "a submitted assessment assigned again starts over")
        try await repository.submit("ann", assessment: "phq", id: "s2", body: ["n": 2], now: 40)
        try await repository.submit("ann", assessment: "gad", id: "s3", body: ["n": 3], now: 50)
        #expect(try await repository.submissions(user: "ann", assessment: nil, limit: 10) == [["n": 3], ["n": 2], ["n": 1]])
        #expect(try await repository.submissions(user: nil, assessment: "phq", limit: 1) == [["n": 2]])
        #expect(try await repository.submissions(user: "bob", assessment: nil, limit: 10).isEmpty)
    }
}

/// Keyed locks exclude each other per key, across nodes when they live in PostgreSQL.
@Suite struct KeyedLocksTests {
    @Test(arguments: Engine.allCases)
    func twoHoldersOfOneKeyNeverOverlapWhileOtherKeysProceed(engine: Engine) async throws {
        // Two lock objects on one storage stand for two nodes of a cluster.
        let (first, second): (any KeyedLocks, any KeyedLocks)
        switch engine {
        case .sqlite:
            let shared = TaskKeyedLocks()
            (first, second) = (shared, shared)
        case .postgres:
            let pool = try await TestPostgres.freshDatabase()
            (first, second) = (try PostgresAdvisoryLocks(pool: pool, scope: "test"), try PostgresAdvisoryLocks(pool: pool, scope: "test"))
        }
        let probe = OverlapProbe()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                let locks = worker % 2 == 0 ? first : second
                group.addTask {
                    for round in 0..<20 {
                        let key = "doc-\(round % 2)"
                        try await locks.withLock(key) { () throws(HubError) in probe.hold(key) }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(probe.overlaps == 0)
    }

    @Test func anErrorInsideTheLockReachesTheCallerAndReleasesTheLock() async throws {
        let pool = try await TestPostgres.freshDatabase()
        let locks = try PostgresAdvisoryLocks(pool: pool, scope: "test")
        await #expect(throws: HubError.self) {
            try await locks.withLock("k") { () throws(HubError) in throw .badRequest("no") }
        }
        let other = try PostgresAdvisoryLocks(pool: pool, scope: "test")
        #expect(try await other.withLock("k") { () throws(HubError) in 7 } == 7, "the key is free again")
    }
}

/// Counts the holders inside each key's lock and how often two were inside at once.
final class OverlapProbe: Sendable {
    private let state = Mutex<(inside: [String: Int], overlaps: Int)>(([:], 0))

    var overlaps: Int { state.withLock { $0.overlaps } }

    /// Enters, stays a moment, and leaves.
    func hold(_ key: String) {
        state.withLock { state in
            state.inside[key, default: 0] += 1
            if state.inside[key]! > 1 { state.overlaps += 1 }
        }
        usleep(200)
        state.withLock { $0.inside[key]! -= 1 }
    }
}
