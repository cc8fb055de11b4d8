import Foundation
@_spi(Engine) import GondolaHub
import GondolaProtocol
import GondolaRESP
import GondolaRedis
import Synchronization

/// Channel streams kept in Redis, so that every node sees the same offsets and
/// epochs: each channel has a Redis stream of its publications (entry ids are the
/// offsets) and a hash holding its top offset and epoch. An append is one Lua
/// script, atomic on the server: it takes the next offset, adds the entry (trimmed
/// to the namespace's size) and sets the expiries. Publications keep their bytes:
/// they are stored as `BinaryBusMessage` publication events. A publication older than the
/// namespace's TTL is not read; the whole stream expires a TTL after its last
/// publication, and its offset and epoch the namespace's `history_meta_ttl` after it.
///
/// Keys are `RedisKeys.stream`: `<prefix>:{<channel>}:stream` and `<prefix>:{<channel>}:meta`
/// (on a Redis Cluster, in its partition's slot: `<prefix>:{<tag>}:<channel>:stream`).
public final class RedisHistoryStore: HistoryStore {
    public let redis: any RedisCommands
    public let keys: RedisKeys
    private let appendScript: RedisScript
    private let readScript: RedisScript

    public init(redis: any RedisCommands, keys: RedisKeys = RedisKeys()) {
        self.redis = redis
        self.keys = keys
        appendScript = RedisScript(redis: redis, source: Self.appendSource(publishing: keys.publishCommand))
        readScript = RedisScript(redis: redis, source: Self.readSource)
    }

    /// Appends `publication` to the channel's stream; answers it with its offset and the stream's position.
    public func append(_ publication: Publication, to channel: String, options: NamespaceOptions, now: Date) async throws(HubError) -> (
        Publication, StreamPosition
    ) {
        try await append(publication, to: channel, options: options, now: now, announcing: nil)
    }

    /// A bus message to publish in the same script as the append, so that the bus
    /// carries a channel's publications in offset order: the script writes the message as
    /// `header` and the entry with the offset it took in place (see `BinaryBusMessage`).
    struct Announcement {
        let busChannel: [UInt8]
        let header: [UInt8]
    }

    /// Appends `publication` and, with an announcement, publishes it on the bus in the same atomic script.
    func append(
        _ publication: Publication, to channel: String, options: NamespaceOptions, now: Date,
        announcing announcement: Announcement?
    ) async throws(HubError) -> (Publication, StreamPosition) {
        let outcome = try await withCheckedContinuation { continuation in
            append(publication, to: channel, options: options, now: now, announcing: announcement) { continuation.resume(returning: $0) }
        }.get()
        guard case let .appended(stored, position) = outcome else { preconditionFailure("an append without a key or a version is never skipped") }
        return (stored, position)
    }

    /// `append` that sends the script at once (in the order of the calls) and tells
    /// `completion` what the stream made of the publication. With `publishing`'s
    /// idempotency key the same script answers the key's earlier position (kept
    /// `RedisIdempotency.lifetime`) and appends nothing; with its version, a version the
    /// stream skips answers the stream's position: in both cases nothing is announced.
    func append(
        _ publication: Publication, to channel: String, options: NamespaceOptions, now: Date, announcing announcement: Announcement?,
        publishing: PublishOptions = PublishOptions(),
        completion: @escaping @Sendable (Result<StreamAppend, HubError>) -> Void
    ) {
        // The entry keeps the publication's delta flag and trace parent, which the script's bus
        // message carries (a read of the stream clears them).
        let entry = BinaryBusMessage.publicationEvent(channel: channel, publication, offset: 0)
        var arguments = [
            entry, RedisArgument.number(Int64(max(options.historySize, 1))), RedisArgument.number(RedisArgument.seconds(options.historyTTL)),
            Array(Epoch.make().utf8), RedisArgument.number(RedisArgument.seconds(options.historyMetaTTL)),
            RedisArgument.number(RedisArgument.milliseconds(now)),
            RedisArgument.number(Int64(clamping: publishing.version)), Array(publishing.versionEpoch.utf8),
            RedisArgument.number(RedisIdempotency.lifetimeSeconds),
        ]
        if let announcement { arguments += [announcement.busChannel, announcement.header] }
        let scriptKeys = keys.stream(channel) + (publishing.idempotencyKey.map { [keys.idempotency(channel: channel, key: $0)] } ?? [])
        appendScript.run(keys: scriptKeys, arguments: arguments) { result in
            completion(
                result.mapError { HubError($0, in: "stream store") }.flatMap { answer in
                    guard let items = answer.elements, items.count == 3, let offset = items[0].integer, let epoch = items[1].string,
                        let skipped = items[2].integer
                    else {
                        return .failure(.internalError("the append script answered \(answer)"))
                    }
                    let position = StreamPosition(offset: UInt64(offset), epoch: epoch)
                    if skipped != 0 { return .success(.skipped(position)) }
                    var appended = publication
                    appended.offset = position.offset
                    return .success(.appended(appended, position))
                })
        }
    }

