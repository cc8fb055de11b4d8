import Foundation
import GondolaProtocol
import GondolaTestSupport
import Synchronization
import Testing

@_spi(Engine) @testable import GondolaHub

@Suite struct HistoryAndRecoveryTests {
    func publish(_ node: Node, _ channel: String, count: Int, from start: Int = 1) async throws {
        for n in start..<(start + count) { try await node.publish(channel: channel, data: Payload(["n": .int(Int64(n))])) }
    }

    @Test func historyWithLimitSinceAndReverse() async throws {
        let node = try await makeNode()
        var client = try await TestClient.connected(node, user: "alice")
        _ = try await client.call(.subscribe(SubscribeRequest(channel: "room:h")))
        try await publish(node, "room:h", count: 7)
        let all = try await client.call(.history(HistoryRequest(channel: "room:h", limit: -1)))
        guard case let .history(result) = all.body else {
            Issue.record("\(all)")
            return
        }
        // history_size 5: offsets 3...7 are kept.
        #expect(result.publications.map(\.offset) == [3, 4, 5, 6, 7])
        #expect(result.offset == 7)
        let since = try await client.call(
            .history(HistoryRequest(channel: "room:h", limit: 2, since: StreamPosition(offset: 4, epoch: result.epoch))))
        guard case let .history(sinceResult) = since.body else {
            Issue.record("\(since)")
            return
        }
        #expect(sinceResult.publications.map(\.offset) == [5, 6])
        let reversed = try await client.call(.history(HistoryRequest(channel: "room:h", limit: 2, reverse: true)))
        guard case let .history(reverseResult) = reversed.body else {
            Issue.record("\(reversed)")
            return
        }
        #expect(reverseResult.publications.map(\.offset) == [7, 6])
        let positionOnly = try await client.call(.history(HistoryRequest(channel: "room:h", limit: 0)))
        guard case let .history(position) = positionOnly.body else {
            Issue.record("\(positionOnly)")
            return
        }
        #expect(position.publications.isEmpty && position.offset == 7 && position.epoch == result.epoch)
        let wrongEpoch = try await client.call(.history(HistoryRequest(channel: "room:h", limit: 2, since: StreamPosition(offset: 4, epoch: "nope"))))
        #expect(wrongEpoch.errorCode == 112)
    }

    @Test func historyInNamespaceWithoutStreamIsNotAvailable() async throws {
        let node = try await makeNode { $0.namespaces[""]?.allowHistoryForSubscriber = true }
        var client = try await TestClient.connected(node, user: "alice")
        _ = try await client.call(.subscribe(SubscribeRequest(channel: "plain")))
        #expect(try await client.call(.history(HistoryRequest(channel: "plain", limit: 10))).errorCode == 108)
    }

    @Test func resubscribeRecoversMissedPublications() async throws {
        let node = try await makeNode()
        var client = try await TestClient.connected(node, user: "alice")
        let first = try await client.call(.subscribe(SubscribeRequest(channel: "room:r", recoverable: true)))
        guard case let .subscribe(subscribed) = first.body else {
            Issue.record("\(first)")
            return
        }
        #expect(subscribed.recoverable && subscribed.positioned && subscribed.offset == 0 && !subscribed.epoch.isEmpty)
        try await publish(node, "room:r", count: 2)
        _ = try await client.call(.unsubscribe(channel: "room:r"))
        try await publish(node, "room:r", count: 3, from: 3)
        let again = try await client.call(
            .subscribe(SubscribeRequest(channel: "room:r", recover: true, epoch: subscribed.epoch, offset: 2, recoverable: true)))
        guard case let .subscribe(recovered) = again.body else {
            Issue.record("\(again)")
            return
        }
        #expect(recovered.recovered && recovered.wasRecovering)
        #expect(recovered.publications.map(\.offset) == [3, 4, 5])
        #expect(recovered.publications.map(\.data) == [3, 4, 5].map { Payload(["n": .int($0)]) })
        #expect(recovered.offset == 5)
    }

