import Foundation
import GondolaServices
import GondolaStore
import GondolaTestSupport
import Testing

@testable import GondolaCrash

/// The crash repository and file store of `engine` on empty storage.
func crashStorage(_ engine: Engine) async throws -> (repository: any CrashRepository, files: any CrashFiles) {
    switch engine {
    case .sqlite:
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-crash-\(UUID().uuidString)").path
        let database = try GondolaDatabase(path: folder + "/db.sqlite", domainMigrations: CrashSchema.registerMigrations)
        let repository = SQLiteCrashRepository(database: database)
        return (repository, LocalCrashFiles(folder: try FileStore(folder: folder + "/files"), repository: repository))
    case .postgres:
        let pool = try await TestPostgres.freshDatabase(CrashPostgresSchema.register)
        return (PostgresCrashRepository(pool: pool), PostgresCrashFiles(pool: pool))
    }
}

func draft(_ id: String, owner: String = "ann", at time: Int64 = 1_000) -> Crash {
    Crash(
        id: id, owner: owner, source: .manual, occurredAt: time, place: CrashPlace(lat: 46.5, lon: 7.9), injured: [], note: "",
        createdAt: time, updatedAt: time, reportedAt: nil, reportHash: nil, shareID: nil, shareExpiresAt: nil)
}

func photo(_ id: String, of crash: String, hash: String, section: PhotoSection = .crashScene, at time: Int64 = 2_000) -> CrashPhoto {
    CrashPhoto(
        id: id, crash: crash, section: section, fileHash: hash, fileName: "\(id).jpg", contentType: "image/jpeg",
        size: 3, width: 2, height: 1, createdAt: time)
}

/// What both engines must do alike with crashes, photos, reports and files.
@Suite struct CrashRepositoryTests {
    @Test(arguments: Engine.allCases)
    func crashesAreReadBackAsWrittenAndListedDraftsFirst(engine: Engine) async throws {
        let (repository, files) = try await crashStorage(engine)
        var first = draft("c1", at: 1_000)
        try await repository.insert(first)
        try await repository.insert(draft("c2", at: 2_000))
        try await repository.insert(draft("c3", owner: "bob"))
        first.injured = [.myself, .otherDriver]
        first.note = "Rear-ended at the lights"
        first.updatedAt = 1_500
        try await repository.update(first)
        #expect(try await repository.crash("c1") == first)
        #expect(try await repository.crash("nope") == nil)

        let hash = try await files.store([1, 2, 3])
        #expect(try await repository.insert(photo("p1", of: "c1", hash: hash), limit: 20))
        #expect(try await repository.setReport("c1", hash: hash, at: 3_000) == nil)
        try await repository.setShare("c1", shareID: "share-1", expiresAt: 9_000)
        let listed = try await repository.crashes(of: "ann")
        #expect(listed.map(\.crash.id) == ["c2", "c1"], "the draft comes before the report")
        #expect(listed.map(\.photos) == [0, 1])
        let reported = try #require(try await repository.crash("c1"))
        #expect(reported.reportHash == hash && reported.reportedAt == 3_000 && reported.updatedAt == 3_000)
        #expect(reported.shareID == "share-1" && reported.shareExpiresAt == 9_000)
        try await repository.setShare("c1", shareID: nil, expiresAt: nil)
        #expect(try await repository.crash("c1")?.shareID == nil)
    }

    @Test(arguments: Engine.allCases)
    func aSectionTakesPhotosUpToItsLimit(engine: Engine) async throws {
        let (repository, files) = try await crashStorage(engine)
        try await repository.insert(draft("c1"))
        let hash = try await files.store([9])
        #expect(try await repository.insert(photo("p1", of: "c1", hash: hash, at: 5_000), limit: 2))
        #expect(try await repository.insert(photo("p2", of: "c1", hash: hash, at: 6_000), limit: 2))
        #expect(try await !repository.insert(photo("p3", of: "c1", hash: hash), limit: 2), "the section is full")
        #expect(try await repository.insert(photo("p4", of: "c1", hash: hash, section: .licencePlate, at: 7_000), limit: 2))
        #expect(try await repository.photos(of: "c1").map(\.id) == ["p1", "p2", "p4"])
        #expect(try await repository.photo("p2", of: "c1") == photo("p2", of: "c1", hash: hash, at: 6_000))
        #expect(try await repository.photo("p2", of: "c9") == nil)
        #expect(try await repository.crash("c1")?.updatedAt == 7_000, "a photo moves the crash's update time")
    }

    @Test(arguments: Engine.allCases)
    func filesAreFreedOnlyWhenTheirLastRowGoes(engine: Engine) async throws {
        let (repository, files) = try await crashStorage(engine)
        try await repository.insert(draft("c1"))
        try await repository.insert(draft("c2"))
        let shared = try await files.store([7, 7, 7])
        #expect(try await files.store([7, 7, 7]) == shared, "the same bytes keep one name")
        let report = try await files.store([4, 2])
        #expect(try await repository.insert(photo("p1", of: "c1", hash: shared), limit: 20))
        #expect(try await repository.insert(photo("p2", of: "c2", hash: shared), limit: 20))
        #expect(try await !repository.delete(photo("p1", of: "c1", hash: shared), at: 8_000), "c2 still shows the bytes")
        #expect(try await repository.isReferenced(shared))
        #expect(try await repository.setReport("c2", hash: report, at: 9_000) == nil)
        let newer = try await files.store([4, 3])
        #expect(try await repository.setReport("c2", hash: newer, at: 9_500) == report, "the old report is no longer used")
        #expect(try await Set(repository.delete("c2")) == [shared, newer])
        #expect(try await !repository.isReferenced(shared))
        #expect(try await repository.crash("c2") == nil)
        #expect(try await repository.photos(of: "c2").isEmpty)
        for hash in [shared, report, newer] { await files.remove(hash) }
        #expect(try await files.read(shared) == nil)
        #expect(try await files.read(newer) == nil)
    }

    @Test(arguments: Engine.allCases)
    func filesAreReadBackAndUnreferencedOnesSwept(engine: Engine) async throws {
        let (repository, files) = try await crashStorage(engine)
        try await repository.insert(draft("c1"))
        let kept = try await files.store(Array(repeating: 200, count: 300_000))
        let loose = try await files.store([1])
        #expect(try await repository.insert(photo("p1", of: "c1", hash: kept), limit: 20))
        #expect(try await files.read(kept) == Array(repeating: 200, count: 300_000))
        switch engine {
        case .sqlite:
            #expect(try await files.sweep() == 1)
            #expect(try await files.read(loose) == nil)
        case .postgres:
            // Another node may be about to commit a row for bytes it has just stored.
            #expect(try await files.sweep() == 0, "bytes stored within the last hour are spared")
            #expect(try await files.read(loose) == [1])
            await files.remove(kept)
            #expect(try await files.read(kept) != nil, "bytes a photo references stay")
        }
        #expect(try await files.read(kept) != nil)
    }

    @Test(arguments: Engine.allCases)
    func phoneNumbersAreSetReplacedAndRemoved(engine: Engine) async throws {
        let repository = try await crashStorage(engine).repository
        #expect(try await repository.phone(of: "ann") == nil)
        try await repository.setPhone("+41790000001", of: "ann")
        try await repository.setPhone("+41790000002", of: "ann")
        #expect(try await repository.phone(of: "ann") == "+41790000002")
        try await repository.setPhone(nil, of: "ann")
        #expect(try await repository.phone(of: "ann") == nil)
    }
}
