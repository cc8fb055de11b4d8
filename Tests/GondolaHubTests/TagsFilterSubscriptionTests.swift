import Foundation
import GondolaProtocol
import Testing

@_spi(Engine) @testable import GondolaHub

/// Subscriptions with a tags filter (`tf`): only matching publications reach them, live,
/// while they are set up and when they recover, on a namespace that allows filters; a
/// filter the namespace does not allow, a malformed one or one beside a delta is refused
/// with 107 and the connection goes on.
@Suite struct TagsFilterSubscriptionTests {
    static let apple = TagsFilter(key: "ticker", cmp: "in", vals: ["AAPL"])

    func filteringNode() async throws -> Node {
        try await makeNode {
            $0.namespaces["room"]?.allowTagsFilter = true
            $0.namespaces["room"]?.allowedDeltaTypes = [.fossil]
        }
    }

    func publish(_ node: Node, _ channel: String, tickers: [String]) async throws {
        for (index, ticker) in tickers.enumerated() {
            try await node.publish(channel: channel, data: Payload(["n": .int(Int64(index))]), tags: ["ticker": ticker])
        }
    }

    @Test(arguments: ProtocolEncoding.allCases)
    func onlyMatchingPublicationsArriveLiveAndRecovered(encoding: ProtocolEncoding) async throws {
        let node = try await filteringNode()
        var filtered = try await TestClient.connected(node, user: "ann", encoding: encoding)
        var plain = try await TestClient.connected(node, user: "bo", encoding: encoding)
        var request = SubscribeRequest(channel: "room:quotes", recoverable: true)
        request.tagsFilter = Self.apple
        let reply = try await filtered.call(.subscribe(request))
        guard case let .subscribe(subscribed) = reply.body else {
            Issue.record("\(reply)")
            return
        }
        _ = try await plain.call(.subscribe(SubscribeRequest(channel: "room:quotes")))
        try await publish(node, "room:quotes", tickers: ["AAPL", "MSFT", "AAPL", "GOOG"])
        #expect(try await BrokerTests.publications(filtered, count: 2).map(\.data) == [Payload(["n": 0]), Payload(["n": 2])])
        #expect(try await BrokerTests.publications(plain, count: 4).count == 4)

        // Recovery sends the matching ones it missed.
        _ = try await filtered.call(.unsubscribe(channel: "room:quotes"))
        try await publish(node, "room:quotes", tickers: ["MSFT", "AAPL"])
        request.recover = true
        request.epoch = subscribed.epoch
        request.offset = 4
        let again = try await filtered.call(.subscribe(request))
        guard case let .subscribe(recovered) = again.body else {
            Issue.record("\(again)")
            return
        }
        #expect(recovered.recovered && recovered.publications.map(\.offset) == [6])
    }

    @Test func badFiltersAreRefusedAndTheConnectionGoesOn() async throws {
        let node = try await filteringNode()
        var client = try await TestClient.connected(node, user: "cy")
        var notAllowed = SubscribeRequest(channel: "plain-quotes")
        notAllowed.tagsFilter = Self.apple
        var malformed = SubscribeRequest(channel: "room:a")
        malformed.tagsFilter = TagsFilter(key: "ticker", cmp: "eq")
        var withDelta = SubscribeRequest(channel: "room:b", delta: "fossil")
        withDelta.tagsFilter = Self.apple
        for (request, message) in [
            (notAllowed, "bad request: subscribe.tf: the default namespace does not allow tags filters (allow_tags_filter)"),
            (malformed, "bad request: subscribe.tf: eq needs val"), (withDelta, "bad request: subscribe.tf cannot be used with delta"),
        ] {
            let reply = try await client.call(.subscribe(request))
            guard case let .error(error) = reply.body else {
                Issue.record("\(reply)")
                continue
            }
            #expect(error.code == 107 && error.message == message, "\(error.message)")
        }
        #expect(client.session.subscriptions.isEmpty)
        #expect(try await client.call(.ping).body == .ping)
    }
}