    public func read(channel: String, after: UInt64?, limit: Int, reverse: Bool, options: NamespaceOptions, now: Date) async throws -> StreamSlice {
        let oldest = options.historyTTL > .zero ? RedisArgument.milliseconds(now) - Int64(options.historyTTL.components.seconds * 1000) : 0
        let mode = limit == 0 ? "none" : reverse ? "reverse" : "forward"
        let answer = try await run(
            readScript, keys: keys.stream(channel),
            arguments: [
                Array(Epoch.make().utf8), RedisArgument.number(RedisArgument.seconds(options.historyMetaTTL)), Array(mode.utf8),
                RedisArgument.number(Int64(after ?? 0)), RedisArgument.number(Int64(limit < 0 ? Int(Int32.max) : limit)),
                RedisArgument.number(oldest),
            ])
        guard let items = answer.elements, items.count == 3, let top = items[0].integer, let epoch = items[1].string,
            let entries = items[2].elements
        else {
            throw HubError.internalError("the read script answered \(answer)")
        }
        var publications: [Publication] = []
        for entry in entries {
            guard let parts = entry.elements, parts.count == 2, let id = parts[0].string, let offset = UInt64(id.prefix { $0 != "-" }),
                let fields = parts[1].elements, fields.count >= 2, let bytes = fields[1].bytes
            else {
                throw HubError.internalError("a stream entry of \(channel) is not one Gondola wrote: \(entry)")
            }
            guard case var .publication(_, publication) = try BinaryBusMessage.decodeEntry(bytes) else {
                throw HubError.internalError("a stream entry of \(channel) is not a publication")
            }
            publication.offset = offset
            publication.useDelta = false
            publication.traceParent = nil
            publications.append(publication)
        }
        return StreamSlice(publications: publications, position: StreamPosition(offset: UInt64(top), epoch: epoch))
    }

    public func removeHistory(channel: String) async throws {
        _ = try await redis.send(bytes: [Array("DEL".utf8), keys.stream(channel)[0]])
    }

    private func run(_ script: RedisScript, keys: [[UInt8]], arguments: [[UInt8]]) async throws(HubError) -> RESPValue {
        try await RedisScript.answering(script, keys: keys, arguments: arguments, what: "stream store")
    }

    /// KEYS: stream, meta, and the idempotency key's result when there is one. ARGV: entry,
    /// size, TTL s (0: none), epoch if new, idle limit s, now ms, version (0: none), its
    /// epoch, the result's lifetime s, and optionally bus channel and message header (the
    /// message is the header, then the entry, a `BinaryBusMessage` publication event, with the
    /// offset's digits in place of its empty ones). Answers {offset, epoch, skipped}: a key
    /// already answered gives its position back, a version not above the stream's latest
    /// one (in the same epoch, or any when empty) the stream's; neither appends. The message is
    /// published with `command` (`RedisKeys.publishCommand`).
    static func appendSource(publishing command: String) -> String {
        """
        if KEYS[3] then
          local earlier = redis.call('GET', KEYS[3])
          if earlier then
            local separator = string.find(earlier, ':', 1, true)
            return {tonumber(string.sub(earlier, 1, separator - 1)), string.sub(earlier, separator + 1), 1}
          end
        end
        local epoch = \(RedisLua.epochOfThisServer(new: "ARGV[4]"))
        if ARGV[7] ~= '0' then
          local latest = redis.call('HMGET', KEYS[2], 'v', 've')
          if latest[1] and (ARGV[8] == '' or ARGV[8] == latest[2]) and tonumber(ARGV[7]) <= tonumber(latest[1]) then
            return {tonumber(redis.call('HGET', KEYS[2], 'o') or '0'), epoch, 1}
          end
          redis.call('HSET', KEYS[2], 'v', ARGV[7], 've', ARGV[8])
        end
        local offset = redis.call('HINCRBY', KEYS[2], 'o', 1)
        redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[2], offset .. '-1', 'd', ARGV[1], 't', ARGV[6])
        if tonumber(ARGV[3]) > 0 then redis.call('EXPIRE', KEYS[1], ARGV[3]) end
        redis.call('EXPIRE', KEYS[2], ARGV[5])
        if ARGV[10] then
          local digits = tostring(offset)
          redis.call('\(command)', ARGV[10], ARGV[11] .. 'p' .. string.char(#digits) .. digits .. string.sub(ARGV[1], 3))
        end
        if KEYS[3] then redis.call('SET', KEYS[3], offset .. ':' .. epoch, 'EX', ARGV[9]) end
        return {offset, epoch, 0}
        """
    }

