import Foundation

/// Runs programs for tests with `posix_spawn`, their output going to a file.
///
/// The test process is one multithreaded program full of sockets (servers, clients,
/// event loops). Spawning with `posix_spawn` opens and closes nothing in this
/// process — the child's output file is opened in the child — so no descriptor of
/// a socket can be closed from under its owner, and the child starts with standard
/// input, output and error only: it holds none of this process's sockets open, and no
/// pipe stays open because a long-lived grandchild (a PostgreSQL server) inherited it.
public enum TestProcess {
    /// Why a program could not be run.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Starts `arguments[0]` (a path) with the rest as its arguments; its standard
    /// output goes to `output` and its standard error to `errors` (nil: the test's own).
    /// Answers the child's pid.
    public static func spawn(_ arguments: [String], output: String = "/dev/null", errors: String? = nil) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        if let errors { posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_APPEND, 0o600) }
        // NIO's sockets are not close-on-exec: a child would hold a copy of every connection open
        // in this process, and a connection the server closes would stay open (no FIN) until it exits.
        guard closeFrom(&actions, 3) == 0 else { throw Failure(description: "cannot run \(arguments[0]): closefrom refused") }
        let words: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { words.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, arguments[0], &actions, nil, words, environ)
        guard spawned == 0 else { throw Failure(description: "cannot run \(arguments[0]): error \(spawned)") }
        return pid
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc
    /// module does not show: closes every descriptor from the given one up in the child.
    private static let closeFrom: @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32 = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
            fatalError("glibc 2.34 or later is needed (posix_spawn_file_actions_addclosefrom_np)")
        }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// Waits for `pid` to end; answers its exit status (-1 when it did not exit normally).
    public static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status & 0x7f == 0 ? (status >> 8) & 0xff : -1
    }

    /// Waits for `pid` to end without holding a thread (it is polled); answers its exit
    /// status (-1 when it did not exit normally). A child still running after `limit` is
    /// killed and the wait throws.
    public static func exit(of pid: pid_t, within limit: Duration) async throws -> Int32 {
        let deadline = ContinuousClock.now + limit
        var status: Int32 = 0
        while true {
            let ended = waitpid(pid, &status, WNOHANG)
            if ended == pid { return status & 0x7f == 0 ? (status >> 8) & 0xff : -1 }
            guard ended == 0 || errno == EINTR else { throw Failure(description: "cannot wait for process \(pid): errno \(errno)") }
            guard ContinuousClock.now < deadline else {
                kill(pid, SIGKILL)
                _ = wait(pid)
                throw Failure(description: "process \(pid) still running after \(limit): killed")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Runs a program to its end; answers its exit status and what it printed on its standard output.
    public static func run(_ arguments: [String], errors: String? = nil) throws -> (status: Int32, output: String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-test-output-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let status = wait(try spawn(arguments, output: path, errors: errors))
        return (status, String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self))
    }
}
