import Foundation
import GondolaProtocol
import Testing

@testable import GondolaLoad

/// The reconnect storm's parts: the SDK back-off, the clients' stream records and the audit of
/// acknowledged publications against them.
@Suite struct StormTests {
    @Test func aFixedPolicyWaitsTheSameEveryTime() {
        var schedule = ReconnectSchedule(policy: .fixed(.milliseconds(250)), connections: 2)
        for _ in 0..<5 { #expect(schedule.delay(after: 1) == 250_000_000) }
    }

    @Test func theBackoffDoublesItsWindowUpToTheMostAndStartsOverAfterASuccess() {
        let seed = UInt64.random(in: 0...UInt64.max)
        let low: Int64 = 500_000_000
        let high: Int64 = 20_000_000_000
        var schedule = ReconnectSchedule(policy: .backoff(min: .milliseconds(500), max: .seconds(20), seed: seed), connections: 1)
        var highest: Int64 = 0
        for step in 0..<40 {
            let delay = schedule.delay(after: 0)
            let window = min(high, step < 31 ? low << step : high)
            #expect(delay >= low && delay <= min(high, low + window), "step \(step), seed \(seed)")
            highest = max(highest, delay)
        }
        #expect(highest > 10_000_000_000, "forty failures reach the upper delays, seed \(seed)")
        schedule.succeeded(0)
        #expect(schedule.delay(after: 0) <= 2 * low, "after a success the first window again, seed \(seed)")
    }

    @Test func theSameSeedGivesTheSameDelays() {
        func delays(_ seed: UInt64) -> [Int64] {
            var schedule = ReconnectSchedule(policy: .backoff(min: .milliseconds(500), max: .seconds(20), seed: seed), connections: 3)
            return (0..<30).map { schedule.delay(after: $0 % 3) }
        }
        #expect(delays(42) == delays(42))
        #expect(delays(42) != delays(43))
    }

    @Test func skipsAreRecordedToldOrNotAndOverflowCountsAsMissing() {
        var stream = ClientStream()
        stream.position = StreamPosition(epoch: "e", offset: 10)
        stream.skip(to: 12, told: false)
        stream.skip(to: 20, told: true)
        #expect(stream.position?.offset == 20)
        #expect(stream.skipped(11, told: false) && stream.skipped(12, told: false))
        #expect(stream.skipped(15, told: true) && !stream.skipped(15, told: false))
        #expect(!stream.skipped(10, told: false) && !stream.skipped(21, told: true))
        stream.skip(to: 19, told: false)
        #expect(stream.position?.offset == 20, "a skip never moves back")

        for offset in stride(from: UInt64(22), through: 22 + 2 * UInt64(ClientStream.maxRecords), by: 2) { stream.skip(to: offset, told: false) }
        #expect(stream.overflowed)
        let last = stream.position!.offset
        #expect(stream.skipped(last - 1, told: false), "beyond the records, an offset not told about counts as skipped")
        #expect(!stream.skipped(15, told: false), "a told skip stays told")
    }

    @Test func theAuditPartsReceivedToldAndMissingPublications() {
        var acknowledged = AcknowledgedLedger.Snapshot()
        acknowledged.offsets = [0: [3, 4, 5, 6, 7, 8], 1: [2, 3]]
        acknowledged.epochs = [0: "e", 1: "other"]
        // Channel 0 (two channels: clients 0, 2, 4 share it).
        var complete = ClientStream()
        complete.position = StreamPosition(epoch: "e", offset: 8)
        complete.firstOffset = 2
        var gapped = complete
        gapped.position!.offset = 4
        gapped.skip(to: 5, told: false)
        gapped.skip(to: 7, told: true)
        var late = ClientStream()
        late.position = StreamPosition(epoch: "e", offset: 6)
        late.firstOffset = 5
        // Channel 1's stream is of another epoch than the acknowledgements: not comparable.
        var elsewhere = ClientStream()
        elsewhere.position = StreamPosition(epoch: "e", offset: 0)
        let audit = StormAudit(streams: [complete, elsewhere, gapped, ClientStream(), late], channels: 2, acknowledged: acknowledged)
        // gapped: 5 untold (missing), 6 and 7 told, 8 past its position; late: 6 received, 7 and 8 behind.
        #expect(audit.missing == 4)
        #expect(audit.behind == 3)
        #expect(audit.skippedTold == 2)
    }

    @Test func aStormClientFollowsItsStreamThroughRecoveredAndUnrecoveredResubscriptions() throws {
        let url = try WebSocketURL("ws://127.0.0.1:9/connection/websocket")
        var options = StormOptions()
        options.clients = 1
        options.channels = 1
        let scenario = try StormScenario(urls: [url], options: options, tokens: ["t"], apis: [ServerAPIClient(base: url.httpBase, key: "k")])
        let io = try LoadIO(pool: SocketPool(limits: .init(maxConnections: 1), handler: Idle()), stats: LoadStats(mainLatency: "delivery"))
        func receive(_ text: String) {
            Array(text.utf8).withUnsafeBytes { scenario.received(0, $0, binary: false, io) }
        }
        receive(#"{"id":1,"connect":{"client":"c"}}"# + "\n" + #"{"id":2,"subscribe":{"recoverable":true,"epoch":"e","offset":4}}"#)
        #expect(scenario.readyCount == 1)
        scenario.measuringStarted()
        receive(#"{"push":{"channel":"storm:0","pub":{"data":{"t":1},"offset":5}}}"#)
        receive(#"{"push":{"channel":"storm:0","pub":{"data":{"t":1},"offset":7}}}"#)
        scenario.closed(0)
        #expect(scenario.readyCount == 0 && scenario.outageStart != nil)
        receive(
            #"{"id":2,"subscribe":{"recoverable":true,"epoch":"e","offset":9,"recovered":true,"publications":[{"data":{"t":1},"offset":8},{"data":{"t":1},"offset":9}]}}"#
        )
        scenario.closed(0)
        receive(#"{"id":2,"subscribe":{"recoverable":true,"epoch":"e","offset":12,"was_recovering":true}}"#)
        for offset in 5...12 { scenario.ledger.acknowledge(channel: 0, offset: UInt64(offset), epoch: "e") }
        let figures = scenario.figures(measuredSeconds: 1)
        #expect(figures["told_recovered"] == 1)
        #expect(figures["told_not_recovered"] == 1)
        #expect(figures["clients_dropped"] == 1, "dropped twice, one client")
        #expect(figures["clients_not_back"] == 0)
        #expect(figures["back_100_seconds"]! >= 0 && figures["back_99_seconds"] == figures["back_100_seconds"])
        #expect(figures["missing_acknowledged"] == 1, "offset 6 was skipped untold")
        #expect(figures["skipped_after_told_not_recovered"] == 3, "10, 11 and 12 were skipped after recovered: false")
        #expect(figures["acknowledged_publications"] == 8)
    }

    /// A pool handler for a pool that never runs.
    final class Idle: SocketPoolHandler {
        func opened(_ connection: Int) {}
        func received(_ connection: Int, _ bytes: UnsafeRawBufferPointer, binary: Bool) {}
        func closed(_ connection: Int, code: Int, cause: String) {}
        func tick() {}
    }
}
