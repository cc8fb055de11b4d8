import Crypto
import Foundation

/// Uploaded files kept by content: each file is `<folder>/<first two hex digits>/<sha256>`,
/// written to `<folder>/tmp/` first, flushed to disk and renamed into place, so a file is
/// either whole under its name or absent. The caller commits the row that references a
/// file only after `store` returns, and removes the file only after the row's deletion
/// is committed; `sweep(keeping:)` at start removes what a crash left between the two.
public final class FileStore: Sendable {
    public let folder: String
    private var temporaryFolder: String { folder + "/tmp" }

    /// Creates the folder (and its `tmp/`) when missing.
    public init(folder: String) throws {
        self.folder = folder
        try FileManager.default.createDirectory(atPath: folder + "/tmp", withIntermediateDirectories: true)
    }

    /// Writes `bytes` under their SHA-256 (kept as it is when the same content is
    /// already stored) and answers that hash.
    public func store(_ bytes: [UInt8]) throws -> String {
        let hash = Self.hash(of: bytes)
        let target = path(of: hash)
        if FileManager.default.fileExists(atPath: target) { return hash }
        try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let temporary = temporaryFolder + "/" + UUID().uuidString
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        guard descriptor >= 0 else { throw FileStoreError("cannot create \(temporary): errno \(errno)") }
        var written = 0
        let complete = bytes.withUnsafeBytes { buffer -> Bool in
            while written < buffer.count {
                let count = write(descriptor, buffer.baseAddress! + written, buffer.count - written)
                if count <= 0 { return false }
                written += count
            }
            return fsync(descriptor) == 0
        }
        close(descriptor)
        guard complete, rename(temporary, target) == 0 else {
            unlink(temporary)
            throw FileStoreError("cannot write \(target): errno \(errno)")
        }
        return hash
    }

    /// The name content is kept under: its SHA-256 in lowercase hex.
    public static func hash(of bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    /// The stored bytes of `hash`, or nil when no such file is stored.
    public func read(_ hash: String) -> [UInt8]? {
        guard Self.isHash(hash), let data = FileManager.default.contents(atPath: path(of: hash)) else { return nil }
        return Array(data)
    }

    /// Removes the file of `hash`; a missing file is not an error.
    public func remove(_ hash: String) {
        guard Self.isHash(hash) else { return }
        unlink(path(of: hash))
    }

    /// Removes every stored file whose hash is not in `keeping`, and every half-written
    /// temporary file; answers how many files went.
    @discardableResult
    public func sweep(keeping: Set<String>) -> Int {
        let manager = FileManager.default
        var removed = 0
        for name in (try? manager.contentsOfDirectory(atPath: temporaryFolder)) ?? [] {
            if unlink(temporaryFolder + "/" + name) == 0 { removed += 1 }
        }
        for shard in (try? manager.contentsOfDirectory(atPath: folder)) ?? [] where shard.count == 2 {
            for name in (try? manager.contentsOfDirectory(atPath: folder + "/" + shard)) ?? [] where !keeping.contains(name) {
                if unlink(folder + "/" + shard + "/" + name) == 0 { removed += 1 }
            }
        }
        return removed
    }

    private func path(of hash: String) -> String {
        folder + "/" + hash.prefix(2) + "/" + hash
    }

    private static func isHash(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}

/// A file the store could not write, with the path and the system's error number.
public struct FileStoreError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
