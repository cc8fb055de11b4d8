import Foundation
import GondolaProtocol
import GondolaTestSupport
import Logging
import Synchronization
import Testing

@testable import GondolaHub

@Suite struct RefusalLogTests {
    @Test func aKindLogsOncePerIntervalAndTheNextLineCountsWhatWasNotLogged() {
        let recorded = RecordedLog()
        let refusals = RefusalLog(logger: recorded.logger(), interval: .seconds(3))
        let start = ContinuousClock.now
        for second in 0..<3 {
            refusals.log("subscribe 103", "command refused", metadata: ["user": "u\(second)"], now: start + .seconds(second))
        }
        refusals.log("publish 103", "command refused", metadata: ["user": "other kind"], now: start + .seconds(1))
        refusals.log("subscribe 103", "command refused", metadata: ["user": "later"], now: start + .seconds(3))
        #expect(recorded.all.map { $0.metadata["user"] } == ["u0", "other kind", "later"])
        #expect(recorded.all.map { $0.metadata["suppressed"] } == [nil, nil, "2"])
    }

    @Test func aLevelBelowTheLoggersIsNeitherLoggedNorRemembered() {
        let recorded = RecordedLog()
        let refusals = RefusalLog(logger: recorded.logger(level: .warning))
        refusals.log("subscribe 103", "command refused", metadata: [:])
        refusals.log("subscribe 103", "command refused", level: .warning, metadata: [:])
        #expect(recorded.all.map(\.level) == [.warning])
    }

    @Test func theKindsRememberedAreBounded() {
        let recorded = RecordedLog()
        let refusals = RefusalLog(logger: recorded.logger())
        let now = ContinuousClock.now
        for kind in 0...RefusalLog.maxKinds { refusals.log("kind \(kind)", "refused", metadata: [:], now: now + .milliseconds(kind)) }
        // The first kind was forgotten to make room, so it logs again at once; the last is still held back.
        refusals.log("kind 0", "refused", metadata: [:], now: now + .seconds(2))
        refusals.log("kind \(RefusalLog.maxKinds)", "refused", metadata: [:], now: now + .seconds(2))
        #expect(recorded.all.count == RefusalLog.maxKinds + 2)
    }

    @Test func aRefusedCommandIsLoggedWithWhoWhatAndWhy() async throws {
        let recorded = RecordedLog()
        let node = Node(configuration: testConfiguration(), tokens: try await ConnectionTokens(secret: testSecret), logger: recorded.logger())
        var client = try await TestClient.connected(node, user: "alice")
        #expect(try await client.call(.subscribe(SubscribeRequest(channel: "locked:1"))).errorCode == 103)
        #expect(try await client.call(.rpc(method: "no.such", data: nil)).errorCode == 104)
        let refused = recorded.all.filter { $0.message == "command refused" }
        #expect(refused.count == 2)
        #expect(refused.first?.metadata["user"] == "alice")
        #expect(refused.first?.metadata["client"] == client.session.id)
        #expect(refused.first?.metadata["command"] == "subscribe")
        #expect(refused.first?.metadata["channel"] == "locked:1")
        #expect(refused.first?.metadata["code"] == "103")
        #expect(refused.first?.metadata["reason"]?.contains("permission denied") == true)
        #expect(refused.last?.metadata["method"] == "no.such" && refused.last?.metadata["code"] == "104")
    }

    @Test func aRefusedConnectIsLoggedWithItsDisconnect() async throws {
        let recorded = RecordedLog()
        let node = Node(configuration: testConfiguration(), tokens: try await ConnectionTokens(secret: testSecret), logger: recorded.logger())
        var client = TestClient(node: node)
        _ = await client.send(.connect(ConnectRequest(token: "not-a-jwt")))
        #expect(try await client.closeCode().code == 3500)
        let refused = recorded.all.filter { $0.message == "command refused" }
        #expect(refused.map { $0.metadata["command"] } == ["connect"])
        #expect(refused.first?.metadata["code"] == "3500" && refused.first?.metadata["reason"]?.contains("invalid token") == true)
    }
}