    @Test func anEmptyEpochRecoversWhatTheStreamHoldsFromTheStart() async throws {
        let node = try await makeNode()
        var client = try await TestClient.connected(node, user: "alice")
        try await publish(node, "room:e", count: 3)
        let flag = SubscribeRequest.rejectUnrecoveredFlag
        let reply = try await client.call(.subscribe(SubscribeRequest(channel: "room:e", recover: true, epoch: "", offset: 0, flag: flag)))
        guard case let .subscribe(result) = reply.body else {
            Issue.record("\(reply)")
            return
        }
        #expect(result.recovered && result.wasRecovering)
        #expect(result.publications.map(\.offset) == [1, 2, 3])
    }

    @Test func recoveryFailsWhenPositionLeftHistoryOrEpochChanged() async throws {
        let node = try await makeNode()
        var client = try await TestClient.connected(node, user: "alice")
        let first = try await client.call(.subscribe(SubscribeRequest(channel: "room:gap", recoverable: true)))
        guard case let .subscribe(subscribed) = first.body else {
            Issue.record("\(first)")
            return
        }
        _ = try await client.call(.unsubscribe(channel: "room:gap"))
        try await publish(node, "room:gap", count: 8)
        let gap = try await client.call(.subscribe(SubscribeRequest(channel: "room:gap", recover: true, epoch: subscribed.epoch, offset: 1)))
        guard case let .subscribe(result) = gap.body else {
            Issue.record("\(gap)")
            return
        }
        #expect(!result.recovered && result.wasRecovering && result.publications.isEmpty && result.offset == 8)
        _ = try await client.call(.unsubscribe(channel: "room:gap"))
        let epoch = try await client.call(.subscribe(SubscribeRequest(channel: "room:gap", recover: true, epoch: "other", offset: 8)))
        guard case let .subscribe(epochResult) = epoch.body else {
            Issue.record("\(epoch)")
            return
        }
        #expect(!epochResult.recovered)
        _ = try await client.call(.unsubscribe(channel: "room:gap"))
        let strict = try await client.call(
            .subscribe(SubscribeRequest(channel: "room:gap", recover: true, epoch: "other", offset: 8, flag: SubscribeRequest.rejectUnrecoveredFlag)))
        #expect(strict.errorCode == 112)
        #expect(!client.session.subscriptions.contains("room:gap"))
    }

    @Test func recoveryAtTheTopRecoversNothingMissing() async throws {
        let node = try await makeNode()
        var client = try await TestClient.connected(node, user: "alice")
        try await publish(node, "room:top", count: 2)
        let position = try await node.history(channel: "room:top", limit: 0, since: nil, reverse: false)
        let reply = try await client.call(.subscribe(SubscribeRequest(channel: "room:top", recover: true, epoch: position.epoch, offset: 2)))
        guard case let .subscribe(result) = reply.body else {
            Issue.record("\(reply)")
            return
        }
        #expect(result.recovered && result.publications.isEmpty)
    }

    @Test func publicationsDuringSubscribeAreNeitherLostNorDoubled() async throws {
        let node = try await makeNode { $0.namespaces["room"]?.historySize = 10_000 }
        var client = try await TestClient.connected(node, user: "alice")
        let epoch = try await node.history(channel: "room:race", limit: 0, since: nil, reverse: false).epoch
        let (started, publishing) = AsyncStream.makeStream(of: Void.self)
        let publisher = Task {
            for n in 1...300 {
                try await node.publish(channel: "room:race", data: Payload(.int(Int64(n))))
                if n == 20 { publishing.finish() }
            }
        }
        for await _ in started {}  // subscribe while the publisher is under way
        let reply = try await client.call(
            .subscribe(SubscribeRequest(channel: "room:race", recover: true, epoch: epoch, offset: 0, recoverable: true)))
        try await publisher.value
        guard case let .subscribe(result) = reply.body else {
            Issue.record("\(reply)")
            return
        }
        #expect(result.recovered)
        var offsets = result.publications.map(\.offset)
        while (offsets.last ?? 0) < 300 {
            if let publication = try await client.next().publication { offsets.append(publication.offset) }
        }
        #expect(offsets == Array(1...300))
    }
}

