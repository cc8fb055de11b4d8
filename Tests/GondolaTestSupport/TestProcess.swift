import Foundation

/// Runs programs for tests with `posix_spawn`, their output going to a file.
///
/// The test process is one multithreaded program full of sockets (servers, clients,
/// event loops). Spawning with `posix_spawn` opens and closes nothing in this
/// process — the child's output file is opened in the child — so no descriptor of
/// a socket can be closed from under its owner, and no pipe stays open because a
/// long-lived grandchild (a PostgreSQL server) inherited it.
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
        let words: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { words.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, arguments[0], &actions, nil, words, environ)
        guard spawned == 0 else { throw Failure(description: "cannot run \(arguments[0]): error \(spawned)") }
        return pid
    }

    /// Waits for `pid` to end; answers its exit status (-1 when it did not exit normally).
    public static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status & 0x7f == 0 ? (status >> 8) & 0xff : -1
    }

    /// Runs a program to its end; answers its exit status and what it printed on its standard output.
    public static func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-test-output-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let status = wait(try spawn(arguments, output: path))
        return (status, String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self))
    }
}
