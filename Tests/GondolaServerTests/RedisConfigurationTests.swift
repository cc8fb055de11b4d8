import Foundation
import GondolaRedis
import Testing

@testable import GondolaServer

/// The Redis engine's keys: URLs with credentials and TLS, the TLS files applied to the
/// `rediss://` servers only, and bad values refused naming the key without the password.
@Suite struct RedisConfigurationTests {
    @Test func urlsAndTLSFilesMakeTheServersTheNodeConnectsTo() throws {
        let ca = FileManager.default.temporaryDirectory.appendingPathComponent("redis-ca-\(UUID().uuidString).crt").path
        try Data("not read until a connection".utf8).write(to: URL(fileURLWithPath: ca))
        let configuration = try ConfigurationLoader.load(
            file: nil,
            environment: [
                "GONDOLA_REDIS_ADDRESSES": "rediss://:pw@10.0.0.5:6380,redis://10.0.0.6:6379/2", "GONDOLA_REDIS_TLS_CA_FILE": ca,
                "GONDOLA_REDIS_TLS_SERVER_NAME": "redis.internal",
            ], flags: [:])
        let servers = configuration.redisServers
        #expect(servers.map(\.description) == ["10.0.0.5:6380 (TLS)", "10.0.0.6:6379/2"])
        #expect(servers[0].tls == RedisTLS(caFile: ca, serverName: "redis.internal") && servers[0].password == "pw")
        #expect(servers[1].tls == nil)
    }

    @Test func badValuesAreRefusedNamingTheKeyButNotThePassword() {
        for (key, value, expected) in [
            ("GONDOLA_REDIS_ADDRESSES", "redis://:s3cret@h:70000", "redis://:***@h:70000"),
            ("GONDOLA_REDIS_TLS_CA_FILE", "/no/such/ca.crt", "not a readable file"),
        ] {
            do {
                _ = try ConfigurationLoader.load(file: nil, environment: [key: value], flags: [:])
                Issue.record("\(key)=\(value) was accepted")
            } catch {
                #expect("\(error)".contains(expected) && !"\(error)".contains("s3cret"), "\(error)")
            }
        }
    }

    @Test func aPrefixNamesEveryKeyAndOneThatWouldBreakTheSlotsIsRefused() throws {
        let configuration = try ConfigurationLoader.load(file: nil, environment: ["GONDOLA_REDIS_PREFIX": "trips-eu"], flags: [:])
        #expect(configuration.redisKeys.bus == Array("trips-eu:bus".utf8))
        #expect(try ConfigurationLoader.load(file: nil, environment: [:], flags: [:]).redisKeys.prefix == "gondola")
        for bad in ["a{b}", "two words"] {
            #expect(throws: ConfigurationError.self) {
                try ConfigurationLoader.load(file: nil, environment: ["GONDOLA_REDIS_PREFIX": bad], flags: [:])
            }
        }
    }
}