@Suite struct MemoryHistoryStoreTests {
    var options: NamespaceOptions {
        var options = NamespaceOptions(name: "x")
        options.historySize = 3
        options.historyTTL = .seconds(10)
        return options
    }

    @Test func trimsBySizeAndTTLButKeepsPosition() throws {
        let store = MemoryHistoryStore()
        let start = Date()
        for n in 0..<5 {
            _ = try store.append(Publication(data: Payload(.int(Int64(n)))), to: "c", options: options, now: start.addingTimeInterval(Double(n)))
        }
        let bySize = store.read(channel: "c", after: nil, limit: 100, reverse: false, options: options, now: start.addingTimeInterval(5))
        #expect(bySize.publications.map(\.offset) == [3, 4, 5])
        let byTTL = store.read(channel: "c", after: nil, limit: 100, reverse: false, options: options, now: start.addingTimeInterval(13.5))
        #expect(byTTL.publications.map(\.offset) == [5])
        let empty = store.read(channel: "c", after: nil, limit: 100, reverse: false, options: options, now: start.addingTimeInterval(60))
        #expect(empty.publications.isEmpty && empty.position.offset == 5 && empty.position.epoch == bySize.position.epoch)
    }

    @Test func idleStreamsAreSweptAndGetANewEpoch() throws {
        let store = MemoryHistoryStore()
        var options = options
        options.historyMetaTTL = .seconds(60)
        let start = Date()
        let (_, first) = try store.append(Publication(data: Payload(1)), to: "c", options: options, now: start)
        store.sweep(now: start.addingTimeInterval(30))
        #expect(store.streamCount == 1)
        store.sweep(now: start.addingTimeInterval(61))
        #expect(store.streamCount == 0)
        let (_, second) = try store.append(Publication(data: Payload(1)), to: "c", options: options, now: start.addingTimeInterval(62))
        #expect(second.offset == 1 && second.epoch != first.epoch)
    }
}

@Suite struct OutboundQueueTests {
    @Test func coalescesPendingMessagesIntoOneFrame() async {
        let queue = OutboundQueue(maxBytes: 1000, maxFrameBytes: 100)
        queue.enqueue(Array("{\"a\":1}".utf8))
        queue.enqueue(Array("{\"b\":2}".utf8))
        #expect(await queue.next() == .frame(Array("{\"a\":1}\n{\"b\":2}".utf8)))
        #expect(queue.pendingBytes == 0)
    }

    @Test func splitsFramesAtTheFrameLimit() async {
        let queue = OutboundQueue(maxBytes: 1000, maxFrameBytes: 20)
        for _ in 0..<3 { queue.enqueue(Array(repeating: UInt8(ascii: "1"), count: 9)) }
        guard case let .frame(first)? = await queue.next(), case let .frame(second)? = await queue.next() else {
            Issue.record("expected two frames")
            return
        }
        #expect(first.count == 19 && second.count == 9)
    }

    @Test func overflowDropsPendingAndCloses3008() async {
        let queue = OutboundQueue(maxBytes: 10, maxFrameBytes: 100)
        #expect(queue.enqueue(Array(repeating: 0x31, count: 8)))
        #expect(!queue.enqueue(Array(repeating: 0x31, count: 8)))
        #expect(!queue.enqueue([0x31]))
        #expect(await queue.next() == .close(.slow))
        #expect(await queue.next() == nil)
    }

