import GondolaServices

/// Where the bytes of crash photos and reports are kept, named by their SHA-256. The
/// service stores the bytes before it commits the row that references them and removes
/// them only after the last referencing row is gone, so a stop in between leaves at most
/// unreferenced bytes, which `sweep` removes at start.
protocol CrashFiles: Sendable {
    /// Keeps `bytes` (once, however often they are stored) and answers their hash.
    func store(_ bytes: [UInt8]) async throws -> String
    /// The bytes of `hash`, or nil when none are kept.
    func read(_ hash: String) async throws -> [UInt8]?
    /// Removes the bytes of `hash`, which no row references any more; a failure only
    /// leaves them for the next sweep.
    func remove(_ hash: String) async
    /// Removes what no row references; answers how many files went.
    func sweep() async throws -> Int
}

/// Crash files in the node's data folder, next to its SQLite database.
struct LocalCrashFiles: CrashFiles {
    let folder: FileStore
    let repository: SQLiteCrashRepository

    func store(_ bytes: [UInt8]) throws -> String { try folder.store(bytes) }
    func read(_ hash: String) throws -> [UInt8]? { folder.read(hash) }
    func remove(_ hash: String) { folder.remove(hash) }
    func sweep() throws -> Int { folder.sweep(keeping: try repository.referencedFiles()) }
}
