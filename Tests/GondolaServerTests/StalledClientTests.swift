import Foundation
import GondolaHub
import GondolaProtocol
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A client that stops reading: its queue overflows (3008) and, since not even
/// the close frame can reach it, its connection is dropped; everyone else keeps
/// receiving every publication.
@Suite struct StalledClientTests {
    /// A WebSocket client on a raw socket with a tiny receive buffer that sends
    /// its commands once and never reads.
    final class SilentClient {
        let socket: Int32

        init(port: Int, commands: String) throws {
            socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var size: Int32 = 4096
            setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else { throw HarnessError("connect failed: \(errno)") }
            let handshake = "GET /connection/websocket HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
            try write(Array(handshake.utf8))
            try write(Self.maskedTextFrame(Array(commands.utf8)))
        }

        deinit { close(socket) }

        func write(_ bytes: [UInt8]) throws {
            let sent = bytes.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, 0) }
            guard sent == bytes.count else { throw HarnessError("send failed: \(errno)") }
        }

        /// A client frame: FIN + text, masked with a zero key (the payload stays readable).
        static func maskedTextFrame(_ payload: [UInt8]) -> [UInt8] {
            var frame: [UInt8] = [0x81]
            if payload.count < 126 {
                frame.append(0x80 | UInt8(payload.count))
            } else {
                frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
            }
            return frame + [0, 0, 0, 0] + payload
        }
    }

    @Test func aClientThatStopsReadingIsDroppedAndOthersKeepReceiving() async throws {
        var configuration = RunningServer.configuration()
        configuration.hub.clientQueueMaxBytes = 65_536
        let server = try await RunningServer.start(configuration)
        let node = server.server.node
        let healthy = try await server.client("healthy")
        _ = try await healthy.subscribe("room:big")
        let token = try await server.token("silent")
        let silent = try SilentClient(port: server.port, commands: #"{"id":1,"connect":{"token":"\#(token)"}}"# + "\n"
                                      + #"{"id":2,"subscribe":{"channel":"room:big"}}"#)
        let deadline = ContinuousClock.now + .seconds(10)
        while node.channels()["room:big"] != 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(node.channels()["room:big"] == 2)

        // 8 MiB for each subscriber: more than the silent client's queue and socket buffers hold.
        let payload = RawJSON(.string(String(repeating: "x", count: 4000)))
        for index in 0..<2000 {
            _ = try await node.publish(channel: "room:big", data: payload)
            // Paced by the healthy client (at most 8 publications ahead of it), whose queue has the same bound.
            while healthy.publications("room:big").count < index - 8, ContinuousClock.now < deadline + .seconds(20) {
                try await Task.sleep(for: .milliseconds(1))
            }
        }
        // The silent client is dropped: it leaves the channel.
        while node.channels()["room:big"] != 1, ContinuousClock.now < deadline + .seconds(10) { try await Task.sleep(for: .milliseconds(50)) }
        #expect(node.channels()["room:big"] == 1)
        // The healthy client got every publication, in order, and is still served.
        while healthy.publications("room:big").count < 2000, ContinuousClock.now < deadline + .seconds(20) { try await Task.sleep(for: .milliseconds(50)) }
        #expect(healthy.publications("room:big").count == 2000)
        #expect(try await healthy.rpc("server.time")["ts"] != nil)
        withExtendedLifetime(silent) {}
    }
}
