import Foundation
import GondolaRedis
import NIOPosix
import Synchronization

/// A private `redis-server` (Debian's, installed by Scripts/setup) on a loopback port,
/// without persistence, that needs a password and speaks TLS only, with a client certificate,
/// as managed servers do (`address` carries what a client needs); `stop` and `start` again on
/// the same port play an outage.
public final class TestRedis: @unchecked Sendable {
    public let port: Int
    public let folder: String
    /// What `redis-server` is started with beyond the port and persistence (`--requirepass`, `--user`).
    private let arguments: [String]
    /// The address the test's own connections use (with the credentials the server needs).
    private let adminAddress: RedisAddress
    private var pid: pid_t?

    /// The password every test server needs unless its arguments say otherwise.
    public static let password = "test-redis-secret"
    /// The certificates of every test server that speaks TLS, made once for the test process.
    public static let certificates = Result { try TestCertificates() }

    /// Where the tests' clients connect, with the server's password.
    public var address: RedisAddress { adminAddress }

    /// A server that needs `TestRedis.password` over TLS with `TestRedis.certificates`; or,
    /// given `arguments`, one started with them added, whose `password` (and `username`) is
    /// what `address` then carries, over plain TCP unless `certificates` are given: then it
    /// speaks TLS only (its certificate from them) and asks clients for one signed by their CA.
    public init(arguments: [String]? = nil, username: String? = nil, password: String? = nil, certificates: TestCertificates? = nil) throws {
        port = Self.freePort()
        let certificates = try certificates ?? (arguments == nil ? Self.certificates.get() : nil)
        var arguments = arguments ?? ["--requirepass", Self.password]
        var tls: RedisTLS?
        if let certificates {
            arguments += [
                "--port", "0", "--tls-port", "\(port)", "--tls-cert-file", certificates.serverCertificateFile,
                "--tls-key-file", certificates.serverKeyFile, "--tls-ca-cert-file", certificates.caFile, "--tls-auth-clients", "yes",
            ]
            tls = RedisTLS(
                caFile: certificates.caFile, certificateFile: certificates.clientCertificateFile, keyFile: certificates.clientKeyFile)
        }
        self.arguments = arguments
        adminAddress = RedisAddress(
            host: "127.0.0.1", port: port, username: username, password: password ?? Self.password, tls: tls)
        folder = NSTemporaryDirectory() + "gondola-redis-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    /// The server's folder (its log) goes with the last reference to it: a test leaves nothing behind.
    deinit {
        if let pid { kill(pid, SIGKILL) }
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Runs `body` with a started server, and kills the server afterwards, also when `body` throws.
    public static func with(_ body: (TestRedis) async throws -> Void) async throws {
        let redis = try TestRedis()
        try await redis.start()
        do {
            try await body(redis)
        } catch {
            try? await redis.stop()
            throw error
        }
        try await redis.stop()
    }

    /// Starts the server and waits until it answers (at most 60 s: a deadline, generous
    /// because the tests of other targets can keep the two cores busy at the start).
    public func start() async throws {
        guard let server = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"].first(where: FileManager.default.isExecutableFile) else {
            throw TestRedisError("redis-server is not installed (Scripts/setup installs it)")
        }
        pid = try TestProcess.spawn(
            [
                server, "--bind", "127.0.0.1", "--port", "\(port)", "--save", "", "--appendonly", "no",
                "--dir", folder,
            ] + arguments, output: folder + "/redis.log", errors: folder + "/redis.log")
        do {
            try await eventually("redis-server on port \(port)", within: .seconds(60), every: .milliseconds(20)) {
                guard let connection = try? await RedisConnection.connect(to: adminAddress, on: MultiThreadedEventLoopGroup.singleton) else {
                    return false
                }
                connection.close()
                return true
            }
        } catch {
            let log = (try? String(contentsOfFile: folder + "/redis.log", encoding: .utf8)) ?? ""
            throw TestRedisError("redis-server on port \(port) did not answer within 60 s; its log ends:\n\(log.suffix(2_000))")
        }
    }

    /// Freezes the server (SIGSTOP): its sockets stay open and the kernel still takes what
    /// clients send, but nothing is answered, as behind a partition or a blackholing firewall.
    public func pause() {
        if let pid { kill(pid, SIGSTOP) }
    }

    /// Lets a paused server run again (SIGCONT).
    public func resume() {
        if let pid { kill(pid, SIGCONT) }
    }

    /// Kills the server (SIGKILL) and waits for it to be gone.
    public func stop() async throws {
        guard let pid else { return }
        kill(pid, SIGKILL)
        _ = try await TestProcess.exit(of: pid, within: .seconds(10))
        self.pid = nil
    }

    /// A loopback port free now and not handed out again by this process until its 12,768
    /// ports have all been (tests running at the same time each get their own, even before
    /// they bind them). It is taken below the
    /// kernel's range for outgoing connections (32768 and up), so that none of the many
    /// connections the tests open takes it before the server binds it.
    public static func freePort() -> Int {
        nextPort.withLock { next in
            while true {
                let port = next
                next = next + 1 < ports.upperBound ? next + 1 : ports.lowerBound
                if canBind(port) { return port }
            }
        }
    }

    /// The ports handed out, in turn from a start that differs between processes.
    private static let ports = 20_000..<32_768
    private static let nextPort = Mutex(ports.lowerBound + Int(getpid()) * 97 % ports.count)

    private static func canBind(_ port: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}

/// Why the test's Redis server could not be started.
public struct TestRedisError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