    /// KEYS: stream, meta. ARGV: epoch if new, idle limit s, mode (forward, reverse, none),
    /// after (offset), limit, oldest time kept (ms, 0: all). Answers {top, epoch, entries}.
    static let readSource = """
        local epoch, started = \(RedisLua.epochOfThisServer(new: "ARGV[1]"))
        if started then redis.call('EXPIRE', KEYS[2], ARGV[2]) end
        local top = redis.call('HGET', KEYS[2], 'o') or '0'
        local limit = tonumber(ARGV[5])
        local oldest = tonumber(ARGV[6])
        local kept = {}
        if ARGV[3] == 'reverse' then
          local start = '+'
          while #kept < limit do
            local batch = redis.call('XREVRANGE', KEYS[1], start, '-', 'COUNT', math.min(limit - #kept, 1000))
            if #batch == 0 then return {top, epoch, kept} end
            for _, entry in ipairs(batch) do
              if tonumber(entry[2][4]) < oldest then return {top, epoch, kept} end
              table.insert(kept, entry)
            end
            start = '(' .. batch[#batch][1]
          end
        elseif ARGV[3] == 'forward' then
          local start = '(' .. ARGV[4] .. '-1'
          while #kept < limit do
            local batch = redis.call('XRANGE', KEYS[1], start, '+', 'COUNT', math.min(limit - #kept, 1000))
            if #batch == 0 then break end
            for _, entry in ipairs(batch) do
              if tonumber(entry[2][4]) >= oldest then table.insert(kept, entry) end
            end
            start = '(' .. batch[#batch][1]
          end
        end
        return {top, epoch, kept}
        """
}

/// How the engine's scripts get numbers: decimal text, whole seconds (rounded up), Unix milliseconds.
enum RedisArgument {
    static func number(_ value: Int64) -> [UInt8] { Array(String(value).utf8) }
    static func seconds(_ duration: Duration) -> Int64 { max(0, duration.components.seconds + (duration.components.attoseconds > 0 ? 1 : 0)) }
    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }
    /// An instant for `RedisLua.now(from:)`: its Unix milliseconds, or nothing for Redis's own clock.
    static func instant(_ date: Date?) -> [UInt8] { date.map { number(milliseconds($0)) } ?? [] }
}

/// Lua shared by the engine's scripts: a stream's epoch, and the hash (KEYS[1]) beside a sorted
/// set of its members' times (KEYS[2]) that presence entries and node heartbeats keep.
enum RedisLua {
    /// Lua lines that set `now`, Unix milliseconds: the instant in `argument` when the caller gave
    /// one (a test's), else Redis's own clock (`TIME`). The nodes stamp and judge the entries they
    /// share (presence, heartbeats) on that one clock, so a node whose clock is off neither drops
    /// the others' entries nor writes entries the others drop.
    static func now(from argument: String) -> String {
        """
        local now = tonumber(\(argument))
        if not now then
          local time = redis.call('TIME')
          now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
        end

        """
    }

    /// A Lua expression answering the epoch of the stream whose meta hash is KEYS[2], and
    /// whether it starts now: `newEpoch` when the hash has none, or when its epoch was begun
    /// on another server's history. That history is the server's replication id
    /// (`master_replid`), which changes when a replica is promoted and when a server restarts:
    /// replication is asynchronous (and `appendfsync everysec` keeps up to a second unwritten),
    /// so the new master may lack entries that were acknowledged and delivered, and would hand
    /// their offsets to new publications. A new epoch tells recovering clients they cannot
    /// recover instead. The hash keeps the epoch as `e` and the replication id as `r`.
    static func epochOfThisServer(new newEpoch: String) -> String {
        """
        (function()
          local history = string.match(redis.call('INFO', 'replication'), 'master_replid:(%x+)') or ''
          local meta = redis.call('HMGET', KEYS[2], 'e', 'r')
          if meta[1] and meta[2] == history then return meta[1], false end
          redis.call('HSET', KEYS[2], 'e', \(newEpoch), 'r', history)
          return \(newEpoch), true
        end)()
        """
    }

