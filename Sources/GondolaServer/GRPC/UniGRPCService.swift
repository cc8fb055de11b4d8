import GRPCCore
@_spi(Engine) import GondolaHub
import GondolaProtocol

/// Centrifugo's unidirectional GRPC stream, `centrifugal.centrifugo.unistream.CentrifugoUniStream/Consume`
/// on `uni_grpc_listen`: the request is a Protobuf `ConnectRequest`, the answer a stream of
/// `Push` messages — the connect push first, then publications, joins and leaves, pings (empty
/// pushes, no pong expected) and, when the server ends it, a disconnect push. Centrifugo's
/// `unistream.proto` numbers both messages as the client protocol does, so the session speaks
/// Protobuf and each of its messages goes out as the `Push` it carries. A new stream past the
/// connection limits is refused with UNAVAILABLE; a request that is not a `ConnectRequest`
/// with INVALID_ARGUMENT. A stream whose client has not taken a write within
/// `HTTPTransports.writeTimeout` is ended, as an HTTP stream's connection is dropped.
struct UniGRPCService: RegistrableRPCService {
    static let method = MethodDescriptor(fullyQualifiedService: "centrifugal.centrifugo.unistream.CentrifugoUniStream", method: "Consume")

    let node: Node
    let admission: ConnectionAdmission
    let connections: OpenConnections

    func registerMethods<Transport: ServerTransport>(with router: inout GRPCCore.RPCRouter<Transport>) {
        router.registerHandler(forMethod: Self.method, deserializer: RawBytes(), serializer: RawBytes()) { request, _ in
            var messages = request.messages.makeAsyncIterator()
            guard let bytes = try await messages.next() else { throw RPCError(code: .invalidArgument, message: "no ConnectRequest") }
            let connect: ConnectRequest
            do {
                connect = try ConnectRequest(protobuf: bytes)
            } catch {
                throw RPCError(code: .invalidArgument, message: "bad ConnectRequest: \(error)")
            }
            if let refusal = admission.refusal(origin: nil, host: nil, open: connections.value) {
                throw RPCError(code: .unavailable, message: refusal.message)
            }
            return StreamingServerResponse(metadata: [:]) { writer in
                try await stream(connect, to: writer)
                return [:]
            }
        }
    }

    /// Connects a session with `connect` and writes what it sends until it ends.
    private func stream(_ connect: ConnectRequest, to writer: RPCWriter<[UInt8]>) async throws {
        let session = node.accept(encoding: .protobuf, transport: .unidirectional)
        connections.opened()
        defer {
            session.transportClosed()
            connections.closed()
        }
        try await withTaskCancellationHandler {
            await session.connect(unidirectional: connect)
            while let item = await session.queue.next() {
                switch item {
                case let .frame(frame):
                    for message in try ProtocolEncoding.protobuf.serverMessages(in: frame) {
                        try await write(Self.push(message), to: writer)
                    }
                case let .close(code):
                    guard code != .transportClosed else { return }
                    try await write(Push(channel: "", .disconnect(code)).protobufPushBytes, to: writer)
                    return
                }
            }
        } onCancel: {
            session.transportClosed()
        }
    }

    /// A session's message as the stream sends it: a push as it is, a ping as an empty push.
    private static func push(_ message: ServerMessage) -> [UInt8] {
        switch message {
        case let .push(push): push.protobufPushBytes
        case .ping, .reply: []
        }
    }

    /// Writes `bytes`, giving up (and so ending the stream) when the client has not taken them in time.
    private func write(_ bytes: [UInt8], to writer: RPCWriter<[UInt8]>) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await writer.write(bytes) }
            group.addTask {
                try await Task.sleep(for: .nanoseconds(HTTPTransports.writeTimeout.nanoseconds))
                throw RPCError(code: .deadlineExceeded, message: "the client took no message for \(HTTPTransports.writeTimeout)")
            }
            try await group.next()
            group.cancelAll()
        }
    }
}

/// A message passed as its bytes: the Protobuf a session already encoded, or a request read by GondolaProtocol.
struct RawBytes: MessageSerializer, MessageDeserializer {
    func serialize<Bytes: GRPCContiguousBytes>(_ message: [UInt8]) throws -> Bytes { Bytes(message) }

    func deserialize<Bytes: GRPCContiguousBytes>(_ serializedMessageBytes: Bytes) throws -> [UInt8] {
        serializedMessageBytes.withUnsafeBytes { Array($0) }
    }
}