    @Test func closeFlushesPendingFirst() async {
        let queue = OutboundQueue(maxBytes: 100, maxFrameBytes: 100)
        queue.enqueue([0x31])
        queue.close(.shutdown)
        queue.close(.noPong)
        #expect(await queue.next() == .frame([0x31]))
        #expect(await queue.next() == .close(.shutdown))
    }

    @Test func pollingWriterIsSignalledOncePerBurst() {
        let queue = OutboundQueue(maxBytes: 100, maxFrameBytes: 100)
        let signals = Atomic<Int>(0)
        queue.enqueue([0x31])
        // Registering with something pending signals at once.
        queue.onReady { signals.add(1, ordering: .relaxed) }
        #expect(signals.load(ordering: .relaxed) == 1)
        // More messages before the drain do not signal again.
        queue.enqueue([0x32])
        #expect(signals.load(ordering: .relaxed) == 1)
        #expect(queue.poll() == .frame([0x31, 0x0A, 0x32]))
        #expect(queue.poll() == nil)
        // An empty poll re-arms the signal.
        queue.enqueue([0x33])
        #expect(signals.load(ordering: .relaxed) == 2)
        #expect(queue.poll() == .frame([0x33]))
        // A close signals too, and is delivered once.
        #expect(queue.poll() == nil)
        queue.close(.shutdown)
        #expect(signals.load(ordering: .relaxed) == 3)
        #expect(queue.poll() == .close(.shutdown))
        #expect(queue.poll() == nil)
        #expect(!queue.enqueue([0x34]))
        #expect(signals.load(ordering: .relaxed) == 3)
    }

    @Test func pollingWriterSeesAnOverflowAsClose3008() {
        let queue = OutboundQueue(maxBytes: 10, maxFrameBytes: 100)
        let signals = Atomic<Int>(0)
        queue.onReady { signals.add(1, ordering: .relaxed) }
        #expect(signals.load(ordering: .relaxed) == 0)
        #expect(queue.enqueue(Array(repeating: 0x31, count: 8)))
        #expect(signals.load(ordering: .relaxed) == 1)
        // The overflow signals again although nothing was polled since: a writer stuck on an
        // unwritable socket must learn that the queue closed.
        #expect(!queue.enqueue(Array(repeating: 0x31, count: 8)))
        #expect(signals.load(ordering: .relaxed) == 2)
        #expect(queue.poll() == .close(.slow))
        #expect(!queue.enqueue([0x31]))
        #expect(signals.load(ordering: .relaxed) == 2)
    }

    @Test func signalsOfABatchFireWhenItEnds() {
        let queues = (0..<3).map { _ in OutboundQueue(maxBytes: 100, maxFrameBytes: 100) }
        let fired = Mutex<[Int]>([])
        for (number, queue) in queues.enumerated() { queue.onReady { fired.withLock { $0.append(number) } } }
        OutboundQueue.deferringSignals {
            for queue in queues { queue.enqueue([0x31]) }
            // Nested batches join the outer one.
            OutboundQueue.deferringSignals { queues[0].enqueue([0x32]) }
            #expect(fired.withLock { $0 }.isEmpty, "no writer is woken inside the batch")
        }
        #expect(fired.withLock { $0 } == [0, 1, 2], "each writer is woken once, in order, when the batch ends")
        #expect(queues[0].poll() == .frame([0x31, 0x0A, 0x32]))
        #expect(queues[0].poll() == nil)
        // Outside a batch a signal fires at once again.
        queues[0].enqueue([0x33])
        #expect(fired.withLock { $0 } == [0, 1, 2, 0])
    }

    @Test func writerWaitsForTheNextMessage() async throws {
        let queue = OutboundQueue(maxBytes: 100, maxFrameBytes: 100)
        let reader = Task { await queue.next() }
        try await eventually("the writer waiting") { queue.writerIsWaiting }
        queue.enqueue([0x32])
        #expect(await reader.value == .frame([0x32]))
    }
}

