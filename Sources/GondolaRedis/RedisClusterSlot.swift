import GondolaRESP
import NIOCore

/// One hash slot of a Redis Cluster, named by a hash tag: the `seeds` to ask which master
/// serves it (`CLUSTER SLOTS`), each with the credentials and TLS that every node of the
/// cluster takes. A client of it connects to that master, and asks again when the cluster
/// answers `MOVED` (the slot went to another node) or when the connection is lost (a failover).
public struct RedisClusterSlot: Sendable, Hashable, CustomStringConvertible {
    public let seeds: [RedisAddress]
    /// The hash tag (without braces) of every key and shard channel kept in this slot.
    public let tag: String

    public init(seeds: [RedisAddress], tag: String) {
        precondition(!seeds.isEmpty, "a Redis Cluster needs at least one address to ask")
        self.seeds = seeds
        self.tag = tag
    }

    /// The slot, 0..<16384.
    public var slot: Int { RedisSlot.of("{\(tag)}") }

    public var description: String { "cluster slot \(slot) {\(tag)}" + (seeds[0].tls == nil ? "" : " (TLS)") }

    /// The address of the master serving the slot now: the first seed that answers names it,
    /// with the seeds' credentials and TLS; throws `unavailable` with every seed's reason when
    /// none does (each unreachable, or the slot served by no node).
    public func resolve(on group: any EventLoopGroup, timeout: TimeAmount = .seconds(1)) async throws(RedisError) -> RedisAddress {
        try await RedisConnection.askInTurn(
            seeds, on: group, timeout: timeout, whatFor: "no node of the Redis Cluster names the master of slot \(slot)"
        ) { seed, connection throws(RedisError) in
            guard let (host, port) = Self.master(of: slot, in: try await connection.send(["CLUSTER", "SLOTS"])) else {
                return .failure("\(seed) names no master for slot \(slot)")
            }
            return .success(seed.moved(to: host.isEmpty ? seed.host : host, port: port))
        }
    }

    /// The master of `slot` in a `CLUSTER SLOTS` answer (ranges of `[first, last, [host, port, id, …], replicas…]`).
    public static func master(of slot: Int, in answer: RESPValue) -> (host: String, port: Int)? {
        for range in answer.elements ?? [] {
            guard let parts = range.elements, parts.count >= 3, let first = parts[0].integer, let last = parts[1].integer,
                (Int(first)...Int(last)).contains(slot), let node = parts[2].elements, node.count >= 2,
                let host = node[0].string, let port = node[1].integer
            else { continue }
            return (host, Int(port))
        }
        return nil
    }

    /// Where a `MOVED <slot> <host>:<port>` or `ASK <slot> <host>:<port>` error answer sends the
    /// command, with the credentials and TLS of `address` (the node that answered); nil for other errors.
    public static func redirection(_ message: String, from address: RedisAddress) -> (ask: Bool, to: RedisAddress)? {
        let words = message.split(separator: " ")
        guard words.count == 3, words[0] == "MOVED" || words[0] == "ASK", let colon = words[2].lastIndex(of: ":"),
            let port = Int(words[2][words[2].index(after: colon)...])
        else { return nil }
        let host = String(words[2][..<colon])
        return (words[0] == "ASK", address.moved(to: host.isEmpty ? address.host : host, port: port))
    }
}

extension RedisAddress {
    /// The same credentials, database and TLS at another host and port (another node of the same cluster).
    func moved(to host: String, port: Int) -> RedisAddress {
        RedisAddress(host: host, port: port, username: username, password: password, database: database, tls: tls)
    }
}
