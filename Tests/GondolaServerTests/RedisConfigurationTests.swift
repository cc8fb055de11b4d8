import Foundation
import GondolaHub
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
        let servers = configuration.redisServers.map { server in
            guard case let .address(address) = server else { preconditionFailure("no Sentinel was configured") }
            return address
        }
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

    @Test func sentinelMastersAreShardsFoundThroughTheSentinels() throws {
        let configuration = try ConfigurationLoader.load(
            file: nil,
            environment: [
                "GONDOLA_REDIS_SENTINEL_ADDRESSES": "redis://:sentinel-pw@10.0.0.7:26379,10.0.0.8:26379",
                "GONDOLA_REDIS_SENTINEL_MASTER_NAME": "rediss://:pw@trips-a/2,trips-b",
            ], flags: [:])
        guard case let .sentinel(first) = configuration.redisServers[0], case let .sentinel(second) = configuration.redisServers[1] else {
            Issue.record("not Sentinel: \(configuration.redisServers)")
            return
        }
        #expect(configuration.redisServers.count == 2)
        #expect(first.sentinels.map(\.description) == ["10.0.0.7:26379", "10.0.0.8:26379"] && first.sentinels[0].password == "sentinel-pw")
        #expect(first.masterName == "trips-a" && first.master.password == "pw" && first.master.database == 2 && first.master.tls != nil)
        #expect(second.masterName == "trips-b" && second.master.password == nil && second.master.tls == nil)
        #expect(configuration.redisServers.map(\.description) == ["trips-a via Sentinel /2 (TLS)", "trips-b via Sentinel"])
    }

    @Test func aSentinelSetupThatIsHalfThereOrNamesServersTooIsRefused() {
        for (environment, expected) in [
            (["GONDOLA_REDIS_SENTINEL_ADDRESSES": "10.0.0.7:26379"], "needs redis_sentinel_master_name"),
            (["GONDOLA_REDIS_SENTINEL_MASTER_NAME": "trips"], "needs redis_sentinel_addresses"),
            (
                [
                    "GONDOLA_REDIS_SENTINEL_ADDRESSES": "10.0.0.7:26379", "GONDOLA_REDIS_SENTINEL_MASTER_NAME": "trips",
                    "GONDOLA_REDIS_ADDRESSES": "10.0.0.5:6379",
                ],
                "cannot be used with redis_sentinel_addresses"
            ),
            (["GONDOLA_REDIS_SENTINEL_ADDRESSES": "10.0.0.7:26379", "GONDOLA_REDIS_SENTINEL_MASTER_NAME": "redis://:s3cret@trips:6379"], "no port"),
            (["GONDOLA_REDIS_SENTINEL_ADDRESSES": "10.0.0.7:26379", "GONDOLA_REDIS_SENTINEL_MASTER_NAME": "trips,trips"], "names a master twice"),
        ] {
            do {
                _ = try ConfigurationLoader.load(file: nil, environment: environment, flags: [:])
                Issue.record("\(environment) was accepted")
            } catch {
                #expect("\(error)".contains(expected) && !"\(error)".contains("s3cret"), "\(error)")
            }
        }
    }

    @Test func aRedisClusterIsPartitionsEachInASlotOfItsOwn() throws {
        let configuration = try ConfigurationLoader.load(
            file: nil,
            environment: [
                "GONDOLA_REDIS_CLUSTER_ADDRESSES": "rediss://:pw@10.0.0.9:7000,10.0.0.10:7000", "GONDOLA_REDIS_CLUSTER_PARTITIONS": "4",
            ], flags: [:])
        let slots = configuration.redisServers.compactMap { server -> RedisClusterSlot? in
            guard case let .cluster(slot) = server else { return nil }
            return slot
        }
        #expect(slots.count == 4 && slots.map(\.tag) == RedisSlot.evenTags(count: 4))
        #expect(slots[0].seeds.map(\.description) == ["10.0.0.9:7000 (TLS)", "10.0.0.10:7000"] && slots[0].seeds[0].password == "pw")
        #expect(slots.map { $0.slot * 4 / RedisSlot.count } == [0, 1, 2, 3])
        #expect(try ConfigurationLoader.load(file: nil, environment: [:], flags: [:]).redisClusterPartitions == 16)
    }

    @Test func aRedisClusterWithOtherServersADatabaseOrBadPartitionsIsRefused() {
        for (environment, expected) in [
            (["GONDOLA_REDIS_CLUSTER_ADDRESSES": "10.0.0.9:7000", "GONDOLA_REDIS_ADDRESSES": "10.0.0.5:6379"], "cannot be used with redis_cluster"),
            (
                [
                    "GONDOLA_REDIS_CLUSTER_ADDRESSES": "10.0.0.9:7000", "GONDOLA_REDIS_SENTINEL_ADDRESSES": "10.0.0.7:26379",
                    "GONDOLA_REDIS_SENTINEL_MASTER_NAME": "trips",
                ],
                "cannot be used with redis_cluster_addresses"
            ),
            (["GONDOLA_REDIS_CLUSTER_ADDRESSES": "redis://:s3cret@10.0.0.9:7000/3"], "only database 0"),
            (["GONDOLA_REDIS_CLUSTER_ADDRESSES": "10.0.0.9:7000", "GONDOLA_REDIS_CLUSTER_PARTITIONS": "0"], "redis_cluster_partitions"),
            (["GONDOLA_REDIS_CLUSTER_ADDRESSES": "10.0.0.9:7000", "GONDOLA_REDIS_CLUSTER_PARTITIONS": "2000"], "redis_cluster_partitions"),
        ] {
            do {
                _ = try ConfigurationLoader.load(file: nil, environment: environment, flags: [:])
                Issue.record("\(environment) was accepted")
            } catch {
                #expect("\(error)".contains(expected) && !"\(error)".contains("s3cret"), "\(error)")
            }
        }
    }
}
