import Dispatch
import GRDB
import GRDBSQLite
import Synchronization

/// Keeps the write-ahead log short without making commits wait for it.
///
/// SQLite's automatic checkpoint runs inside the commit that crosses 1,000 WAL frames,
/// so one writer transaction in a few hundred pays for copying the log into the
/// database (several milliseconds at thousands of commits per second). Instead, the
/// writer connection reports each commit's WAL size to `committed(frames:on:)`:
///
/// - from `backgroundFrames` on, a checkpointer with its own connection runs PASSIVE
///   checkpoints on its own thread (they copy the log while the writer goes on
///   committing), pass after pass until fewer than `catchUpFrames` are left;
/// - the writer then copies that short rest itself at its next commit, so the log is
///   complete in the database and the next transaction starts the WAL file over;
/// - at `writerFrames` (the checkpointer is behind, e.g. a slow disk) the writer
///   checkpoints whatever it can at once, as SQLite would: the WAL stays bounded and
///   the commit waits.
///
/// A read transaction that stays open holds back every checkpoint (the frames it may
/// still read cannot be copied); Gondola's reads are short. Checkpoints never lose
/// data: they only copy committed frames.
public final class WALCheckpointer: Sendable {
    /// When the checkpointer and the writer act, in WAL frames (one page each).
    public struct Limits: Sendable {
        /// WAL size at which the checkpointer starts its passes.
        public var backgroundFrames: Int
        /// A rest this short after a pass is copied by the writer, so the WAL starts over.
        public var catchUpFrames: Int
        /// WAL size at which the writer checkpoints itself, whatever the checkpointer does.
        public var writerFrames: Int
        /// Most PASSIVE passes the checkpointer makes in a row before it waits for the WAL to grow again.
        public var maxPasses: Int

        public init(backgroundFrames: Int = 8192, catchUpFrames: Int = 32, writerFrames: Int = 32768, maxPasses: Int = 8) {
            precondition(
                catchUpFrames >= 1 && backgroundFrames > catchUpFrames && writerFrames > catchUpFrames && maxPasses >= 1,
                "WAL limits need 1 <= catchUpFrames < backgroundFrames, writerFrames and maxPasses >= 1")
            self.backgroundFrames = backgroundFrames
            self.catchUpFrames = catchUpFrames
            self.writerFrames = writerFrames
            self.maxPasses = maxPasses
        }
    }

    /// How often each kind of checkpoint ran since start.
    public struct Statistics: Sendable, Equatable {
        /// PASSIVE passes of the checkpointer's own connection.
        public var backgroundPasses = 0
        /// Short rests copied by the writer after the checkpointer's passes.
        public var writerCatchUps = 0
        /// Checkpoints the writer ran because the WAL reached `writerFrames`.
        public var writerForced = 0
        /// Checkpoints that found another one running or failed (retried later).
        public var busy = 0
        /// Times the log started over (a commit found it fully copied and wrote from its start).
        public var logRestarts = 0
        /// The WAL's size in frames after the last commit.
        public var walFrames = 0

        public init() {}
    }

    private struct State {
        /// The checkpointer is running passes.
        var running = false
        /// WAL size and copied frames after the checkpointer's last pass, while the WAL
        /// has not started over since.
        var lastPass: (frames: Int, copied: Int)?
        var statistics = Statistics()
    }

    public let limits: Limits
    private let connection: DatabaseQueue
    private let queue = DispatchQueue(label: "gondola.database.checkpointer")
    private let state = Mutex(State())

    /// A checkpointer with its own connection to the database at `path` (in WAL mode).
    public init(path: String, limits: Limits = Limits()) throws {
        self.limits = limits
        var configuration = Configuration()
        configuration.label = "gondola.checkpointer"
        configuration.prepareDatabase { db in Self.growInChunks(db) }
        connection = try DatabaseQueue(path: path, configuration: configuration)
    }

    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// Makes `db`, the writer connection, report its commits here instead of running
    /// SQLite's automatic checkpoint. The checkpointer must outlive the connection's hook
    /// (`GondolaDatabase` closes its pool first).
    func attach(to db: Database) {
        Self.growInChunks(db)
        sqlite3_wal_hook(
            db.sqliteConnection,
            { context, connection, _, frames in
                guard let context, let connection else { return SQLITE_OK }
                Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue().committed(frames: Int(frames), on: connection)
                return SQLITE_OK
            }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Makes the connections that write the database file (the writer when a commit
    /// checkpoints, the checkpointer) grow it 16 MiB at a time instead of page by page.
    private static func growInChunks(_ db: Database) {
        var chunk: Int32 = 16 << 20
        sqlite3_file_control(db.sqliteConnection, "main", SQLITE_FCNTL_CHUNK_SIZE, &chunk)
    }

    private enum Action {
        case none, wakeCheckpointer, catchUp, forced
    }

    /// Called on the writer after each commit with the WAL's size in frames.
    func committed(frames: Int, on writer: OpaquePointer) {
        let action = state.withLock { state -> Action in
            // A WAL smaller than after the last commit has started over.
            if frames < state.statistics.walFrames {
                state.statistics.logRestarts += 1
                state.lastPass = nil
            }
            state.statistics.walFrames = frames
            if frames >= limits.writerFrames { return .forced }
            if !state.running, let pass = state.lastPass, frames - pass.copied <= limits.catchUpFrames { return .catchUp }
            let grown = frames - (state.lastPass?.frames ?? 0)
            if !state.running, frames >= limits.backgroundFrames, grown >= limits.catchUpFrames {
                state.running = true
                return .wakeCheckpointer
            }
            return .none
        }
        switch action {
        case .none:
            break
        case .wakeCheckpointer:
            queue.async { self.runPasses() }
        case .catchUp, .forced:
            let code = sqlite3_wal_checkpoint_v2(writer, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            state.withLock { state in
                if code != SQLITE_OK {
                    state.statistics.busy += 1
                } else if case .forced = action {
                    state.statistics.writerForced += 1
                } else {
                    state.statistics.writerCatchUps += 1
                }
                state.lastPass = nil
            }
        }
    }

    /// PASSIVE passes until the rest is short enough for the writer (or `maxPasses`).
    private func runPasses() {
        for _ in 0..<limits.maxPasses {
            let pass: (frames: Int, copied: Int)
            do {
                let result = try connection.inDatabase { db in try db.checkpoint(.passive) }
                pass = (result.walFrameCount, result.checkpointedFrameCount)
            } catch {
                state.withLock { $0.statistics.busy += 1 }
                break
            }
            let done = state.withLock { state -> Bool in
                state.statistics.backgroundPasses += 1
                state.lastPass = pass
                return pass.frames - pass.copied <= limits.catchUpFrames
            }
            if done { break }
        }
        state.withLock { $0.running = false }
    }
}
