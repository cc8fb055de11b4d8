import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import GondolaProtocol
import Testing

@testable import GondolaServer

/// The GRPC server API over a real socket with the client generated from the same
/// `api.proto`: payloads byte for byte both ways, errors in the response as the HTTP API
/// answers them, the key checked before anything runs.
@Suite struct GRPCServerAPITests {
    typealias API = Centrifugal_Centrifugo_Api_CentrifugoApi

    func withAPI(_ body: (API.Client<HTTP2ClientTransport.Posix>, RunningServer) async throws -> Void) async throws {
        var configuration = RunningServer.configuration()
        configuration.grpcAPIListen = ("127.0.0.1", 0)
        let ports = AsyncStream.makeStream(of: Int.self)
        let server = try await RunningServer.start(configuration, onGRPCServerRunning: { ports.continuation.yield($0) })
        var iterator = ports.stream.makeAsyncIterator()
        guard let port = await iterator.next() else { throw HarnessError("the GRPC listener did not start") }
        let transport = try HTTP2ClientTransport.Posix(target: .ipv4(address: "127.0.0.1", port: port), transportSecurity: .plaintext)
        try await withGRPCClient(transport: transport) { client in
            try await body(API.Client(wrapping: client), server)
        }
        try await server.stop()
    }

    static let key: Metadata = ["authorization": "apikey \(RunningServer.apiKey)"]

    @Test func publicationsKeepTheirBytesAndErrorsAreAnswered() async throws {
        try await withAPI { api, _ in
            let spelled = Data(#"{"n": 1.50, "name": "Zoë"}"#.utf8)
            var publish = Centrifugal_Centrifugo_Api_PublishRequest()
            publish.channel = "room:grpc"
            publish.data = spelled
            publish.tags = ["kind": "lift"]
            let first = try await api.publish(publish, metadata: Self.key)
            #expect(!first.hasError && first.result.offset == 1)
            publish.data = Data([0, 0xFF, 0x0A])
            #expect(try await api.publish(publish, metadata: Self.key).result.offset == 2)
            var history = Centrifugal_Centrifugo_Api_HistoryRequest()
            history.channel = "room:grpc"
            history.limit = -1
            let stored = try await api.history(history, metadata: Self.key).result.publications
            #expect(stored.map(\.data) == [spelled, Data([0, 0xFF, 0x0A])])
            #expect(stored.first?.tags == ["kind": "lift"])

            publish.channel = ""
            let refused = try await api.publish(publish, metadata: Self.key)
            #expect(refused.error.code == 107 && refused.error.message.contains("channel"))
        }
    }

    @Test func aCallWithoutTheKeyIsUnauthenticated() async throws {
        try await withAPI { api, _ in
            let attempts: [Metadata] = [[:], ["authorization": "apikey wrong"], ["authorization": "\(RunningServer.apiKey)"]]
            for metadata in attempts {
                do {
                    _ = try await api.info(Centrifugal_Centrifugo_Api_InfoRequest(), metadata: metadata)
                    Issue.record("answered without the key: \(metadata)")
                } catch let error as RPCError {
                    #expect(error.code == .unauthenticated)
                }
            }
            #expect(try await api.info(Centrifugal_Centrifugo_Api_InfoRequest(), metadata: Self.key).result.nodes.count == 1)
        }
    }

    @Test func requestPayloadsBecomeTheJSONAPIsAndAnswersTheirBytes() throws {
        let request = try JSONParser.parse(Array(#"{"commands":[{"publish":{"data":"eyJhIjogMX0=","info":"AP8="}}]}"#.utf8))
        #expect(
            GRPCPayloads.request(request).bytes
                == Array(#"{"commands":[{"publish":{"data":{"a": 1},"b64info":"AP8="}}]}"#.utf8))
        let answer = JSON.object([("publications", .array([["data": .raw(try RawJSON(validating: Array(#"{"a": 1}"#.utf8)))]]))])
        #expect(GRPCPayloads.answer(answer).bytes == Array(#"{"publications":[{"data":"eyJhIjogMX0="}]}"#.utf8))
    }
}