    /// Removes member ARGV[1] from both keys, and answers 1.
    static let removeMember = """
        redis.call('HDEL', KEYS[1], ARGV[1])
        redis.call('ZREM', KEYS[2], ARGV[1])
        return 1
        """

    /// Removes from both keys every member whose time is below `bound` (a Lua expression).
    static func dropMembers(scoredBelow bound: String) -> String {
        """
        local stale = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. \(bound))
        for _, member in ipairs(stale) do
          redis.call('HDEL', KEYS[1], member)
          redis.call('ZREM', KEYS[2], member)
        end

        """
    }
}

/// A Lua script run by its SHA1 (`EVALSHA`), loaded on first use and again when
/// the server answers `NOSCRIPT` (it restarted and forgot it).
final class RedisScript: Sendable {
    let redis: any RedisCommands
    let source: String
    private let sha = Mutex<String?>(nil)

    init(redis: any RedisCommands, source: String) {
        self.redis = redis
        self.source = source
    }

    /// Runs `script` for a part of the engine (`what`), its failures as the hub answers them:
    /// Redis down or the connection lost is `unavailable`, anything else an internal error.
    static func answering(_ script: RedisScript, keys: [[UInt8]], arguments: [[UInt8]], what: String) async throws(HubError) -> RESPValue {
        do {
            return try await script.run(keys: keys, arguments: arguments)
        } catch {
            throw HubError(error, in: what)
        }
    }

    func run(keys: [[UInt8]], arguments: [[UInt8]]) async throws(RedisError) -> RESPValue {
        try await withCheckedContinuation { continuation in
            run(keys: keys, arguments: arguments) { continuation.resume(returning: $0) }
        }.get()
    }

    /// Runs the script: by its digest, written at once when the digest is known (so
    /// scripts sent one after another run in that order); otherwise, and again after
    /// `NOSCRIPT`, it is loaded first (`SCRIPT LOAD`).
    func run(keys: [[UInt8]], arguments: [[UInt8]], completion: @escaping @Sendable (Result<RESPValue, RedisError>) -> Void) {
        guard let digest = sha.withLock({ $0 }) else {
            return load { result in
                switch result {
                case let .success(digest): self.evaluate(digest, keys: keys, arguments: arguments, reloading: false, completion: completion)
                case let .failure(error): completion(.failure(error))
                }
            }
        }
        evaluate(digest, keys: keys, arguments: arguments, reloading: true, completion: completion)
    }

    private func evaluate(
        _ digest: String, keys: [[UInt8]], arguments: [[UInt8]], reloading: Bool,
        completion: @escaping @Sendable (Result<RESPValue, RedisError>) -> Void
    ) {
        redis.send(bytes: [Array("EVALSHA".utf8), Array(digest.utf8), Array(String(keys.count).utf8)] + keys + arguments) { result in
            guard case let .failure(.server(message)) = result, message.hasPrefix("NOSCRIPT"), reloading else { return completion(result) }
            self.sha.withLock { $0 = nil }
            self.load { loaded in
                switch loaded {
                case let .success(digest): self.evaluate(digest, keys: keys, arguments: arguments, reloading: false, completion: completion)
                case let .failure(error): completion(.failure(error))
                }
            }
        }
    }

    private func load(_ completion: @escaping @Sendable (Result<String, RedisError>) -> Void) {
        redis.send(bytes: [Array("SCRIPT".utf8), Array("LOAD".utf8), Array(source.utf8)]) { result in
            completion(
                result.flatMap { answer in
                    guard let digest = answer.string else { return .failure(.unexpectedReply("SCRIPT LOAD answered no digest")) }
                    self.sha.withLock { $0 = digest }
                    return .success(digest)
                })
        }
    }
}

extension HubError {
    /// A Redis failure as the hub answers it, for a part of the engine (`what`): Redis
    /// down, the connection lost (the command may have run, so a publish retried after
    /// it may be stored twice) or too many commands waiting is `unavailable` (temporary:
    /// the SDKs retry), anything else an internal error. What the caller is told names the
    /// part and the shard as `/health` names it (`host:port`, never a credential) with why.
    init(_ error: RedisError, in what: String) {
        switch error {
        case let .unavailable(why): self = .unavailable("the \(what) (Redis) is unavailable: \(why)")
        case let .connectionLost(why): self = .unavailable("the \(what) (Redis) is unavailable: the connection was lost: \(why)")
        case let .overloaded(limit): self = .unavailable("the \(what) (Redis) has \(limit) commands waiting for answers")
        default: self = .internalError("the \(what) (Redis) failed: \(error)")
        }
    }
}
