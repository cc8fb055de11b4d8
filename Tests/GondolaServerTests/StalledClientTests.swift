import Foundation
import GondolaGeo
import GondolaHub
import GondolaProtocol
import GondolaTestSupport
import Testing

/// A client that stops reading: its queue overflows (3008) and, since not even
/// the close frame can reach it, its connection is dropped; everyone else keeps
/// receiving every publication. The same with permessage-deflate, whose frames go
/// through the compressing writer.
@Suite struct StalledClientTests {
    @Test(arguments: [false, true])
    func aClientThatStopsReadingIsDroppedAndOthersKeepReceiving(compressed: Bool) async throws {
        var configuration = RunningServer.configuration()
        configuration.hub.clientQueueMaxBytes = 65_536
        configuration.webSocketCompression = true
        let server = try await RunningServer.start(configuration)
        let node = server.server.node
        let healthy = try await server.client("healthy", compressed: compressed)
        _ = try await healthy.subscribe("room:big")
        let token = try await server.token("silent")
        // A client with a tiny receive buffer that sends its commands once and never reads.
        let silent = try RawWebSocket(
            port: server.port, headers: compressed ? ["Sec-WebSocket-Extensions: permessage-deflate"] : [],
            receiveBuffer: 4096)
        try silent.sendText(Array((#"{"id":1,"connect":{"token":"\#(token)"}}"# + "\n" + #"{"id":2,"subscribe":{"channel":"room:big"}}"#).utf8))
        try await eventually("both subscribers on room:big") { node.channels()["room:big"] == 2 }

        try await Self.floodUntilTheSilentOneIsDropped(node: node, healthy: healthy)
        withExtendedLifetime(silent) {}
    }

    /// Publishes 8 MiB to `room:big`, paced by `healthy`, and checks that the one other
    /// subscriber, which reads nothing, is dropped while `healthy` gets every publication and
    /// is still served.
    static func floodUntilTheSilentOneIsDropped(node: Node, healthy: LiveClient) async throws {
        // 8 MiB for each subscriber: more than the silent client's queue and socket buffers hold
        // (random text, which deflate cannot shrink much; seeded, the bytes are the same every run).
        var random = SeededRandom(seed: 33)
        let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        for index in 0..<2000 {
            let payload = Payload(.string(String((0..<4000).map { _ in letters.randomElement(using: &random)! })))
            _ = try await node.publish(channel: "room:big", data: payload)
            // Paced by the healthy client (at most 8 publications ahead of it), whose queue has the same bound.
            try await eventually("the healthy client within 8 publications", within: .seconds(20), every: .milliseconds(1)) {
                healthy.publications("room:big").count >= index - 8
            }
        }
        // The silent client is dropped: it leaves the channel.
        try await eventually("the silent client dropped", within: .seconds(20)) { node.channels()["room:big"] == 1 }
        // The healthy client got every publication, in order, and is still served.
        try await eventually("all 2000 publications", within: .seconds(20)) { healthy.publications("room:big").count == 2000 }
        #expect(try await healthy.rpc("server.time")["ts"] != nil)
    }
}
