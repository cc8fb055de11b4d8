import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import GondolaProtocol
import GondolaTestSupport
import Testing

@testable import GondolaServer

/// The unidirectional GRPC stream over a real socket, with a client that sends a Protobuf
/// `ConnectRequest` and reads `Push` messages as Centrifugo's `unistream.proto` defines them.
@Suite struct UniGRPCTests {
    @Test func aStreamConnectsFromItsRequestAndCarriesPushesUntilTheServerEndsIt() async throws {
        var configuration = HTTPTransportTests.configuration()
        configuration.uniGRPCListen = ("127.0.0.1", 0)
        let ports = AsyncStream.makeStream(of: Int.self)
        let server = try await RunningServer.start(configuration, onUniGRPCServerRunning: { ports.continuation.yield($0) })
        var iterator = ports.stream.makeAsyncIterator()
        guard let port = await iterator.next() else { throw HarnessError("the unidirectional GRPC listener did not start") }
        let personal = configuration.hub.personalChannel(of: "hal")
        let request = ConnectRequest(token: try await server.token("hal")).protobufBytes
        let transport = try HTTP2ClientTransport.Posix(target: .ipv4(address: "127.0.0.1", port: port), transportSecurity: .plaintext)
        try await withGRPCClient(transport: transport) { client in
            let kinds = try await client.serverStreaming(
                request: ClientRequest(message: request), descriptor: UniGRPCService.method, serializer: RawBytes(), deserializer: RawBytes(),
                options: .defaults
            ) { response in
                var kinds: [String] = []
                for try await bytes in response.messages {
                    let push = try Push(protobufPush: bytes)
                    switch push.body {
                    case let .connect(result):
                        kinds.append("connect")
                        #expect(result.subs[personal] != nil && !result.pong)
                        try await eventually("subscribed") { server.server.node.channels()[personal] == 1 }
                        _ = try await server.post("/api/publish", body: #"{"channel":"\#(personal)","data":{"n": 1.50}}"#)
                    case let .publication(publication):
                        kinds.append("pub")
                        #expect(publication.data.bytes == Array(#"{"n": 1.50}"#.utf8))
                        try await server.server.node.disconnect(user: "hal")
                    case let .disconnect(code):
                        kinds.append("disconnect \(code.code)")
                    default:
                        kinds.append("other")
                    }
                }
                return kinds
            }
            #expect(kinds == ["connect", "pub", "disconnect 3503"])

            // A request that is not a ConnectRequest is refused; a bad token ends with a disconnect push.
            do {
                try await client.serverStreaming(
                    request: ClientRequest(message: [0xFF, 0xFF]), descriptor: UniGRPCService.method, serializer: RawBytes(),
                    deserializer: RawBytes(), options: .defaults
                ) { response in for try await _ in response.messages {} }
                Issue.record("a broken ConnectRequest was served")
            } catch let error as RPCError {
                #expect(error.code == .invalidArgument)
            }
            let refused = try await client.serverStreaming(
                request: ClientRequest(message: ConnectRequest(token: "bad").protobufBytes), descriptor: UniGRPCService.method,
                serializer: RawBytes(), deserializer: RawBytes(), options: .defaults
            ) { response in
                var codes: [UInt16] = []
                for try await bytes in response.messages {
                    if case let .disconnect(code) = try Push(protobufPush: bytes).body { codes.append(code.code) }
                }
                return codes
            }
            #expect(refused == [3500])
        }
        try await server.stop()
    }
}