/// A channel's append (a disk write in durable namespaces) holds that channel's own lock
/// only: a channel sharing its shard publishes and delivers meanwhile.
@Suite struct ChannelLockTests {
    /// A durable store whose appends to one channel wait until the test opens a gate
    /// (a slow disk), and tell when such an append has started.
    final class SlowStore: LocalHistoryStore {
        func sweep(now: Date) {}

        let inner = MemoryHistoryStore()
        let slowChannel: String
        let gate = DispatchSemaphore(value: 0)
        let started: AsyncStream<Void>
        private let startedContinuation: AsyncStream<Void>.Continuation

        init(slowChannel: String) {
            self.slowChannel = slowChannel
            (started, startedContinuation) = AsyncStream.makeStream()
        }

        func append(
            _ publication: Publication, to channel: String, options: NamespaceOptions, version: StreamVersion?, now: Date
        ) throws -> StreamAppend {
            if channel == slowChannel {
                startedContinuation.yield()
                gate.wait()
            }
            return inner.append(publication, to: channel, options: options, version: version, now: now)
        }

        func read(channel: String, after: UInt64?, limit: Int, reverse: Bool, options: NamespaceOptions, now: Date) throws -> StreamSlice {
            inner.read(channel: channel, after: after, limit: limit, reverse: reverse, options: options, now: now)
        }

        func removeHistory(channel: String) throws { inner.removeHistory(channel: channel) }
    }

    @Test func aSlowAppendHoldsUpOnlyItsOwnChannel() async throws {
        let store = SlowStore(slowChannel: "room:slow")
        let node = try await makeNode(durableHistory: store) { $0.namespaces["room"]?.historyDurable = true }
        // A channel in the same shard as the slow one: under a shard-wide lock it would wait too.
        let sibling = try #require((0..<10_000).lazy.map { "room:n\($0)" }.first { node.table.shard(for: $0) === node.table.shard(for: "room:slow") })
        var client = try await TestClient.connected(node, user: "alice")
        _ = try await client.call(.subscribe(SubscribeRequest(channel: sibling)))

        // The slow append blocks a dispatch thread, not one of the few threads Swift's tasks share.
        let (slowDone, slowFinished) = AsyncStream.makeStream(of: Result<StreamPosition?, HubError>.self)
        DispatchQueue.global().async {
            node.publish(channel: "room:slow", data: Payload(["slow": true])) { slowFinished.yield($0) }
        }
        var started = store.started.makeAsyncIterator()
        await started.next()
        let quick = Task.detached { try await node.publish(channel: sibling, data: Payload(["quick": true])) }
        let quickFinished = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                _ = try await quick.value
                return true
            }
            group.addTask {
                try await Task.sleep(for: .seconds(10))
                return false
            }
            defer { group.cancelAll() }
            return try await group.next() ?? false
        }
        #expect(quickFinished, "a publication on another channel of the shard waited for the slow append")
        store.gate.signal()
        var slowOutcome = slowDone.makeAsyncIterator()
        #expect(try await slowOutcome.next()?.get()?.offset == 1)
        _ = try await quick.value
        var publication: Publication?
        while publication == nil { publication = try await client.next().publication }
        #expect(publication?.data == Payload(["quick": true]))
    }
}

/// A subscription while its stream position is read: what the channel delivers meanwhile is
/// kept for it and follows its reply, gap-free and without repeats, up to a limit.
@Suite struct PendingSubscriptionTests {
    /// A store whose read, once armed, takes its snapshot and then waits until the test
    /// opens it: publications made in between are newer than what the read answers.
    final class GatedStore: LocalHistoryStore {
        func sweep(now: Date) {}

        private let inner = MemoryHistoryStore()
        private let armed = Mutex(false)
        let (taken, takenContinuation) = AsyncStream.makeStream(of: Void.self)
        let (opened, openedContinuation) = AsyncStream.makeStream(of: Void.self)

        func arm() { armed.withLock { $0 = true } }

