import GondolaRedis
import GondolaTestSupport
import NIOPosix
import Testing

/// Redis addresses as URLs (`redis://user:password@host:port/db`) and what a connection does
/// with them against a real redis-server that needs a password and has an ACL user.
@Suite struct RedisAddressTests {
    @Test func urlsCarryTheUserThePasswordAndTheDatabase() throws {
        let full = try #require(RedisAddress("redis://gondola:s%40cret@10.0.0.5:6380/3"))
        #expect(full.host == "10.0.0.5" && full.port == 6380 && full.username == "gondola" && full.password == "s@cret" && full.database == 3)
        #expect(full.description == "10.0.0.5:6380/3")
        let passwordOnly = try #require(RedisAddress("redis://:pw@redis"))
        #expect(passwordOnly.username == nil && passwordOnly.password == "pw" && passwordOnly.port == 6379 && passwordOnly.database == 0)
        #expect(RedisAddress("127.0.0.1:6379") == RedisAddress(host: "127.0.0.1", port: 6379))
        for bad in ["redis://h:0", "redis://h:6379/16", "redis://h:6379/x", "redis://:pw@", "h:70000"] {
            #expect(RedisAddress(bad) == nil, "\(bad)")
        }
        #expect(RedisAddress.redacted("redis://u:secret@h:1/2") == "redis://u:***@h:1/2")
        let encrypted = try #require(RedisAddress("rediss://:pw@redis.example.com:6380"))
        #expect(encrypted.tls == RedisTLS() && encrypted.description == "redis.example.com:6380 (TLS)")
        #expect(RedisAddress.redacted("rediss://:pw@h") == "rediss://:***@h")
    }

    /// A server that speaks TLS only and asks for a client certificate: a client with the CA
    /// and its certificate is served; one without the certificate, or trusting another CA, is refused.
    @Test func aTLSConnectionChecksTheServerAndShowsItsOwnCertificate() async throws {
        let certificates = try TestCertificates()
        let redis = try TestRedis(certificates: certificates)
        try await redis.start()
        defer { Task { try? await redis.stop() } }
        let group = MultiThreadedEventLoopGroup.singleton
        let connection = try await RedisConnection.connect(to: redis.address, on: group)
        #expect(try await connection.send(["SET", "k", "over-tls"]) == .simpleString("OK"))
        #expect(try await connection.send(["GET", "k"]) == .bulkString(Array("over-tls".utf8)))
        connection.close()
        var withoutCertificate = redis.address
        withoutCertificate.tls = RedisTLS(caFile: certificates.caFile)
        var otherCA = redis.address
        otherCA.tls?.caFile = certificates.otherCAFile
        var plain = redis.address
        plain.tls = nil
        for address in [withoutCertificate, otherCA, plain] {
            do {
                let refused = try await RedisConnection.connect(to: address, on: group, connectTimeout: .seconds(2))
                refused.close()
                Issue.record("connected with \(String(describing: address.tls))")
            } catch {
                #expect("\(error)".contains("127.0.0.1:\(redis.port)"), "\(error)")
            }
        }
    }

    @Test func aConnectionAuthenticatesAndSelectsItsDatabase() async throws {
        let redis = try TestRedis(
            arguments: ["--requirepass", "main-secret", "--user", "gondola", "on", ">app-secret", "~*", "&*", "+@all"],
            password: "main-secret")
        try await redis.start()
        defer { Task { try? await redis.stop() } }
        let group = MultiThreadedEventLoopGroup.singleton
        let asUser = try await RedisConnection.connect(
            to: RedisAddress(host: "127.0.0.1", port: redis.port, username: "gondola", password: "app-secret", database: 3), on: group)
        defer { asUser.close() }
        #expect(try await asUser.send(["SET", "k", "in-3"]) == .simpleString("OK"))
        let inZero = try await RedisConnection.connect(to: RedisAddress(host: "127.0.0.1", port: redis.port, password: "main-secret"), on: group)
        defer { inZero.close() }
        #expect(try await inZero.send(["GET", "k"]) == .null)
        #expect(try await inZero.send(["SELECT", "3"]) == .simpleString("OK"))
        #expect(try await inZero.send(["GET", "k"]) == .bulkString(Array("in-3".utf8)))

        // Wrong or missing credentials: the connection is refused, naming the server but not the password.
        for address in [
            RedisAddress(host: "127.0.0.1", port: redis.port, username: "gondola", password: "wrong"),
            RedisAddress(host: "127.0.0.1", port: redis.port),
        ] {
            do {
                let connection = try await RedisConnection.connect(to: address, on: group)
                connection.close()
                Issue.record("connected to a server that needs a password with \(address)")
            } catch {
                #expect(!"\(error)".contains("wrong") && "\(error)".contains("127.0.0.1:\(redis.port)"), "\(error)")
            }
        }
    }
}
