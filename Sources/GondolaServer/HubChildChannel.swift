import GondolaProtocol
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket
import ServiceLifecycle

/// Each accepted connection of the server's one port: HTTP/1.1 served by Hummingbird's
/// router, or, for an upgrade request to the WebSocket endpoint, a WebSocket served by
/// NIO channel handlers alone (NIO's frame decoder and encoder, then the session's
/// `WebSocketSessionHandler` and `ChannelFrameWriter`). Hummingbird's task for a
/// WebSocket connection ends once the upgrade is done, so an open WebSocket holds no task.
///
/// An upgrade request to any other path is answered 404 with a JSON error, one the
/// endpoint's admission refuses (origin, connection limits) 403 or 503. A request that
/// asks to upgrade after an earlier request on the same connection (which NIO's upgrade
/// cannot see) is redirected to the same address with `Connection: close`, so that the
/// client retries on a new connection, as hummingbird-websocket does. A request to upgrade to
/// anything else (`h2c`) is answered over HTTP/1.1 (`UnservedUpgradeFilter`). At a graceful
/// shutdown a connection still waiting for its first request is closed.
struct HubChildChannel: ServerChildChannel, HTTPChannelHandler {
    /// What a connection became once its first request was read.
    enum Outcome: Sendable {
        case webSocket
        case http(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        case refusedUpgrade(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, ConnectionAdmission.Refusal)
    }

    struct Value: ServerChildChannelValue {
        let outcome: EventLoopFuture<Outcome>
        let channel: any Channel
    }

    let responder: HTTPChannelHandler.Responder
    let endpoint: WebSocketEndpoint
    /// Whether the connection came through TLS, which the requests' scheme says.
    let secure: Bool

    init(responder: @escaping HTTPChannelHandler.Responder, endpoint: WebSocketEndpoint, secure: Bool = false) {
        self.responder = { request, writer, channel in
            guard request.headers[.upgrade]?.lowercased() == "websocket" else {
                return try await responder(request, writer, channel)
            }
            let target = request.uri.query.map { "\(request.uri.path)?\($0)" } ?? request.uri.path
            try await writer.writeResponse(HTTPResponse(status: .temporaryRedirect, headerFields: [.connection: "close", .location: target]))
            throw ChannelError.outputClosed
        }
        self.endpoint = endpoint
        self.secure = secure
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let handshake = NIOLoopBoundBox<WebSocketEndpoint.Handshake?>(nil, eventLoop: channel.eventLoop)
            let refusal = NIOLoopBoundBox<ConnectionAdmission.Refusal?>(nil, eventLoop: channel.eventLoop)
            let upgrader = NIOTypedWebSocketServerUpgrader<Outcome>(
                maxFrameSize: endpoint.maxWebSocketFrame,
                shouldUpgrade: { [endpoint] channel, head in
                    endpoint.handshake(for: head, on: channel).map { outcome in
                        switch outcome {
                        case let .success(accepted):
                            handshake.value = accepted
                            return accepted.responseHeaders
                        case let .failure(refused):
                            refusal.value = refused
                            return nil
                        }
                    }
                },
                upgradePipelineHandler: { [endpoint] channel, _ in
                    channel.eventLoop.makeCompletedFuture {
                        guard let accepted = handshake.value else { throw ChannelError.inappropriateOperationForState }
                        try endpoint.serve(accepted, on: channel)
                        return .webSocket
                    }
                })
            let upgrade = NIOTypedHTTPServerUpgradeConfiguration<Outcome>(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: secure))
                        try channel.pipeline.syncOperations.addHandler(HTTPConnectionStateHandler(logger: logger))
                        let http = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                            wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                        return refusal.value.map { .refusedUpgrade(http, $0) } ?? .http(http)
                    }
                })
            var configuration = NIOUpgradableHTTPServerPipelineConfiguration<Outcome>(upgradeConfiguration: upgrade)
            configuration.enablePipelining = false  // NIOAsyncChannel reads one request after the other
            configuration.enableErrorHandling = false  // Hummingbird answers malformed requests
            configuration.enableResponseHeaderValidation = false  // HTTPTypes validates the fields already
            let outcome = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(configuration: configuration)
            let upgradeHandler = try channel.pipeline.syncOperations.handler(type: NIOTypedHTTPServerUpgradeHandler<Outcome>.self)
            try channel.pipeline.syncOperations.addHandler(UnservedUpgradeFilter(), position: .before(upgradeHandler))
            return Value(outcome: outcome, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            // A connection that has not sent its first request (a browser opens spare ones
            // ahead of need) is closed at a graceful shutdown rather than waited for.
            let outcome = try await withGracefulShutdownHandler {
                try await value.outcome.get()
            } onGracefulShutdown: {
                value.channel.close(promise: nil)
            }
            switch outcome {
            case .webSocket:
                return
            case let .http(http):
                await handleHTTP(asyncChannel: http, logger: logger)
            case let .refusedUpgrade(http, refusal):
                try await refuse(http, refusal)
            }
        } catch {
            logger.debug("connection ended before its first request was served", metadata: ["error": "\(error)"])
        }
    }

    private func refuse(_ http: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, _ refusal: ConnectionAdmission.Refusal) async throws {
        try await http.executeThenClose { _, outbound in
            let error: JSON = ["error": ["code": .int(Int64(refusal.code)), "message": .string(refusal.message)]]
            let body = ByteBuffer(bytes: error.bytes)
            let head = HTTPResponse(
                status: .init(code: Int(refusal.status.code)),
                headerFields: [
                    .connection: "close", .contentType: "application/json", .contentLength: "\(body.readableBytes)",
                ])
            try await outbound.write(contentsOf: [.head(head), .body(body), .end(nil)])
        }
    }
}