        func append(
            _ publication: Publication, to channel: String, options: NamespaceOptions, version: StreamVersion?, now: Date
        ) -> StreamAppend {
            inner.append(publication, to: channel, options: options, version: version, now: now)
        }

        func read(channel: String, after: UInt64?, limit: Int, reverse: Bool, options: NamespaceOptions, now: Date) async -> StreamSlice {
            let slice = inner.read(channel: channel, after: after, limit: limit, reverse: reverse, options: options, now: now)
            let gated = armed.withLock { armed in
                defer { armed = false }
                return armed
            }
            if gated {
                takenContinuation.yield()
                for await _ in opened { break }
            }
            return slice
        }

        func removeHistory(channel: String) { inner.removeHistory(channel: channel) }
    }

    /// Starts a recovering subscribe to `channel` whose stream read is held until the store opens.
    static func subscribeHeld(_ client: TestClient, _ store: GatedStore, channel: String) async -> Task<Void, Never> {
        store.arm()
        let session = client.session
        let frame = session.encoding.encode(
            Command(
                id: 100,
                .subscribe(
                    SubscribeRequest(channel: channel, recover: true, epoch: "", offset: 0, recoverable: true))))
        let subscribing = Task { await session.handle(frame: frame) }
        var taken = store.taken.makeAsyncIterator()
        await taken.next()
        return subscribing
    }

    @Test(.timeLimit(.minutes(1))) func publicationsDuringTheStreamReadFollowTheReplyOnceEach() async throws {
        let store = GatedStore()
        let node = try await makeNode(durableHistory: store) { $0.namespaces["room"]?.historyDurable = true }
        for n in 1...3 { try await node.publish(channel: "room:gated", data: Payload(.int(Int64(n)))) }
        let client = try await TestClient.connected(node, user: "ann")
        let subscribing = await Self.subscribeHeld(client, store, channel: "room:gated")
        for n in 4...8 { try await node.publish(channel: "room:gated", data: Payload(.int(Int64(n)))) }
        store.openedContinuation.yield()
        await subscribing.value
        guard case let .reply(reply) = try await client.next(), case let .subscribe(result) = reply.body else {
            Issue.record("the subscribe reply came first")
            return
        }
        #expect(result.recovered && result.offset == 3)
        #expect(result.publications.map(\.offset) == [1, 2, 3], "the reply holds the snapshot")
        var live: [UInt64] = []
        while live.count < 5 { if let publication = try await client.next().publication { live.append(publication.offset) } }
        #expect(live == [4, 5, 6, 7, 8], "what arrived during the read follows, in order")
        try await node.publish(channel: "room:gated", data: Payload(.int(9)))
        #expect(try await client.next().publication?.offset == 9, "then the live stream, without repeats")
    }

    @Test(.timeLimit(.minutes(1))) func aSubscriptionThatFallsTooFarBehindWhileSetUpIsRefusedAndLeavesNothing() async throws {
        let store = GatedStore()
        let node = try await makeNode(durableHistory: store) { $0.namespaces["room"]?.historyDurable = true }
        var client = try await TestClient.connected(node, user: "ann")
        let subscribing = await Self.subscribeHeld(client, store, channel: "room:flood")
        for n in 0...ChannelState.pendingLimit { try await node.publish(channel: "room:flood", data: Payload(.int(Int64(n)))) }
        store.openedContinuation.yield()
        await subscribing.value
        guard case let .reply(reply) = try await client.next(), case let .error(error) = reply.body else {
            Issue.record("the subscribe was not refused")
            return
        }
        #expect(error.code == 100, "an internal error the SDKs retry: \(error)")
        #expect(!node.hasSubscribers("room:flood"))
        // The refused channel can be subscribed to again.
        let again = try await client.call(.subscribe(SubscribeRequest(channel: "room:flood")))
        guard case .subscribe = again.body else {
            Issue.record("\(again)")
            return
        }
    }
}
